"""chainrule_course: the course built on the chainrule engine.

The engine (``chainrule``) ships alone, as ``pip install chainrule`` brings it: a reader
who wants an autograd engine gets one, and nothing of the course. What only the course
needs lives here, in rooms built on the engine, each a subpackage that says what it is
built on (``tests/repo/test_layers.py`` checks that no arrow points from the engine up):

* ``chainrule_course.grading`` -- grading by construction: the answer runner, its contract, the grader
* ``chainrule_course.charts`` -- the book's charts as inline SVG: matplotlib, or plain Python in the page
* ``chainrule_course.exercises`` -- the exercises' checks, which run an answer as the grader does
* ``chainrule_course.explore`` -- explorables: recorded runs of the engine that the reader steps through
* ``chainrule_course.drills`` -- drills: questions on fresh random graphs, answered by the engine
* ``chainrule_course.pages`` -- numbers glued into the prose, and the pages' Live code

It is its own distribution (``course/pyproject.toml``), built from the same checkout as the
engine and pinned to the engine's version: a student's notebook, the autograder and the
web page's Python install both wheels, a reader of the engine only the one.
"""

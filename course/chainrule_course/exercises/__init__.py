"""Exercises: the checks of the chapters' exercises, which run a notebook's answer as the grader does.

Built on: the engine, chainrule_course.grading (its contract: an answer run apart, as the grader runs it).

The modules, in order: each imports only the engine and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``answers`` -- checking an answer: compare, name the entry and the known mistake, never crash
* ``calling`` -- calling a student's function safely: apart, on copies, under a time limit, every failure explained
* ``scalar`` -- the checks of the first scalar chapters (1.2, 2.2, 3.2), whose answers are functions of their inputs
* ``tape_checks`` -- the checks on an engine's record written as a tape: its backward pass, where that pass stops
* ``array_checks`` -- the checks of the array chapters (5 to 9), with numpy
* ``gradient_checks`` -- the checks of trusting and shaping gradients (5.6, 7.2, 7.3, 8.1, 10.2, 10.3), with numpy
* ``layer_checks`` -- the checks of the layers after the MLP (12.1, 12.2, 13.1), with numpy
* ``row_checks`` -- the check of a new row of the engine's rule table (12.4), with numpy and the engine's rules
* ``capstone_checks`` -- the check of a whole network's backward pass by hand (14.1), with numpy
* ``feedback`` -- what a check cell imports, without numpy: ``scalar``'s checks and the helpers; the other
  modules' checks load when first asked for

A chapter's check cell reads ``from chainrule_course.exercises import feedback``. This file imports
nothing.
"""

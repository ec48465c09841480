"""The repository's tools, run from its root with ``python -m`` (the Makefile's commands).

* ``tools.book`` -- the book: its model, the MyST reader, the notebook editions, the student
  site, the PDF, the figures, the engine's and the course's wheels, the build itself
* ``tools.grader`` -- the assignments and the grading venv, built on ``tools.book``
* ``tools.progress`` -- ``make progress``: the class's practice records in one page, built on ``tools.book``

None ships in a wheel; each is built on ``chainrule`` and ``chainrule_course``.
"""

"""The grader's tools, run as ``python -m tools.grader.<module>`` from the repository's root.

* ``assignments`` -- ``make assignments``: each chapter's checked exercises as an otter-grader
  assignment (handout, solution, autograder zip)
* ``autograder_zip`` -- the zip otter assign writes, made to grade as ``make grade`` does: the locked
  environment, what only the grader reads, the reference solution graded first
* ``grading_env`` -- ``make grade``'s venv, built from an autograder zip's own requirements;
  the standard library only, so that any python3 runs it
"""

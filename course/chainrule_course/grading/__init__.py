"""Grading: one package, organised by where its code runs and whom it trusts.

Built on: the engine (it uses none of it: an answer is judged as data), and otter-grader's public plugin
interface.

The modules, in order: each imports only the engine and modules above it in this list
(``tests/repo/test_layers.py`` checks it). Three trust zones:

**The untrusted side** -- the student's code runs here, and nothing else of ours:

* ``wire`` -- the values sent between the grader and an answer's process, as JSON: encoded and decoded
  as data, never an object of the answer's (standard library only; the runner loads it from beside
  itself)
* ``runner`` -- the answer runner: one answer cell run alone, only the allowed modules importable,
  its results encoded as data with ``wire`` (standard library only; started as
  ``python -I -S runner.py``, with ``wire.py`` beside it)
* ``observing`` -- what an answer does while it is called: the ways to differentiate without a
  derivation, seen by behaviour (standard library only; the runner runs it from its text)

**The contract** -- what the notebook's check and the grader share, so that a notebook "right" is
a graded "right":

* ``cells`` -- reading a cell as IPython does: which of its statements are an answer, and what of the
  other cells it carries
* ``apart`` -- running an answer apart (a process, or a namespace where there are none): which
  code runs, which modules exist, its results decoded, its refusals and time limits as messages
* ``review`` -- what puts a graded notebook up for review (in its code, or seen while it runs), in the
  words the grader writes and the notebook's check shows
* ``contract`` -- the context a check runs in, which the grader sets: the rule, the quantity scored,
  the secret its hidden inputs are drawn with
* ``scoring`` -- grades by construction: choose the inputs, run each answer apart, score in the
  grader's process

**The grader** -- trusted, and never in a process the student's code runs in:

* ``launch`` -- the first program an answer's process runs, as the grader's user: its limits, cgroup
  and user set, then the answer's command (standard library only; started as ``python -I -S launch.py``)
* ``sandbox`` -- the bubblewrap sandbox an answer's process runs in, as a user of its submission's, and cgroups
* ``permissions`` -- the sandbox where bubblewrap cannot run (Gradescope's container): a user of
  its own, and site-packages, tests and sources readable by root alone while answers run
* ``reports`` -- what grading writes: grades.csv, feedback, summary.html, the written work
* ``grade`` -- ``make grade`` (``python -m chainrule_course.grading.grade``): a folder of notebooks graded
* ``uploads`` -- what a student uploads to Gradescope, made into the one notebook otter grades (or
  refused, saying what to upload) before otter starts
* ``otter_plugin`` -- the otter-grader plugin that makes ``otter run`` (Gradescope) grade with ``scoring``,
  in one of those two sandboxes; otter's kernel gets a blank notebook, alone in its folder

The exercises' checks (:mod:`chainrule_course.exercises`) use ``apart`` to run a notebook's answer the
way the grader does. This file imports nothing.
"""

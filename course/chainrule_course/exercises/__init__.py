"""Exercises: the checks of the chapters' exercises, which run a notebook's answer as the grader does.

Built on: the engine, chainrule_course.grading (its contract: an answer run apart, as the grader runs it).

The modules, in order: each imports only the engine and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``answers`` -- checking an answer: compare, name the entry and the known mistake, never crash
* ``mistakes`` -- mistakes generated from a check's reference derivation, named only when the answer
  makes one on every problem tried
* ``notebook`` -- the notebook a check runs in, read as the grader reads it: the cell graded for an
  answer, as typed, and where it is
* ``verdicts`` -- a check cell's one verdict, and the check-everything cell's summary of the graded cells
* ``calling`` -- calling a student's function safely: apart, on copies, under a time limit, every failure explained
* ``graph_checks`` -- a search's order on a graph, and a topological order (the graph chapter), without numpy
* ``scalar_checks`` -- answers that are functions of a few numbers or a small graph (intro, graph, backward,
  the forward-mode rule), without numpy
* ``tape_checks`` -- an engine's record written as a tape: its backward pass (engine), where that pass
  first makes a number that is not finite (profiling), without numpy
* ``count_checks`` -- counts worked out by hand: the MLP's memory, the longest chain checkpointing
  reverses, without numpy
* ``array_checks`` -- the array chapters' checks: the d2l network, VJPs, clipping, with numpy
* ``gradient_checks`` -- trusting and shaping gradients: a numeric gradient, a Hessian-vector product,
  layer normalisation, a detached norm, a stable softplus, with numpy
* ``layer_checks`` -- the layers after the MLP: a convolution, an embedding, two steps of a recurrent
  cell, with numpy
* ``row_checks`` -- a new row of the engine's rule table, with numpy and the engine's rules
* ``capstone_checks`` -- a whole network's backward pass by hand, with numpy
* ``feedback`` -- what a check cell imports, without numpy: the checks above ``array_checks`` and the
  helpers; the other modules' checks load when first asked for

Modules name exercises by chapter or by label, never by number: the numbers are the book's.

A chapter's check cell reads ``from chainrule_course.exercises import feedback``. This file imports
nothing.
"""

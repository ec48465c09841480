"""Drills: practice without end, on fresh random graphs, answered by the engine itself.

A drill asks one question about a small computational graph drawn at random from a seed:
the same seed gives the same graph, so a reader can share one. The graph is built as a
:class:`chainrule.Value` expression and every answer comes from the engine: the depth-first
search of :func:`chainrule.graph.topological_order`, the forward values, the local
gradients the operations record and the ``.grad`` that :meth:`chainrule.Value.backward`
stores. Nothing is computed a second time in JavaScript: the page runs this package in its
own Python (Pyodide) and only shows what it returns.

A wrong answer gets a named mistake where one fits (the product instead of the sum at a
node that feeds two others, a contribution missing, the local gradient for the global,
the order reversed, a node before one of its inputs), and each question has hints
before its answer.

Built on: the engine, chainrule.figures, chainrule_course.explore (its widgets show the steps through a graph).

The modules, in order: each imports only the rooms above and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``graphs`` -- random graphs from a seed, by level: trees, fan-out, shared subexpressions, tanh/exp/log/division
* ``reading`` -- what a reader types, read as a number (``-.5``, ``1/3``, ``2e-3``) or a list of names
* ``kinds`` -- the seven kinds of question, each with its answer, hints and named mistakes
* ``page`` -- the calls the web page makes: :func:`~chainrule_course.drills.page.ask`, ``check`` and ``steps``
"""

from .graphs import LEVELS, Graph, make_graph
from .kinds import KINDS, Question, question
from .page import ask, check, steps

__all__ = ["KINDS", "LEVELS", "Graph", "Question", "ask", "check", "make_graph", "question", "steps"]

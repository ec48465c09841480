"""Drills: practice without end, on fresh instances from a seed, answered by the engine itself.

A drill asks one question about a small instance drawn at random from a seed: the same
seed gives the same question, so a reader can share one. The graph and backward chapters
ask about a computational graph built as a :class:`chainrule.Value` expression; later
chapters about small matrices, logits or dual numbers. Every answer comes from the engine:
the depth-first search of :func:`chainrule.graph.topological_order`, the forward values,
the local gradients the operations record, the ``.grad`` that
:meth:`chainrule.Value.backward` stores, and the tangents of :class:`chainrule.forward.Dual`.
Nothing is computed a second time in JavaScript: the page runs this package in its own
Python (Pyodide, which has no numpy) and only shows what it returns.

A wrong answer gets a named mistake where one fits (the product instead of the sum at a
node that feeds two others, a transpose left out, a broadcast not summed, the 1/n of a
mean left out), and each question has hints before its answer.

Built on: the engine, chainrule.figures, chainrule_course.explore (widgets), chainrule_course.exercises (mistakes).

From ``chainrule_course.exercises`` the drills take only ``mistakes``, the generator of named mistakes
from a derivation that the checks use too, which imports nothing of the course.

The modules, in order: each imports only the rooms above and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``graphs`` -- random graphs from a seed, by level: trees, fan-out, shared subexpressions, tanh/exp/log/division
* ``reading`` -- what a reader types, read as a number (``-.5``, ``1/3``, ``2e-3``) or a list of names
* ``registry`` -- the kinds as their builders declare them (``@drill``): name, chapter, title, levels, form
* ``graph_kinds`` -- the graph and backward chapters' seven kinds, each with its answer, hints and named mistakes
* ``problems`` -- the frame of the later kinds: an instance in words, its answer and its named mistakes
* ``neurons`` -- the introduction's: a neuron's gradient, with and without its tanh, and a nudge's change
* ``backward_calls`` -- the engine chapter's: backward() called twice, and called on an inner node
* ``matrices`` -- the tensors chapter's: an entry of a matrix product's gradient, the sum undoing a broadcast
* ``losses`` -- the network chapter's: cross-entropy's gradient at the logits, a gradient with weight decay
* ``tangents`` -- the forward chapter's: a node's tangent in a direction, an operation on dual numbers
* ``deep`` -- the depth chapter's: the factor a gradient gains through layers, batch norm's backward pass
* ``costs`` -- the cost chapter's: a linear layer's flops, binomial checkpointing's forward steps
* ``programs`` -- the frameworks and profiling chapters': detach, backward(gradient=v), no zero_grad, overflow
* ``windows`` -- the layers chapter's: a convolution's gradients, max pooling's routing, an embedding's rows
* ``recurrences`` -- the sequences chapter's: backpropagation through time, an entry of softmax's Jacobian
* ``network`` -- the capstone's: the output bias's gradient, the gradient before the tanh, on a batch of two
* ``catalog`` -- every kind in the book's order (the registry, read by module), with its chapter, levels and form
* ``schedule`` -- Next for you: the kind, level and instance a reader's record calls for
* ``page`` -- the calls the web page makes: :func:`~chainrule_course.drills.page.ask`, ``check`` and ``steps``
"""

from .catalog import KINDS, Kind, catalog, question
from .graph_kinds import Question
from .graphs import LEVELS, Graph, make_graph
from .page import ask, check, steps
from .problems import Problem

__all__ = [
    "KINDS", "LEVELS", "Graph", "Kind", "Problem", "Question", "ask", "catalog", "check", "make_graph",
    "question", "steps",
]  # fmt: skip

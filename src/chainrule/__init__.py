"""chainrule: a small autograd engine for learning backpropagation.

The modules, in order: each imports only modules above it in this list
(``tests/test_layers.py`` checks it):

* ``graph``  -- topological order by iterative depth-first search, and the search as data
* ``value``  -- the scalar engine, :class:`Value`
* ``grad_mode`` -- recording on or off (:class:`no_grad`), observers of ops, and the backward phase
* ``node`` -- what the array engine records per op (a Tensor's ``grad_fn``), and the ops' names
* ``backward`` -- the backward pass over the recorded nodes
* ``rules`` -- the one table of ops: forward functions and VJP rules, checkpoint's included
* ``tensor`` -- the array engine: :class:`Tensor`, :func:`apply`, :func:`grad` and :func:`checkpoint`
* ``functional`` -- softmax, cross-entropy, mean squared error, the L2 penalty
* ``cost`` -- flops per op and pass, bytes kept for backward, peak memory
* ``svg`` -- SVG for web pages: an accessible ``<svg>`` element
* ``svgchart`` -- line charts and decision regions as SVG text in plain Python (the page's charts)
* ``dot`` -- DOT text written in Python, rendered to SVG by Graphviz's ``dot``
* ``draw``   -- figures of graphs, search steps and gradient flow
* ``explore`` -- explorables: a recorded run of the engine, as a widget the reader steps through
* ``gradcheck`` -- central-difference gradient checks
* ``nn`` -- Linear, MLP, SGD, the d2l one-hidden-layer model and toy data
* ``plots`` -- line and bar charts as inline SVG (matplotlib when there is, else ``svgchart``)
* ``answers`` -- checking an answer: compare, name the entry and the known mistake, never crash
* ``feedback`` -- the checks of the chapters' exercises, built on ``answers``
* ``grading`` -- grades computed outside the student's kernel: record the answers there, replay the tests here
* ``otter_plugin`` -- the otter-grader plugin that makes ``otter run`` (Gradescope) score with ``grading``
* ``pages`` -- numbers that a chapter's cells compute, glued into its prose
* ``live`` -- runs a page's cells in the browser's Python, for the book's "Live code" mode
"""

# The scalar engine, grad mode, its drawings and its gradient checks need only Python. The
# rest needs numpy (and the charts matplotlib), so it is imported when first used (PEP 562):
# then `from chainrule import Value` (or no_grad) works where numpy is missing, as in the web
# page's Python.
import importlib

from .draw import Figure, GraphTooLargeError, draw_dfs_step, draw_gradient_flow, draw_graph
from .grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradientCheckError, assert_gradients_close, gradcheck
from .graph import DFSStep, depth_first_events, dfs_trace, format_dfs_trace, topological_order
from .value import Value, zero_grad

#: Names imported on first use, and the module each comes from.
_LAZY = {
    "Tensor": "tensor",
    "grad": "tensor",
    "checkpoint": "tensor",
}
_LAZY_MODULES = {"cost", "functional", "nn", "answers", "feedback", "plots", "pages", "explore", "live"}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'chainrule' has no attribute {name!r}")
    globals()[name] = value  # the next use finds it directly
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _LAZY_MODULES)


__all__ = [
    "gradcheck",
    "assert_gradients_close",
    "GradientCheckError",
    "Value",
    "zero_grad",
    "Tensor",
    "grad",
    "no_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "checkpoint",
    "cost",
    "functional",
    "nn",
    "topological_order",
    "depth_first_events",
    "Figure",
    "GraphTooLargeError",
    "DFSStep",
    "draw_graph",
    "dfs_trace",
    "format_dfs_trace",
    "draw_dfs_step",
    "draw_gradient_flow",
]
__version__ = "0.1.0"

"""chainrule: a small autograd engine for learning backpropagation.

This package is the engine. The modules, in order: each imports only modules above it in
this list, and none imports the rooms below (``tests/repo/test_layers.py`` checks it):

* ``graph``  -- topological order by iterative depth-first search, the search as data, and the nodes' names
* ``value``  -- the scalar engine, :class:`Value`
* ``forward`` -- forward mode: :class:`Dual` numbers, and a Value graph's evaluation trace
* ``grad_mode`` -- recording on or off (:class:`no_grad`), observers of ops, and the backward phase
* ``gradcheck`` -- central-difference gradient checks
* ``node`` -- what the array engine records per op (a Tensor's ``grad_fn``)
* ``backward`` -- the backward pass over the recorded nodes
* ``checkpointing`` -- a function of Tensors run as one op, and run again in the backward pass
* ``flops`` -- the flop formulas of the rule table's ``flops`` column
* ``shape_errors`` -- the messages of an op's shape errors in the forward pass, naming the op and the dim
* ``forwards`` -- the forward functions of the table's rows, on numpy arrays
* ``vjp_rules`` -- the VJP rules of the table's rows, one per op, each with its math in its docstring
* ``rules`` -- the one table of ops: forward function, VJP rule, name, flops and messages of each, checkpoint's
  included; a wrong ``reads`` fails when the table is made
* ``arguments`` -- the checks of an op's constant arguments (shapes, axes, indices, windows)
* ``in_place`` -- arithmetic in place on a Tensor (``x += y``): when it changes the array, when it refuses
* ``tensor`` -- the array engine: :class:`Tensor` and :func:`apply`
* ``autograd`` -- :func:`grad` (gradients asked for, as ``torch.autograd.grad``), ``clear_grads`` and
  :func:`checkpoint`
* ``drawable`` -- a Tensor's recorded graph as the figures draw it, and the gradients that flowed
* ``functional`` -- softmax, cross-entropy, mean squared error, the L2 penalty, embedding, dropout, conv2d,
  max_pool2d, and the ops of several Tensors: where, maximum, minimum, cat, stack
* ``nn`` -- Linear, MLP, SGD, the d2l one-hidden-layer model and toy data
* ``cost`` -- flops per op and pass, bytes kept for backward, peak memory

Its one room, a subpackage built on the engine, draws what the engine did:

* ``chainrule.figures`` -- graphs drawn through Graphviz, accessible SVG

The course built on the engine (explorables, drills, exercise checks, grading, the pages'
Live code) is another package, ``chainrule_course``, which imports this one and is never
imported by it.
"""

# The scalar engine, grad mode and its gradient checks need only Python. The rest needs
# numpy, so it is imported when first used (PEP 562):
# then `from chainrule import Value` (or no_grad) works where numpy is missing, as in the web
# page's Python.
import importlib

from .forward import Dual, evaluation_trace, jvp
from .grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradientCheckError, assert_gradients_close, gradcheck
from .graph import DFSStep, depth_first_events, dfs_trace, format_dfs_trace, topological_order
from .value import Value

#: Names imported on first use, and the module each comes from.
_LAZY = {
    "Tensor": "tensor",
    "grad": "autograd",
    "checkpoint": "autograd",
}
_LAZY_MODULES = {"cost", "functional", "nn"}


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
    "Dual",
    "jvp",
    "evaluation_trace",
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
    "DFSStep",
    "dfs_trace",
    "format_dfs_trace",
]
__version__ = "0.1.0"

"""chainrule: a small autograd engine for learning backpropagation.

Layers, each importing only the ones above it in this list:

* ``graph``  -- topological order by iterative depth-first search
* ``value``  -- the scalar engine, :class:`Value`
* ``node`` -- what the array engine records per op (a Tensor's ``grad_fn``), and no_grad
* ``rules`` -- the one table of ops: forward functions and VJP rules (numpy only)
* ``backward`` -- the backward pass over the recorded nodes
* ``tensor`` -- the array engine, :class:`Tensor`, :func:`apply` and :func:`grad`
* ``checkpointing`` -- :func:`checkpoint`, recomputation instead of saved activations
* ``functional`` -- softmax, cross-entropy, mean squared error, the L2 penalty
* ``cost`` -- flops per op and pass, bytes kept for backward, peak memory
* ``draw``   -- graphviz figures of graphs, search steps and gradient flow
* ``gradcheck`` -- central-difference gradient checks
* ``nn`` -- Linear, MLP, SGD, the d2l one-hidden-layer model and toy data
* ``plots`` -- line and bar charts as inline SVG (imports matplotlib when used)
* ``feedback`` -- checks of exercise answers that name the quantity, the entry and the known mistake
"""

from .graph import depth_first_events, topological_order
from .value import Value, zero_grad
from .tensor import Tensor, grad, no_grad, set_grad_enabled, is_grad_enabled
from .checkpointing import checkpoint
from . import cost, functional, nn, feedback
from .draw import (
    DFSStep,
    Figure,
    GraphTooLargeError,
    dfs_trace,
    draw_dfs_step,
    draw_gradient_flow,
    draw_graph,
    format_dfs_trace,
)
from .gradcheck import GradientCheckError, assert_gradients_close, gradcheck

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

"""Gradients asked for, not stored: :func:`grad`, as PyTorch's ``torch.autograd.grad``, and
:func:`clear_grads`, which empties the ``.grad`` that ``backward()`` fills; and
:func:`checkpoint`, which keeps less for backward and computes it again.

Both are built on :mod:`chainrule.tensor`: ``grad`` seeds the backward pass of
:mod:`chainrule.backward` as ``Tensor.backward`` does, and asks it for the gradients of the
inputs named instead of storing every leaf's. ``checkpoint`` runs its function through
:mod:`chainrule.checkpointing` and records the result as one op of the rule table.
"""

import numpy as np

from .backward import backpropagate
from .checkpointing import run_once
from .node import vertex_of
from .tensor import Tensor, finish_op, seed_gradient

__all__ = ["grad", "clear_grads", "checkpoint"]


def _tensor_list(tensors, name):
    """``grad``'s outputs or inputs as a list of Tensors, or a TypeError that says what was passed."""
    if isinstance(tensors, Tensor):
        return [tensors]
    if isinstance(tensors, (list, tuple)) and all(isinstance(t, Tensor) for t in tensors) and tensors:
        return list(tensors)
    found = (
        type(tensors).__name__
        if not isinstance(tensors, (list, tuple))
        else (
            "an empty sequence"
            if not tensors
            else f"a sequence holding {type(next(t for t in tensors if not isinstance(t, Tensor))).__name__}"
        )
    )
    hint = " (pass the Tensor itself, not its .data)" if isinstance(tensors, np.ndarray) else ""
    raise TypeError(f"grad: {name} must be a Tensor or a list of Tensors, got {found}{hint}")


def grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """Return the gradients of ``outputs`` with respect to ``inputs``, as Tensors.

    Like ``torch.autograd.grad``: nothing is stored in ``.grad``.  ``outputs`` and
    ``inputs`` are Tensors or sequences of Tensors; ``grad_outputs`` gives dL/d output
    for each output (needed unless it has one element).  With ``create_graph=True`` the
    returned Tensors carry a graph, so they can be differentiated again; that is how a
    Hessian-vector product is computed::

        (g,) = grad((x**3).sum(), x, create_graph=True)   # g = 3 x²
        (hv,) = grad((g * v).sum(), x)                    # H v = 6 x * v

    Returns a tuple with one Tensor per input.
    """
    outputs = _tensor_list(outputs, "outputs")
    inputs = _tensor_list(inputs, "inputs")
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, (Tensor, np.ndarray)):
        grad_outputs = [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    for i, output in enumerate(outputs):
        if not output.requires_grad:
            raise RuntimeError(f"grad: outputs[{i}] does not require grad, so there is no graph to go back through")
    for i, tensor in enumerate(inputs):
        if not tensor.requires_grad:
            raise RuntimeError(f"grad: inputs[{i}] does not require grad (set requires_grad=True on it)")
    seeds = [seed_gradient(output, g, "grad", "grad_outputs") for output, g in zip(outputs, grad_outputs, strict=True)]
    if retain_graph is None:
        retain_graph = create_graph
    vertices = [vertex_of(tensor) for tensor in inputs]
    found = backpropagate(
        [vertex_of(output) for output in outputs],
        seeds,
        retain_graph,
        create_graph,
        wanted={id(vertex) for vertex in vertices},
    )
    for i, (tensor, vertex) in enumerate(zip(inputs, vertices, strict=True)):
        if id(vertex) not in found:
            raise ValueError(f"grad: inputs[{i}] (shape {tensor.shape}) was not used to compute the outputs")
    return tuple(found[id(vertex)] for vertex in vertices)


def clear_grads(tensors):
    """Set ``.grad`` to None on each Tensor in ``tensors`` (e.g. a model's parameters), and on no other.

    A single Tensor is the same as a list holding it.  (A Tensor has no ``zero_grad()``
    method: its graph does not keep the Tensors it was computed from, only their nodes,
    so "clear everything upstream", as :meth:`Value.zero_grad` does, has no meaning here.)
    """
    for tensor in [tensors] if isinstance(tensors, Tensor) else tensors:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"clear_grads: expected Tensors, got {type(tensor).__name__}")
        tensor.grad = None


def checkpoint(fn, *inputs):
    """Return ``fn(*inputs)`` without keeping the activations inside ``fn`` for backward.

    fn runs with recording off, so nothing inside it is kept; its result gets one node,
    op ``"checkpoint"``, that keeps only the inputs.  When the backward pass reaches the
    node, fn runs once more with recording on and G is pushed through that new graph
    (:func:`~chainrule.checkpointing.checkpoint_vjp`).  The gradients are the same; the price is
    one more forward pass of fn during backward.

    ``fn`` takes the input Tensors and returns one Tensor.  As in torch.utils.checkpoint
    it may use parameters from its closure, such as the weights of the layers it runs:
    the Tensors that require grad and that fn reads are found while it runs and become
    inputs of the node too, so their gradients arrive as along any other edge (and add
    up with those from uses outside fn).  Rules for fn:

    * it must compute the same thing each time it is called (it is called twice); the
      random draws of its ops (dropout's masks) are made again the second time from the
      generator's state, kept before each, so dropout inside fn is fine, as with
      PyTorch's ``preserve_rng_state=True``;
    * a Tensor that requires grad and was *computed* outside fn (not a leaf) must be
      passed as an input, not read from the closure;
    * gradients of gradients (``create_graph=True``) through it are not supported.

    Checkpoints may be nested; each level adds one more recomputation of the inner part.
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: fn must be callable, got {type(fn).__name__}; call checkpoint(fn, *inputs)")
    for i, tensor in enumerate(inputs):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"checkpoint: inputs[{i}] is a {type(tensor).__name__}, not a Tensor; "
                "pass Tensors (wrap arrays with Tensor(...), or put constants inside fn)"
            )
    out, draws, parameters = run_once(fn, inputs)
    if not isinstance(out, Tensor):
        raise TypeError(
            f"checkpoint: fn must return one Tensor, got {type(out).__name__}; "
            "for several results, checkpoint one function per result"
        )
    return finish_op("checkpoint", (*inputs, *parameters), (fn, len(inputs), draws), out.data)

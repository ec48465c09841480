"""Arithmetic in place on a Tensor, ``x += y``: when it changes the array, and when it refuses.

As in PyTorch:

* a leaf that requires grad refuses while the graph is recorded: an optimizer holding it
  would keep the old leaf if Python made a new one (change it under ``no_grad``, as an
  optimizer's step does);
* so does a view of a live Tensor (a slice, a transpose, a reshape): PyTorch would change
  that Tensor too, writing through the view;
* under ``no_grad``, or for a Tensor that needs no gradient, the operator runs with its own
  checks (operand, shapes, a divisor of 0) and its result is copied into the array, counted
  by the version counter, so a graph that saved the array refuses to go backward.

Any other recorded result, or a constant given a recorded operand, is computed out of place:
Python makes a new, recorded Tensor, as ``x = x + y`` would.
"""

import numpy as np

from .grad_mode import is_grad_enabled, no_grad

__all__ = ["in_place"]


def in_place(tensor, other, operator, symbol):
    """``tensor symbol other`` (``+=`` with ``operator`` Tensor.__add__, ...), as the module docstring says."""
    other_needs = getattr(other, "requires_grad", False) is True
    recording = is_grad_enabled() and (tensor.requires_grad or other_needs)
    name = repr(tensor.label) if tensor.label else f"a Tensor of shape {tensor.shape}"
    if recording and tensor.requires_grad and tensor.grad_fn is None:
        raise RuntimeError(
            f"{symbol}: {name} is a leaf that requires grad, and is not changed in place while the graph "
            "is recorded, as in PyTorch. Change it under no_grad, as an optimizer's step does: "
            "`with no_grad(): W -= lr * W.grad`"
        )
    if recording and tensor._base is not None and tensor._base() is not None:
        raise RuntimeError(
            f"{symbol}: {name} is a view of another Tensor, which PyTorch would change too; chainrule "
            "does not write through a view while the graph is recorded: write `y = y + z`"
        )
    if recording:  # Python computes tensor + other instead: a new, recorded Tensor
        return NotImplemented
    with no_grad():
        result = operator(tensor, other)
    if result.shape != tensor.shape:
        raise ValueError(
            f"{symbol}: cannot change {name} in place: with this operand it would have shape {result.shape}"
        )
    try:
        np.copyto(tensor._data, result._data, casting="same_kind")
    except (ValueError, TypeError) as error:  # read-only (a broadcast)
        raise ValueError(f"{symbol}: cannot change {name} in place: {error}") from None
    tensor._version[0] += 1
    return tensor

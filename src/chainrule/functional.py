"""Losses and activations built from :class:`~chainrule.tensor.Tensor` operations.

The functions here are short compositions of Tensor operations, so their gradients
come from the rules of those operations: conv2d, for one, is im2col and a matmul.
log_softmax, nll_loss, embedding, dropout and max_pool2d are ops of their own in the rule table.

Numerical stability.  ``exp`` of a logit of 1000 overflows, but softmax does not change
when the same number is subtracted from every logit of a row.  So softmax and
log_softmax subtract the row's largest logit first, taken as a *constant* (detached):
then every exponent is at most 0, and because the result does not depend on the
subtracted number, treating it as a constant does not change the gradient.
"""

from numbers import Real

import numpy as np

from .arguments import window_args
from .grad_mode import random_draw
from .tensor import Tensor, apply

__all__ = [
    "softmax",
    "log_softmax",
    "nll_loss",
    "cross_entropy",
    "mse_loss",
    "l2_penalty",
    "embedding",
    "dropout",
    "conv2d",
    "max_pool2d",
]


def _as_tensor(x, where):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor(x)
    raise TypeError(f"{where}: expected a Tensor, got {type(x).__name__}")


def _shifted(x, axis, where):
    """``x`` minus its (detached) maximum along ``axis``: every entry <= 0 afterwards."""
    try:  # initial: an empty axis has no largest entry, and nothing to shift
        largest = x.data.max(axis=axis, keepdims=True, initial=-np.inf)
    except ValueError:
        raise ValueError(f"{where}: axis {axis} is out of range for a tensor of shape {x.shape}") from None
    return x - Tensor(largest)


def _one_number(x, axis, where):
    """Whether ``x`` is 0-d and ``axis`` names its one implicit axis (0 or -1), as PyTorch allows."""
    if x.ndim:
        return False
    if axis not in (0, -1, None):
        raise ValueError(f"{where}: axis {axis!r} is not valid for a 0-d tensor: use 0 or -1, as PyTorch does")
    return True


def softmax(x, axis=-1):
    """``exp(x_i) / Σ_j exp(x_j)`` along ``axis``: each slice becomes probabilities (1.0 for a 0-d x)."""
    x = _as_tensor(x, "softmax")
    if _one_number(x, axis, "softmax"):
        return softmax(x.reshape(1), 0).reshape(())
    e = _shifted(x, axis, "softmax").exp()
    return e / e.sum(axis=axis, keepdims=True) if x.size else e  # no entries: nothing to normalise


def log_softmax(x, axis=-1):
    """``x_i - log Σ_j exp(x_j)`` along ``axis``: the log of :func:`softmax`.

    This one is an op of its own (row ``"log_softmax"`` of the rule table): built from
    exp, sum and log it would take five ops forward and more backward, and it sits
    under every classification loss.  Its rule is dx = G - softmax(x) * ΣG.
    """
    x = _as_tensor(x, "log_softmax")
    if _one_number(x, axis, "log_softmax"):
        return log_softmax(x.reshape(1), 0).reshape(())
    return apply("log_softmax", x, args=(axis,))


def _check_labels(labels, batch, num_classes, where, what):
    """``labels`` as a 1-D integer array of class indices, or a clear error naming ``where``."""
    array = np.asarray(labels.data if isinstance(labels, Tensor) else labels)
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"{where}: labels must be integer class indices, got dtype {array.dtype}; "
            "convert them, e.g. np.asarray(labels).astype(np.int64)"
        )
    if array.ndim != 1:
        raise ValueError(f"{where}: labels must be 1-D (one class per row), got shape {array.shape}")
    if len(array) != batch:
        raise ValueError(f"{where}: got {len(array)} labels for a batch of {batch} rows of {what}")
    if not batch:
        raise ValueError(f"{where}: the batch is empty (0 rows), and the mean of no losses is not a number")
    if not (0 <= np.minimum.reduce(array) and np.maximum.reduce(array) < num_classes):
        bad = np.flatnonzero((array < 0) | (array >= num_classes))
        raise ValueError(
            f"{where}: label {array[bad[0]]} (at position {bad[0]}) is out of range: labels must be in "
            f"[0, {num_classes}) for {num_classes} classes ({bad.size} labels out of range)"
        )
    return array


def _rows_and_labels(x, labels, where, what):
    """``x`` (called ``what``) as a (batch, num_classes) Tensor and its checked labels, or a clear
    error naming ``where``."""
    x = _as_tensor(x, where)
    if x.ndim != 2:
        raise ValueError(f"{where}: {what} must have shape (batch, num_classes), got shape {x.shape}")
    return x, _check_labels(labels, *x.shape, where, what)


def nll_loss(log_probs, labels):
    """Mean over the batch of ``-log_probs[row, label]``: the negative log-likelihood.

    ``log_probs`` has shape (batch, num_classes) and holds log-probabilities (the output
    of :func:`log_softmax`); ``labels`` holds one integer class index per row.  Row
    ``"nll_loss"`` of the rule table, as ``torch.nn.functional.nll_loss``.
    """
    log_probs, labels = _rows_and_labels(log_probs, labels, "nll_loss", "log_probs")
    return apply("nll_loss", log_probs, args=(labels,))


def cross_entropy(logits, labels):
    """Mean over the batch of ``-log softmax(logits)[label]``.

    ``logits`` has shape (batch, num_classes); ``labels`` holds one integer class index
    per row.  It is :func:`nll_loss` of :func:`log_softmax` along the classes: two nodes,
    as PyTorch's graph has (``LogSoftmaxBackward0``, then ``NllLossBackward0``).
    """
    logits, labels = _rows_and_labels(logits, labels, "cross_entropy", "logits")
    return apply("nll_loss", log_softmax(logits, axis=1), args=(labels,))


def mse_loss(pred, target):
    """Mean of ``(pred - target)²`` over all elements; the shapes must be equal."""
    pred = _as_tensor(pred, "mse_loss")
    target = target if isinstance(target, Tensor) else Tensor(target)
    if pred.shape != target.shape:
        raise ValueError(
            f"mse_loss: pred has shape {pred.shape} but target has shape {target.shape}; "
            "they must be equal (broadcasting here is almost always a bug)"
        )
    return ((pred - target) ** 2).mean()


def l2_penalty(weights, lam):
    """``lam / 2 * Σ ‖W‖²`` (squared Frobenius norms) over a Tensor or a list of Tensors.

    Its gradient with respect to each W is ``lam * W``: weight decay.
    """
    if isinstance(lam, bool) or not isinstance(lam, Real) or not lam >= 0:
        raise ValueError(f"l2_penalty: lam must be a number >= 0, got {lam!r}")
    weights = [weights] if isinstance(weights, Tensor) else list(weights)
    if not weights:
        raise ValueError("l2_penalty: weights is empty; pass the Tensors to penalize")
    total = None
    for i, w in enumerate(weights):
        w = _as_tensor(w, f"l2_penalty: weights[{i}]")
        square = (w * w).sum()
        total = square if total is None else total + square
    return total * (lam / 2)


def embedding(indices, table):
    """The rows of ``table`` picked by ``indices``: ``table[indices]``, as torch's ``embedding``.

    ``table`` is a Tensor of shape (rows, features); ``indices`` an integer array (or
    list) of any shape, each in [0, rows). The result has shape ``indices.shape +
    (features,)``. Its rule (row ``"embedding"``) adds G into the rows it came from, so
    a row picked twice gets the sum of both gradients, never just the last.
    """
    table = _as_tensor(table, "embedding")
    if table.ndim != 2:
        raise ValueError(f"embedding: the table must have shape (rows, features), got shape {table.shape}")
    return table.take_rows(indices)


def dropout(x, p, training=True, rng=None):
    """Inverted dropout: each entry of ``x`` is zeroed with probability ``p``, the rest scaled by 1/(1-p).

    The scale keeps every entry's expected value: at test time (``training=False``)
    dropout is the identity and returns ``x`` itself. ``rng`` is a numpy Generator (a
    fresh one when None). The mask is a constant of the op (row ``"dropout"``): dx = G * mask.
    """
    x = _as_tensor(x, "dropout")
    if isinstance(p, bool) or not isinstance(p, Real) or not 0 <= p < 1:
        raise ValueError(f"dropout: p must be a probability in [0, 1), got {p!r}")
    if not training:
        return x
    rng = np.random.default_rng() if rng is None else rng

    def draw(generator):
        return (generator.random(x.shape) >= p).astype(x.dtype) / x.dtype.type(1 - p)

    mask = random_draw(draw, rng, x.shape, "dropout")  # inside checkpoint, the same mask when fn runs again
    return apply("dropout", x, args=(mask,))


def conv2d(x, w, stride=1, padding=0):
    """A 2-D convolution, as torch's ``conv2d`` without a bias: x (N, C, H, W), w (F, C, kh, kw).

    Written with im2col: every (kh, kw) window of x becomes a row (:meth:`Tensor.im2col`),
    and the convolution is one matmul of those rows with the filters, each flattened to a
    column. Its gradients are then the matmul's and im2col's (whose VJP, col2im, adds
    each window's gradient back where the window was). Like torch, it correlates: the
    kernel is not flipped. The result has shape (N, F, rows, cols), with
    rows = (H + 2·padding − kh) // stride + 1 and cols likewise.
    """
    x, w = _as_tensor(x, "conv2d"), _as_tensor(w, "conv2d")
    if x.ndim != 4 or w.ndim != 4:
        raise ValueError(
            f"conv2d: expected x of shape (N, C, H, W) and w of shape (F, C, kh, kw), got {x.shape} and {w.shape}"
        )
    if x.shape[1] != w.shape[1]:
        raise ValueError(
            f"conv2d: x has {x.shape[1]} channels (shape {x.shape}) but w expects {w.shape[1]} (shape {w.shape})"
        )
    rows = x.im2col(w.shape[2:], stride, padding)  # (N, rows, cols, C·kh·kw)
    out = rows @ w.reshape(w.shape[0], -1).T  # (N, rows, cols, F)
    return out.transpose(0, 3, 1, 2)


def max_pool2d(x, kernel_size, stride=None):
    """The max of each kernel_size × kernel_size window of x (N, C, H, W), the windows
    ``stride`` apart (by default kernel_size, side by side), as torch's ``max_pool2d``:
    shape (N, C, rows, cols), rows = (H − kernel_size) // stride + 1 and cols likewise,
    rows and columns past the last whole window left out. Its rule routes each window's
    gradient to the entry that won the max (row ``"max_pool2d"``); among ties, the first
    in the window, as torch does. With a stride smaller than the kernel the windows
    overlap, and an entry that wins several gets the sum of their gradients.
    """
    x = _as_tensor(x, "max_pool2d")
    if isinstance(kernel_size, bool) or not isinstance(kernel_size, int | np.integer) or kernel_size < 1:
        raise ValueError(f"max_pool2d: kernel_size must be an int >= 1 (square windows), got {kernel_size!r}")
    stride = kernel_size if stride is None else stride
    window_args(x.shape, kernel_size, stride, 0, "max_pool2d")
    return apply("max_pool2d", x, args=(int(kernel_size), int(stride)))

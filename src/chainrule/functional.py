"""Losses, activations, layers and the ops of several Tensors, built on :class:`~chainrule.tensor.Tensor`.

Most functions here are short compositions of Tensor operations, so their gradients
come from the rules of those operations: conv2d, for one, is im2col and a matmul.
log_softmax, nll_loss, embedding, dropout, max_pool2d, where, maximum, minimum, cat and
stack are ops of their own in the rule table.

Numerical stability.  ``exp`` of a logit of 1000 overflows, but softmax does not change
when the same number is subtracted from every logit of a row.  So softmax and
log_softmax subtract the row's largest logit first, taken as a *constant* (detached):
then every exponent is at most 0, and because the result does not depend on the
subtracted number, treating it as a constant does not change the gradient.
"""

from numbers import Real

import numpy as np

from .arguments import join_axis, window_args
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
    "where",
    "maximum",
    "minimum",
    "cat",
    "stack",
]


def _as_tensor(x, where):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray) and x.dtype in (np.float32, np.float64):
        return Tensor(x)
    if isinstance(x, np.ndarray):
        raise TypeError(f"{where}: expected a Tensor or a float32/float64 array, got an array of dtype {x.dtype}")
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
    batch, num_classes = x.shape
    return x, _check_labels(labels, batch, num_classes, where, what)


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
    if isinstance(lam, bool) or not isinstance(lam, Real) or not float(lam) >= 0:
        raise ValueError(f"l2_penalty: lam must be a number >= 0, got {lam!r}")
    weights = [weights] if isinstance(weights, Tensor) else list(weights)
    if not weights:
        raise ValueError("l2_penalty: weights is empty; pass the Tensors to penalize")
    total = None
    for i, w in enumerate(weights):
        w = _as_tensor(w, f"l2_penalty: weights[{i}]")
        square = (w * w).sum()
        total = square if total is None else total + square
    assert total is not None  # weights is not empty
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
    return table.take_rows(indices, op="embedding")


def dropout(x, p, training=True, rng=None):
    """Inverted dropout: each entry of ``x`` is zeroed with probability ``p``, the rest scaled by 1/(1-p).

    The scale keeps every entry's expected value: at test time (``training=False``)
    dropout is the identity and returns ``x`` itself. ``rng`` is a numpy Generator (a
    fresh one when None). The mask is a constant of the op (row ``"dropout"``): dx = G * mask.
    """
    x = _as_tensor(x, "dropout")
    if isinstance(p, bool) or not isinstance(p, Real) or not 0 <= float(p) < 1:
        raise ValueError(f"dropout: p must be a probability in [0, 1), got {p!r}")
    if not training:
        return x
    rng = np.random.default_rng() if rng is None else rng

    def draw(generator):
        return (generator.random(x.shape) >= p).astype(x.dtype) / x.dtype.type(1 - p)

    mask = random_draw(draw, rng, x.shape, "dropout")  # inside checkpoint, the same mask when fn runs again
    return apply("dropout", x, args=(mask,))


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A 2-D convolution, as torch's ``conv2d``: x (N, C, H, W) or one image (C, H, W), w (F, C, kh, kw),
    bias (F,) or None.

    Written with im2col: every (kh, kw) window of x becomes a row (:meth:`Tensor.im2col`),
    and the convolution is one matmul of those rows with the filters, each flattened to a
    column. Its gradients are then the matmul's and im2col's (whose VJP, col2im, adds
    each window's gradient back where the window was); the bias is added to every entry of
    its filter's map, so its gradient is G summed over N, rows and cols. Like torch, it
    correlates: the kernel is not flipped. The result has shape (N, F, rows, cols), with
    rows = (H + 2·padding − kh) // stride + 1 and cols likewise. ``stride`` and ``padding``
    are ints or pairs of equal ints; ``padding="valid"`` is 0 and ``"same"`` keeps H and W
    (stride 1, a square kernel of odd size). ``dilation`` and ``groups`` other than 1 are
    refused, not ignored.
    """
    x, w = _as_tensor(x, "conv2d"), _as_tensor(w, "conv2d")
    _refuse_unsupported("conv2d", dilation=(dilation, 1), groups=(groups, 1))
    if x.ndim not in (3, 4) or w.ndim != 4:
        raise ValueError(
            f"conv2d: expected x of shape (N, C, H, W) or (C, H, W) and w of shape (F, C, kh, kw), "
            f"got {x.shape} and {w.shape}"
        )
    if not w.shape[0] or not w.shape[1]:
        raise ValueError(f"conv2d: w of shape {w.shape} has no filters or no channels")
    if x.shape[-3] != w.shape[1]:
        raise ValueError(
            f"conv2d: x has {x.shape[-3]} channels (shape {x.shape}) but w expects {w.shape[1]} (shape {w.shape})"
        )
    if x.ndim == 3:  # one image (C, H, W), as torch takes it too
        return conv2d(x.reshape(1, *x.shape), w, bias, stride, padding)[0]
    stride = _one_int(stride, "conv2d", "stride")
    padding = _conv_padding(padding, w.shape[2:], stride)
    window_args(x.shape, w.shape[2:], stride, padding, "conv2d")
    if bias is not None:
        bias = _as_tensor(bias, "conv2d")
        if bias.shape != w.shape[:1]:
            raise ValueError(f"conv2d: bias must have shape ({w.shape[0]},), one per filter of w, got {bias.shape}")
    rows = x.im2col(w.shape[2:], stride, padding)  # (N, rows, cols, C·kh·kw)
    out = (rows @ w.reshape(w.shape[0], -1).T).transpose(0, 3, 1, 2)
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The max of each kh × kw window of x (N, C, H, W), or of one image (C, H, W), the windows ``stride`` apart (by
    default the kernel's size, side by side), as torch's ``max_pool2d``: shape
    (N, C, rows, cols), rows = (H + 2·padding − kh) // stride + 1 and cols likewise, rows and
    columns past the last whole window left out. ``kernel_size`` is an int or a pair (kh, kw);
    ``stride`` and ``padding`` an int or a pair of equal ints. ``padding`` adds -inf around H
    and W (at most half the kernel, as torch requires), which no window's max picks. Its
    rule routes each window's gradient to the entry that won the max (row ``"max_pool2d"``);
    among ties, the first in the window, as torch does. With a stride smaller than the
    kernel the windows overlap, and an entry that wins several gets the sum of their
    gradients. ``dilation``, ``ceil_mode`` and ``return_indices`` other than their defaults
    are refused.
    """
    x = _as_tensor(x, "max_pool2d")
    if x.ndim == 3:  # one image (C, H, W), as torch takes it too
        return max_pool2d(x.reshape(1, *x.shape), kernel_size, stride, padding, dilation, ceil_mode, return_indices)[0]
    _refuse_unsupported(
        "max_pool2d", dilation=(dilation, 1), ceil_mode=(ceil_mode, False), return_indices=(return_indices, False)
    )
    kernel = window_args(x.shape, kernel_size, 1, 0, "max_pool2d", fits=False)
    if stride is None and kernel[0] != kernel[1]:
        raise ValueError(f"max_pool2d: a kernel of {kernel} needs a stride (one int for both dims)")
    stride = kernel[0] if stride is None else stride
    stride, padding = _one_int(stride, "max_pool2d", "stride"), _one_int(padding, "max_pool2d", "padding")
    window_args(x.shape, kernel, stride, padding, "max_pool2d")
    if padding > min(kernel) // 2:
        raise ValueError(
            f"max_pool2d: padding {padding} is more than half the kernel {kernel}: a window could then "
            "hold padding only, so torch refuses it too"
        )
    return apply("max_pool2d", x, args=(kernel, stride, padding))


def _conv_padding(padding, kernel, stride):
    """conv2d's padding as one int: torch's "valid" is 0, and "same" (k − 1) / 2 for a square odd kernel."""
    if padding == "valid":
        return 0
    if padding == "same":
        if stride != 1 or kernel[0] != kernel[1] or kernel[0] % 2 == 0:
            raise ValueError(
                f"conv2d: padding='same' is supported for stride 1 and a square kernel of odd size, got stride "
                f"{stride!r} and kernel {tuple(kernel)}"
            )
        return (kernel[0] - 1) // 2
    return _one_int(padding, "conv2d", "padding")


def _one_int(value, op, name):
    """A stride or padding given as an int, or as torch's pair of two equal ints."""
    if isinstance(value, tuple | list) and len(value) == 2 and value[0] == value[1]:
        return value[0]
    if isinstance(value, tuple | list):
        raise ValueError(f"{op}: {name} must be an int or a pair of equal ints (the same in both dims), got {value!r}")
    return value


def _refuse_unsupported(op, **given_and_default):
    """A NotImplementedError for an argument that is not its default (torch's pair of defaults counts)."""
    for name, (given, default) in given_and_default.items():
        values = list(given) if isinstance(given, tuple | list) else [given]
        if any(value is not default and value != default for value in values) or not values:
            raise NotImplementedError(f"{op}: {name}={given!r} is not supported (only {name}={default!r})")


def where(condition, a, b):
    """``a`` where ``condition`` is true, else ``b``, entry by entry, as ``torch.where``; the three broadcast.

    ``condition`` is a boolean numpy array (a Tensor holds floats: write ``x.data > 0``), a
    constant of the op. ``a`` and ``b`` are Tensors or numbers, at least one a Tensor. The
    gradient goes to ``a`` where the condition holds and to ``b`` elsewhere (row ``"where"``).
    """
    condition = np.array(condition)  # a copy: the gradient must use the mask the forward used
    if condition.dtype != bool:
        raise TypeError(
            f"where: the condition must be a boolean array, got dtype {condition.dtype}; "
            "for a Tensor x write a comparison of its data, such as x.data > 0"
        )
    a, b = _two_operands(a, b, "where")
    return apply("where", a, b, args=(condition,))


def maximum(a, b):
    """The larger of ``a`` and ``b``, entry by entry (they broadcast), as ``torch.maximum``.
    At a tie each gets half the gradient, as in torch (row ``"maximum"``)."""
    return apply("maximum", *_two_operands(a, b, "maximum"))


def minimum(a, b):
    """The smaller of ``a`` and ``b``, entry by entry (they broadcast), as ``torch.minimum``.
    At a tie each gets half the gradient, as in torch (row ``"minimum"``)."""
    return apply("minimum", *_two_operands(a, b, "minimum"))


def _two_operands(a, b, op):
    """``a`` and ``b`` as Tensors, a number or float array taking the other's dtype."""
    if isinstance(a, Tensor):
        return a, _constant(b, a.dtype, op)
    if isinstance(b, Tensor):
        return _constant(a, b.dtype, op), b
    raise TypeError(f"{op}: a or b must be a Tensor, got {type(a).__name__} and {type(b).__name__}")


def _constant(x, dtype, op):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Real) and not isinstance(x, bool):
        return Tensor(np.asarray(x, dtype=dtype))
    if isinstance(x, np.ndarray) and x.dtype in (np.float32, np.float64):
        return Tensor(x)
    got = f"an array of dtype {x.dtype}" if isinstance(x, np.ndarray) else type(x).__name__
    raise TypeError(f"{op}: expected a Tensor, a number or a float32/float64 numpy array, got {got}")


def cat(tensors, axis=0):
    """The Tensors joined along an existing ``axis``, as ``torch.cat`` (row ``"cat"``): their
    shapes must agree on every other axis. Each one's gradient is its slice of G."""
    tensors = _tensor_sequence(tensors, "cat")
    if not tensors[0].ndim:
        raise ValueError("cat: 0-d tensors have no axis to join along; use stack")
    axis = join_axis(axis, tensors[0].ndim, "cat")
    return apply("cat", *tensors, args=(axis,))


def stack(tensors, axis=0):
    """The Tensors, all of one shape, stacked along a new ``axis``, as ``torch.stack`` (row
    ``"stack"``). Each one's gradient is its entry of G along that axis."""
    tensors = _tensor_sequence(tensors, "stack")
    axis = join_axis(axis, tensors[0].ndim + 1, "stack")
    return apply("stack", *tensors, args=(axis,))


def _tensor_sequence(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, list | tuple):
        raise TypeError(f"{op}: expected a list or tuple of Tensors, got {type(tensors).__name__}")
    if not tensors:
        raise ValueError(f"{op}: expected at least one Tensor, got an empty {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: tensors[{i}] is a {type(t).__name__}, not a Tensor")
    return list(tensors)

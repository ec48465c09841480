"""The flop formulas of the rule table's rows (:data:`chainrule.rules.RULES`, column ``flops``).

A flop is one addition or one multiplication; each formula takes the op's input Tensors (or
arrays), its args and its output array, and counts in the shapes (see :mod:`chainrule.cost`).
"""

__all__ = [
    "elementwise",
    "matmul",
    "reduction",
    "window_max",
    "log_softmax",
    "picked_mean",
    "scatter_add",
    "no_arithmetic",
]


def elementwise(inputs, args, out):
    """1 per output element (``+ - * / **``, neg, relu, tanh, sigmoid, exp, log, dropout, abs, clamp,
    maximum, minimum)."""
    return out.size


def matmul(inputs, args, out):
    """``2 · k · (size of the output)``: k multiplications and k additions per output entry."""
    return 2 * inputs[0].shape[-1] * out.size


def reduction(inputs, args, out):
    """1 per input element: an add or a comparison (sum, mean, max)."""
    return inputs[0].size


def window_max(inputs, args, out):
    """kh·kw per output element: a comparison per entry of its kh×kw window (max_pool2d).

    An entry read by several overlapping windows counts once in each."""
    kh, kw = args[0]
    return kh * kw * out.size


def log_softmax(inputs, args, out):
    """5 per input element: subtract the max, exp, sum, log, subtract."""
    return 5 * inputs[0].size


def picked_mean(inputs, args, out):
    """1 per row: the entry each row's label picks is added to the total (nll_loss)."""
    return len(args[0])


def scatter_add(inputs, args, out):
    """1 per element of G added (scatter_add, embedding's VJP; col2im, im2col's; add_at, indexing's)."""
    return inputs[0].size


def no_arithmetic(inputs, args, out):
    """0: the op only moves or selects numbers (reshape, transpose, broadcast_to, embedding, im2col, index,
    where, cat, stack, checkpoint)."""
    return 0

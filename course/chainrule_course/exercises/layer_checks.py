"""The checks of the exercises on layers after the MLP: convolution, embedding, recurrence.

A convolution's backward pass in numpy and an embedding's (layers), and backpropagation
through two steps of a tanh recurrent cell (sequences). The right answer comes from
``chainrule``'s own backward pass; the known mistakes from numpy loops that make them on
purpose. Like :mod:`chainrule_course.exercises.gradient_checks` they load numpy, and
:mod:`chainrule_course.exercises.feedback` loads them the first time a check cell asks for one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from chainrule.functional import conv2d, embedding
from chainrule.tensor import Tensor

from ..grading.contract import allowed, seeded
from .answers import AnswerError, Mistake, check_array
from .calling import call

SIGN = "the sign is flipped"

# --------------------------------------------------------------------------- a convolution (layers)


def conv_backward_loops(x, k, y_bar, stride, padding, *, flip=True, crop=True, step=None):
    """(x_bar, k_bar) of conv2d by adding each output's gradient into its window, the way the
    mistakes are made: ``flip=False`` uses the kernel flipped (what the unflipped kernel in the
    full correlation gives), ``crop=False`` keeps the padded input's gradient, ``step`` puts
    the windows ``step`` apart instead of ``stride``."""
    step = stride if step is None else step
    pad = ((0, 0), (0, 0), (padding, padding), (padding, padding))
    x_padded = np.pad(x, pad)
    kernel = k if flip else k[:, :, ::-1, ::-1]
    x_bar, k_bar = np.zeros_like(x_padded), np.zeros_like(k)
    side = k.shape[-1]
    for i in range(y_bar.shape[2]):
        for j in range(y_bar.shape[3]):
            rows, cols = slice(i * step, i * step + side), slice(j * step, j * step + side)
            k_bar += np.einsum("nf,ncab->fcab", y_bar[:, :, i, j], x_padded[:, :, rows, cols])
            x_bar[:, :, rows, cols] += np.einsum("nf,fcab->ncab", y_bar[:, :, i, j], kernel)
    if crop and padding:
        x_bar = x_bar[:, :, padding:-padding, padding:-padding]
    return x_bar, k_bar


def _conv_problem(seed: int, index: int):
    """x, k, y_bar, stride and padding of one call: stride 1 without padding, then stride 2 with."""
    rng = np.random.default_rng(seeded(seed) * 2 + index)
    if seed == 0:
        n, c, side, f, size = ((2, 3, 6, 4, 3), (2, 2, 7, 3, 3))[index]
    else:
        n, c, f = (int(v) for v in rng.integers(1, 4, size=3))
        side, size = int(rng.integers(6, 9)), int(rng.choice([2, 3]))
    stride, padding = ((1, 0), (2, 1))[index]
    x, k = rng.normal(size=(n, c, side, side)), rng.normal(size=(f, c, size, size))
    out = (side + 2 * padding - size) // stride + 1
    return x, k, rng.normal(size=(n, f, out, out)), stride, padding


@allowed("numpy")
def check_conv2d_backward(conv2d_backward: Callable, seed: int = 0) -> None:
    """``conv2d_backward(x, w, y_bar, stride, padding)`` must return (x_bar, w_bar) of
    ``conv2d(x, w, stride=stride, padding=padding)``, on two problems: stride 1 without padding, stride 2 with."""
    name = "conv2d_backward"
    for index in (0, 1):
        x, k, y_bar, stride, padding = _conv_problem(seed, index)
        xt, kt = Tensor(x.copy(), requires_grad=True), Tensor(k.copy(), requires_grad=True)
        conv2d(xt, kt, stride=stride, padding=padding).backward(gradient=y_bar)
        result = call(
            name, conv2d_backward, x, k, y_bar, stride, padding, names=("x", "w", "y_bar", "stride", "padding")
        )
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
            raise AnswerError(name, f"{name} should return two arrays (x_bar, w_bar), not {got}.")
        where = f"for x of shape {x.shape}, w of shape {k.shape}, stride {stride}, padding {padding}"
        x_mistakes = [*_input_mistakes(x, k, y_bar, stride, padding), Mistake(SIGN, -xt.grad)]
        check_array(f"x_bar {where}", result[0], xt.grad, x_mistakes)
        flipped = Mistake("w_bar is flipped: correlate x with y_bar, not y_bar with x", kt.grad[:, :, ::-1, ::-1])
        check_array(f"w_bar {where}", result[1], kt.grad, [flipped, Mistake(SIGN, -kt.grad)])


def _input_mistakes(x, k, y_bar, stride, padding) -> list[Mistake]:
    found = [
        Mistake(
            "the kernel is not flipped: the input's gradient correlates the padded y_bar with the "
            "kernel flipped in both axes",
            conv_backward_loops(x, k, y_bar, stride, padding, flip=False)[0],
        )
    ]
    if padding:
        found.append(
            Mistake(
                f"it is the gradient of the padded input: remove {padding} rows and columns from each side",
                conv_backward_loops(x, k, y_bar, stride, padding, crop=False)[0],
            )
        )
    if stride > 1:
        found.append(
            Mistake(
                f"the stride is left out: the windows are {stride} apart, so spread y_bar out with "
                f"{stride - 1} zero(s) between its entries",
                conv_backward_loops(x, k, y_bar, stride, padding, step=1)[0],
            )
        )
    return found


# --------------------------------------------------------------------------- an embedding (layers)


@allowed("numpy")
def check_embedding_grad(embedding_grad: Callable, seed: int = 0) -> None:
    """``embedding_grad(tokens, y_bar, rows)`` must return the table's gradient, (rows, d):
    tokens are 1-D, then 2-D, with repeated tokens both times."""
    name = "embedding_grad"
    rng = np.random.default_rng(seeded(seed))
    for shape in ((6,), (2, 5)) if seed == 0 else ((int(rng.integers(5, 9)),), (3, int(rng.integers(3, 6)))):
        rows, d = int(rng.integers(4, 7)), int(rng.integers(2, 5))
        tokens = rng.integers(0, rows, size=shape)
        tokens.flat[-1] = tokens.flat[0]  # a repeat, whatever the draw
        y_bar = rng.normal(size=(*shape, d))
        table = Tensor(rng.normal(size=(rows, d)), requires_grad=True)
        embedding(tokens, table).backward(gradient=y_bar)
        result = call(name, embedding_grad, tokens, y_bar, rows, names=("tokens", "y_bar", "rows"))
        overwritten = np.zeros((rows, d))
        overwritten[tokens.reshape(-1)] = y_bar.reshape(-1, d)
        check_array(
            f"the table's gradient for tokens of shape {shape} (rows = {rows}, d = {d})",
            result,
            table.grad,
            [
                Mistake(
                    "a repeated token keeps only one of its gradients: E_bar[tokens] = y_bar assigns, "
                    "use np.add.at, which adds",
                    overwritten,
                ),
                Mistake("each row is the mean of its gradients, not their sum", _row_means(tokens, y_bar, rows)),
            ],
        )


def _row_means(tokens, y_bar, rows):
    total, count = np.zeros((rows, y_bar.shape[-1])), np.zeros((rows, 1))
    np.add.at(total, tokens.reshape(-1), y_bar.reshape(-1, y_bar.shape[-1]))
    np.add.at(count, tokens.reshape(-1), 1.0)
    return total / np.maximum(count, 1.0)


# --------------------------------------------------------------------------- two steps of a tanh cell (sequences)


def rnn_two_step_loops(x1, x2, W_x, W_h, b, h2_bar, *, through=True, tanh_1=True, previous=True):
    """(W_x_bar, W_h_bar, b_bar) of h2 for h1 = tanh(x1 W_xᵀ + b), h2 = tanh(x2 W_xᵀ + h1 W_hᵀ + b),
    and the mistakes: ``through=False`` stops at step 2, ``tanh_1=False`` leaves out tanh's
    derivative at step 1, ``previous=False`` uses h2 where W_h_bar needs h1."""
    h1 = np.tanh(x1 @ W_x.T + b)
    h2 = np.tanh(x2 @ W_x.T + h1 @ W_h.T + b)
    z2_bar = h2_bar * (1 - h2 * h2)
    W_x_bar, W_h_bar, b_bar = z2_bar.T @ x2, z2_bar.T @ (h1 if previous else h2), z2_bar.sum(axis=0)
    if through:
        z1_bar = (z2_bar @ W_h) * ((1 - h1 * h1) if tanh_1 else 1.0)
        W_x_bar, b_bar = W_x_bar + z1_bar.T @ x1, b_bar + z1_bar.sum(axis=0)
    return W_x_bar, W_h_bar, b_bar


@allowed("numpy")
def check_rnn_two_step_grads(rnn_two_step_grads: Callable, seed: int = 0) -> None:
    """``rnn_two_step_grads(x1, x2, W_x, W_h, b, h2_bar)`` must return (W_x_bar, W_h_bar, b_bar) of
    a loss whose gradient at h2 is h2_bar, with h0 = 0, on two sizes (n, d, d_h)."""
    name = "rnn_two_step_grads"
    rng = np.random.default_rng(seeded(seed))
    sizes = ((3, 2, 4), (5, 4, 3)) if seed == 0 else tuple(tuple(int(v) for v in rng.integers(2, 7, 3)) for _ in "ab")
    for n, d, d_h in sizes:
        x1, x2, h2_bar = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d_h))
        W_x, W_h, b = rng.normal(size=(d_h, d)), rng.normal(size=(d_h, d_h)) / 2, rng.normal(size=d_h) / 2
        params = [Tensor(a.copy(), requires_grad=True) for a in (W_x, W_h, b)]
        h1 = (Tensor(x1) @ params[0].T + params[2]).tanh()
        (Tensor(x2) @ params[0].T + h1 @ params[1].T + params[2]).tanh().backward(gradient=h2_bar)
        args = (x1, x2, W_x, W_h, b, h2_bar)
        result = call(name, rnn_two_step_grads, *args, names=("x1", "x2", "W_x", "W_h", "b", "h2_bar"))
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
            raise AnswerError(name, f"{name} should return three arrays (W_x_bar, W_h_bar, b_bar), not {got}.")
        stopped = rnn_two_step_loops(*args, through=False)
        no_tanh = rnn_two_step_loops(*args, tanh_1=False)
        where = f"for n = {n}, d = {d}, d_h = {d_h}"
        only_last = "only step 2's term: the gradient must also go back through h1 to step 1"
        missing = "tanh's derivative at step 1, 1 - h1**2, is missing"
        check_array(
            f"W_x_bar {where}",
            result[0],
            params[0].grad,
            [Mistake(only_last, stopped[0]), Mistake(missing, no_tanh[0]), Mistake(SIGN, -params[0].grad)],
        )
        check_array(
            f"W_h_bar {where}",
            result[1],
            params[1].grad,
            [
                Mistake(
                    "it multiplies by h2; W_h multiplies h1, the state before",
                    rnn_two_step_loops(*args, previous=False)[1],
                ),
                Mistake(SIGN, -params[1].grad),
            ],
        )
        b_mistakes = [Mistake(only_last, stopped[2]), Mistake(missing, no_tanh[2]), Mistake(SIGN, -params[2].grad)]
        check_array(f"b_bar {where}", result[2], params[2].grad, b_mistakes)

"""The checks of the layer exercises (12.1, 12.2, 13.1) and of the forward-mode rule (7.3): right
answers pass, in other forms too, and each known mistake is named.

The right answers are written here in numpy, apart from the checks' own references, and
checked against PyTorch first, so a wrong "expected" cannot pass silently. Each planted
wrong answer is what a student who makes that mistake would compute.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from chainrule_course.exercises import feedback
from chainrule_course.exercises.feedback import AnswerError

SEEDS = (0, 41, 42)  # the public check and two hidden ones


def correlate(a, w):
    """Each window of a times each filter of w, summed over the
    channels: (n, c, H, W) and (f, c, k, k) -> (n, f, H-k+1, W-k+1)."""
    size = w.shape[-1]
    windows = np.lib.stride_tricks.sliding_window_view(a, (size, size), axis=(2, 3))
    return np.einsum("ncijab,fcab->nfij", windows, w)


def conv2d_backward(x, k, y_bar, stride, padding):
    n, c, side, _ = x.shape
    size, out = k.shape[-1], y_bar.shape[-1]
    spread = np.zeros((*y_bar.shape[:2], (out - 1) * stride + 1, (out - 1) * stride + 1))
    spread[:, :, ::stride, ::stride] = y_bar
    pad = ((0, 0), (0, 0), (padding, padding), (padding, padding))
    x_padded = np.pad(x, pad)
    k_bar = correlate(x_padded.transpose(1, 0, 2, 3), spread.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    edge = ((0, 0), (0, 0), (size - 1, size - 1), (size - 1, size - 1))
    flipped = k[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)
    full = correlate(np.pad(spread, edge), flipped)
    x_bar = np.zeros_like(x_padded)
    x_bar[:, :, : full.shape[2], : full.shape[3]] = full
    inside = slice(padding, padding + side)
    return x_bar[:, :, inside, inside], k_bar[:, :, :size, :size]


def embedding_grad(tokens, y_bar, rows):
    E_bar = np.zeros((rows, y_bar.shape[-1]))
    np.add.at(E_bar, tokens.reshape(-1), y_bar.reshape(-1, y_bar.shape[-1]))
    return E_bar


def rnn_two_step_grads(x1, x2, W_x, W_h, b, h2_bar):
    h1 = np.tanh(x1 @ W_x.T + b)
    h2 = np.tanh(x2 @ W_x.T + h1 @ W_h.T + b)
    z2_bar = h2_bar * (1 - h2 * h2)
    z1_bar = (z2_bar @ W_h) * (1 - h1 * h1)
    return (z2_bar.T @ x2 + z1_bar.T @ x1, z2_bar.T @ h1, z2_bar.sum(axis=0) + z1_bar.sum(axis=0))


def test_the_right_answers_are_pytorchs():
    rng = np.random.default_rng(0)
    x, k = rng.normal(size=(2, 3, 7, 7)), rng.normal(size=(4, 3, 3, 3))
    tx, tk = torch.tensor(x, requires_grad=True), torch.tensor(k, requires_grad=True)
    out = F.conv2d(tx, tk, stride=2, padding=1)
    y_bar = rng.normal(size=out.shape)
    out.backward(torch.tensor(y_bar))
    for ours, theirs in zip(conv2d_backward(x, k, y_bar, 2, 1), (tx.grad, tk.grad), strict=True):
        assert np.allclose(ours, theirs.numpy())
    tokens, table = np.array([[1, 3, 1], [0, 1, 2]]), torch.zeros(4, 2, dtype=torch.float64, requires_grad=True)
    y_bar = rng.normal(size=(2, 3, 2))
    F.embedding(torch.tensor(tokens), table).backward(torch.tensor(y_bar))
    assert np.allclose(embedding_grad(tokens, y_bar, 4), table.grad.numpy())
    args = [rng.normal(size=shape) for shape in ((3, 2), (3, 2), (4, 2), (4, 4), (4,), (3, 4))]
    params = [torch.tensor(a, requires_grad=True) for a in args[2:5]]
    h1 = torch.tanh(torch.tensor(args[0]) @ params[0].T + params[2])
    torch.tanh(torch.tensor(args[1]) @ params[0].T + h1 @ params[1].T + params[2]).backward(torch.tensor(args[5]))
    for ours, theirs in zip(rnn_two_step_grads(*args), params, strict=True):
        assert np.allclose(ours, theirs.grad.numpy())


@pytest.mark.parametrize(
    "check, answer",
    [
        (feedback.check_conv2d_backward, conv2d_backward),
        (feedback.check_embedding_grad, embedding_grad),
        (feedback.check_rnn_two_step_grads, rnn_two_step_grads),
    ],
    ids=["conv2d", "embedding", "rnn"],
)
def test_right_answers_pass_as_float32_and_torch_too(check, answer):
    for seed in SEEDS:
        check(answer, seed=seed)
    check(lambda *a: _one_or_many(answer(*a), lambda g: np.asarray(g, dtype=np.float32)))
    check(lambda *a: _one_or_many(answer(*a), torch.tensor))


def _one_or_many(result, convert):
    return tuple(convert(g) for g in result) if isinstance(result, tuple) else convert(result)


def raises(check, answer, match):
    with pytest.raises(AnswerError, match=match) as error:
        check(answer)
    return str(error.value)


def test_conv2d_mistakes_are_named():
    def flipped_x(x, k, y_bar, stride, padding):  # the full correlation with the kernel as it is
        return conv2d_backward(x, k[:, :, ::-1, ::-1], y_bar, stride, padding)[0], conv2d_backward(
            x, k, y_bar, stride, padding
        )[1]

    def flipped_k(x, k, y_bar, stride, padding):
        x_bar, k_bar = conv2d_backward(x, k, y_bar, stride, padding)
        return x_bar, k_bar[:, :, ::-1, ::-1]

    def not_cropped(x, k, y_bar, stride, padding):
        pad = ((0, 0), (0, 0), (padding, padding), (padding, padding))
        x_bar, k_bar = conv2d_backward(np.pad(x, pad), k, y_bar, stride, 0)
        return x_bar, k_bar

    def no_stride(x, k, y_bar, stride, padding):  # y_bar not spread out: windows 1 apart
        pad = ((0, 0), (0, 0), (padding, padding), (padding, padding))
        x_bar = np.zeros_like(np.pad(x, pad))
        size = k.shape[-1]
        for i in range(y_bar.shape[2]):
            for j in range(y_bar.shape[3]):
                x_bar[:, :, i : i + size, j : j + size] += np.einsum("nf,fcab->ncab", y_bar[:, :, i, j], k)
        inside = slice(padding, padding + x.shape[2])
        return x_bar[:, :, inside, inside], conv2d_backward(x, k, y_bar, stride, padding)[1]

    def changed(x_part=lambda g, *a: g, w_part=lambda g, *a: g):
        def answer(x, k, y_bar, stride, padding):
            x_bar, k_bar = conv2d_backward(x, k, y_bar, stride, padding)
            return x_part(x_bar, x, stride), w_part(k_bar, x, stride)

        return answer

    wrong = {
        "the kernel's flip is wrong": flipped_x,
        "w_bar is flipped": flipped_k,
        "it is the gradient of the padded input: remove `padding` rows": not_cropped,
        "the stride is left out: the windows are `stride` apart": no_stride,
        "should return two arrays": lambda *a: conv2d_backward(*a)[0],
        "the sign is flipped": lambda *a: tuple(-g for g in conv2d_backward(*a)),
        "the sign of w_bar is flipped": changed(w_part=lambda g, *a: -g),
        "x_bar is multiplied by the stride": changed(lambda g, x, stride: g * stride),
        "w_bar is averaged over the batch (÷n)": changed(w_part=lambda g, x, stride: g / len(x)),
        "w_bar's first two axes are swapped": changed(w_part=lambda g, *a: g.transpose(1, 0, 2, 3)),
        "x_bar's rows and columns are swapped": changed(lambda g, *a: g.transpose(0, 1, 3, 2)),
        "the two results are swapped": lambda *a: conv2d_backward(*a)[::-1],
    }
    for mistake, answer in wrong.items():
        assert mistake in raises(feedback.check_conv2d_backward, answer, r"x_bar|w_bar|conv2d_backward"), mistake


def test_conv2d_a_mistake_is_named_only_when_it_fits_every_problem():
    """x_bar doubled is ×stride on the stride-2 problem alone, and ×2 on stride 2 only is not ×stride on
    stride 3: each is located, on the first problem it gets wrong, not named."""

    def doubled(x, k, y_bar, stride, padding):
        x_bar, k_bar = conv2d_backward(x, k, y_bar, stride, padding)
        return 2 * x_bar, k_bar

    def stride_only_in_x(x, k, y_bar, stride, padding):  # ×stride on the stride-2 problem, not on stride 3
        x_bar, k_bar = conv2d_backward(x, k, y_bar, stride, padding)
        return x_bar * (2 if stride == 2 else 1), k_bar

    message = raises(feedback.check_conv2d_backward, doubled, "x_bar")
    assert "stride 1" in message and "is wrong at entry" in message and "known mistake" not in message
    message = raises(feedback.check_conv2d_backward, stride_only_in_x, "x_bar")
    assert "stride 2" in message and "is wrong at entry" in message and "known mistake" not in message


def test_embedding_mistakes_are_named():
    def assigned(tokens, y_bar, rows):
        E_bar = np.zeros((rows, y_bar.shape[-1]))
        E_bar[tokens.reshape(-1)] = y_bar.reshape(-1, y_bar.shape[-1])
        return E_bar

    def averaged(tokens, y_bar, rows):
        counts = np.bincount(tokens.reshape(-1), minlength=rows)[:, None]
        return embedding_grad(tokens, y_bar, rows) / np.maximum(counts, 1)

    def changed(change):
        return lambda tokens, y_bar, rows: change(embedding_grad(tokens, y_bar, rows), tokens, rows)

    wrong = {
        "the rows are shifted by one": lambda tokens, y_bar, rows: embedding_grad(tokens - 1, y_bar, rows),
        "averaged over all the tokens": changed(lambda g, tokens, rows: g / tokens.size),
        "the gradient has tokens.max() + 1 rows": changed(lambda g, tokens, rows: g[: tokens.max() + 1]),
        "the table's gradient is transposed": changed(lambda g, *a: g.T),
        "the sign of the table's gradient is flipped": changed(lambda g, *a: -g),
    }
    for mistake, answer in wrong.items():
        assert mistake in raises(feedback.check_embedding_grad, answer, "the table's gradient"), mistake
    message = raises(feedback.check_embedding_grad, changed(lambda g, *a: g / 2), "the table's gradient")
    assert "is wrong at entry" in message and "known mistake" not in message
    message = raises(feedback.check_embedding_grad, assigned, "the table's gradient")
    assert "a repeated token keeps only one of its gradients" in message and "np.add.at" in message
    assert "the mean of its gradients" in raises(feedback.check_embedding_grad, averaged, "the table's gradient")
    assert "shape" in raises(feedback.check_embedding_grad, lambda t, y, r: embedding_grad(t, y, r).T, "gradient")


def test_rnn_mistakes_are_named():
    def stopped(x1, x2, W_x, W_h, b, h2_bar):  # the gradient does not go back through h1
        h1 = np.tanh(x1 @ W_x.T + b)
        z2_bar = h2_bar * (1 - np.tanh(x2 @ W_x.T + h1 @ W_h.T + b) ** 2)
        return z2_bar.T @ x2, z2_bar.T @ h1, z2_bar.sum(axis=0)

    def no_tanh_1(x1, x2, W_x, W_h, b, h2_bar):
        h1 = np.tanh(x1 @ W_x.T + b)
        z2_bar = h2_bar * (1 - np.tanh(x2 @ W_x.T + h1 @ W_h.T + b) ** 2)
        z1_bar = z2_bar @ W_h
        return z2_bar.T @ x2 + z1_bar.T @ x1, z2_bar.T @ h1, z2_bar.sum(axis=0) + z1_bar.sum(axis=0)

    def with_h2(x1, x2, W_x, W_h, b, h2_bar):
        W_x_bar, _, b_bar = rnn_two_step_grads(x1, x2, W_x, W_h, b, h2_bar)
        h2 = np.tanh(x2 @ W_x.T + np.tanh(x1 @ W_x.T + b) @ W_h.T + b)
        return W_x_bar, (h2_bar * (1 - h2 * h2)).T @ h2, b_bar

    check = feedback.check_rnn_two_step_grads
    assert "only step 2's term" in raises(check, stopped, "W_x_bar")
    assert "tanh's derivative at step 1" in raises(check, no_tanh_1, "W_x_bar")
    assert "it multiplies by h2" in raises(check, with_h2, "W_h_bar")
    assert "the sign is flipped" in raises(check, lambda *a: tuple(-g for g in rnn_two_step_grads(*a)), "W_x_bar")
    assert "should return three arrays" in raises(check, lambda *a: rnn_two_step_grads(*a)[:2], "rnn_two_step_grads")
    assert "is a `return` missing" in raises(check, lambda *a: None, "rnn_two_step_grads")


def rnn_with(x1, x2, W_x, W_h, b, h2_bar, slope=lambda h, z: 1 - h * h, b_1=True, transposed=False, h0=None, **at_1):
    """Two steps of the tanh cell by hand, with a student's slips: ``slope`` for tanh′ (``slope_1`` at step 1, if
    given), b left out of step 1,
    W_h transposed in h1's gradient, a step-1 term of W_h_bar from ``h0`` (which should be 0)."""
    z1 = x1 @ W_x.T + b * b_1
    h1 = np.tanh(z1)
    z2 = x2 @ W_x.T + h1 @ W_h.T + b
    h2 = np.tanh(z2)
    z2_bar = h2_bar * slope(h2, z2)
    z1_bar = (z2_bar @ (W_h.T if transposed else W_h)) * at_1.get("slope_1", slope)(h1, z1)
    W_h_bar = z2_bar.T @ h1 + (0 if h0 is None else z1_bar.T @ {"h1": h1, "h2": h2}[h0])
    return (z2_bar.T @ x2 + z1_bar.T @ x1, W_h_bar, z2_bar.sum(axis=0) + z1_bar.sum(axis=0))


def test_rnn_new_mistakes_are_named_when_they_fit_both_sizes():
    def changed(part, change):
        def answer(*a):
            grads = list(rnn_two_step_grads(*a))
            grads[part] = change(grads[part], *a)
            return tuple(grads)

        return answer

    def wrong_step_1(x1, x2, W_x, W_h, b, h2_bar):  # step 1's term multiplies by x2
        W_x_bar, W_h_bar, b_bar = rnn_two_step_grads(x1, x2, W_x, W_h, b, h2_bar)
        h1 = np.tanh(x1 @ W_x.T + b)
        z2_bar = h2_bar * (1 - np.tanh(x2 @ W_x.T + h1 @ W_h.T + b) ** 2)
        z1_bar = (z2_bar @ W_h) * (1 - h1 * h1)
        return W_x_bar - z1_bar.T @ x1 + z1_bar.T @ x2, W_h_bar, b_bar

    check = feedback.check_rnn_two_step_grads
    wrong = {
        "tanh′ is taken at the pre-activation, 1 - z²": lambda *a: rnn_with(*a, slope=lambda h, z: 1 - z * z),
        "sigmoid′, h(1 - h), is used for tanh′ = 1 - h², at both steps": lambda *a: rnn_with(
            *a, slope=lambda h, z: h * (1 - h)
        ),
        "b is left out of step 1's pre-activation": lambda *a: rnn_with(*a, b_1=False),
        "h1's gradient is z2_bar W_h, not z2_bar W_hᵀ": lambda *a: rnn_with(*a, transposed=True),
        "the state before step 1 is h0 = 0": lambda *a: rnn_with(*a, h0="h1"),
        "H[t - 1] at t = 0 is the last state": lambda *a: rnn_with(*a, h0="h2"),
        "step 1's term multiplies by x2": wrong_step_1,
        "W_h_bar is transposed": changed(1, lambda g, *a: g.T),
        "b_bar is averaged over the batch": changed(2, lambda g, x1, *a: g / len(x1)),
        "the two results are swapped: return (W_x_bar, W_h_bar)": lambda *a: (lambda g: (g[1], g[0], g[2]))(
            rnn_two_step_grads(*a)
        ),
    }
    for mistake, answer in wrong.items():
        assert mistake in raises(check, answer, r"W_x_bar|W_h_bar|b_bar"), mistake
    # tanh′ at the pre-activation at step 2 and sigmoid′ at step 1: no slip of the derivation, so only located.
    message = raises(
        check, lambda *a: rnn_with(*a, slope=lambda h, z: 1 - z * z, slope_1=lambda h, z: h * (1 - h)), "W_x"
    )
    assert "is wrong at entry" in message and "known mistake" not in message


def hypot_jvp(a, a_dot, b, b_dot):
    c = math.sqrt(a * a + b * b)
    return c, (a * a_dot + b * b_dot) / c


def test_hypot_jvp_right_answers_pass_and_mistakes_are_named():
    c, c_dot = jax.jvp(jnp.hypot, (3.0, -4.0), (0.5, 2.0))
    assert np.allclose(hypot_jvp(3.0, 0.5, -4.0, 2.0), (c, c_dot))
    for seed in (0, 35, 36):
        feedback.check_hypot_jvp(hypot_jvp, seed=seed)
    feedback.check_hypot_jvp(lambda *a: [np.float32(v) for v in hypot_jvp(*a)])
    wrong = {
        "c is a² + b², without the square root": lambda a, ad, b, bd: (a * a + b * b, hypot_jvp(a, ad, b, bd)[1]),
        "b's tangent is left out": lambda a, ad, b, bd: (math.hypot(a, b), a * ad / math.hypot(a, b)),
        "it is not divided by c": lambda a, ad, b, bd: (math.hypot(a, b), a * ad + b * bd),
        "it is half the tangent": lambda a, ad, b, bd: (math.hypot(a, b), hypot_jvp(a, ad, b, bd)[1] / 2),
        "the tangents are left out": lambda a, ad, b, bd: (math.hypot(a, b), (a + b) / math.hypot(a, b)),
        "should return two numbers": lambda *a: hypot_jvp(*a)[1],
        "the sign of the tangent is flipped": lambda *a: (hypot_jvp(*a)[0], -hypot_jvp(*a)[1]),
        "c and c_dot are swapped": lambda *a: hypot_jvp(*a)[::-1],
    }
    for mistake, answer in wrong.items():
        assert mistake in raises(feedback.check_hypot_jvp, answer, r"hypot_jvp|c_dot|c is")

"""The gradient checks (numeric_grad, normalised_grads, softplus_vjp, layernorm_backward, tanh_hvp) name a
mistake only when one slip of the reference derivation gives the answer on every problem they try.

Each wrong answer is planted as a function, as a student who makes that mistake would write it, and run
through the function check on the public seed and on the hidden ones: the message names the slip, or,
for an answer that slips on one problem only, names none and locates the wrong entry.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chainrule_course.exercises import gradient_checks as checks
from chainrule_course.exercises.answers import AnswerError

SEEDS = (0, 7, 19, 31)  # the public check and others


def message(check, answer, seed: int = 0) -> str:
    """The message ``check`` raises for ``answer``."""
    with pytest.raises(AnswerError) as raised, np.errstate(all="ignore"):
        check(answer, seed=seed)
    return str(raised.value)


def assert_named(check, answer, said: str, seeds=SEEDS) -> None:
    for seed in seeds:
        text = message(check, answer, seed)
        assert "known mistake" in text and said in text, (seed, text)


def assert_located(check, answer, seeds=SEEDS) -> None:
    for seed in seeds:
        text = message(check, answer, seed)
        assert "known mistake" not in text and " is wrong at entry " in text and "expected" in text, (seed, text)


# --------------------------------------------------------------------------- numeric_grad


def numeric(A, x, step, kind="central", alone=True):
    """numeric_grad with one or two planted slips (``kind``: which two points; ``alone``: one entry at a time)."""
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        ahead, behind = x.copy(), x.copy()
        if alone:
            ahead[index] += step
            behind[index] -= step
        else:
            ahead, behind = x + step, x - step
        f_up, f_down, f_here = (checks.numeric_target(A, v) for v in (ahead, behind, x))
        grad[index] = {
            "central": (f_up - f_down) / (2 * step),
            "forward": (f_up - f_here) / step,
            "backward": (f_here - f_down) / step,
            "one step": (f_up - f_down) / step,
            "flipped": (f_down - f_up) / (2 * step),
        }[kind]
    return grad


def test_numeric_grad_names_each_slip_on_every_problem():
    for seed in SEEDS:
        checks.check_numeric_grad(numeric, seed=seed)
    checks.check_numeric_grad(lambda A, x, step: torch.tensor(numeric(A, x, step), dtype=torch.float32))
    named = {
        "forward": "it is a forward difference",
        "backward": "it is a backward difference",
        "one step": "it divides by step, but the two points are 2 * step apart",
        "flipped": "the sign of the difference is flipped",
    }
    for kind, said in named.items():
        assert_named(checks.check_numeric_grad, lambda A, x, s, k=kind: numeric(A, x, s, k), said)
    assert_named(checks.check_numeric_grad, lambda A, x, s: numeric(A, x, s, alone=False), "every entry of x at once")
    both = message(checks.check_numeric_grad, lambda A, x, s: numeric(A, x, s, "forward", alone=False))
    assert "every entry of x at once" in both and "forward difference" in both, both


def test_numeric_grad_names_nothing_for_a_slip_on_one_problem():
    """A forward difference only for a 1-D x fits no slip on both problems: the 2-D x's entry is located."""
    assert_located(checks.check_numeric_grad, lambda A, x, s: numeric(A, x, s, "forward" if x.ndim == 1 else "central"))


# --------------------------------------------------------------------------- normalised_grads (10.2)


def normalised(x, w, sign=1.0, power=3, half=False):
    r = np.sqrt(x @ x)
    through = (w @ x) * x / r**power * (0.5 if half else 1.0)
    return w / r, w / r - sign * through


def test_normalised_grads_accepts_a_pair_or_the_rows_of_one_array():
    for seed in SEEDS:
        checks.check_normalised_grads(normalised, seed=seed)
        checks.check_normalised_grads(lambda x, w: np.stack(normalised(x, w)), seed=seed)
        checks.check_normalised_grads(lambda x, w: np.array([list(g) for g in normalised(x, w)]), seed=seed)
    checks.check_normalised_grads(lambda x, w: torch.stack([torch.tensor(g) for g in normalised(x, w)]))
    checks.check_normalised_grads(lambda x, w: [g.astype(np.float32) for g in normalised(x, w)])


def test_normalised_grads_says_which_form_is_expected():
    said = message(checks.check_normalised_grads, lambda x, w: np.column_stack(normalised(x, w)))
    assert "should return two gradients, (detached, full): a pair of arrays of length 3, or one array of shape " in said
    assert "(2, 3) whose rows are they; it returned one ndarray of shape (3, 2)." in said, said
    said = message(checks.check_normalised_grads, lambda x, w: normalised(x, w)[1])
    assert "it returned one ndarray of shape (3,)" in said, said


def test_normalised_grads_names_a_swapped_order_as_a_swap():
    swapped = "the two results are swapped: return (detached, full), in that order"
    for answer in (lambda x, w: normalised(x, w)[::-1], lambda x, w: np.stack(normalised(x, w)[::-1])):
        assert_named(checks.check_normalised_grads, answer, swapped)
        text = message(checks.check_normalised_grads, answer)
        assert "without detaching" not in text.split("known mistake")[1], text


def test_normalised_grads_names_each_slip_of_the_derivation():
    named = {
        "detached is w": (lambda x, w: (w, normalised(x, w)[1]), "the detached gradient is w"),
        "detached is full": (lambda x, w: (normalised(x, w)[1],) * 2, "the detached gradient is the one without"),
        "term missing": (lambda x, w: (normalised(x, w)[0],) * 2, "the term through |x|, -(w·x) x / |x|³, is missing"),
        "sign": (lambda x, w: normalised(x, w, sign=-1.0), "the term through |x| has the wrong sign"),
        "power": (lambda x, w: normalised(x, w, power=2), "divided by |x|² instead of |x|³"),
        "half": (lambda x, w: normalised(x, w, half=True), "the term through |x| is halved"),
    }
    for kind, (answer, said) in named.items():
        assert_named(checks.check_normalised_grads, answer, said)
    # the sign slipped and the two swapped: both named
    both = message(checks.check_normalised_grads, lambda x, w: normalised(x, w, sign=-1.0)[::-1])
    assert "swapped" in both and "wrong sign" in both, both


def test_normalised_grads_names_nothing_for_a_slip_on_one_length():
    assert_located(checks.check_normalised_grads, lambda x, w: normalised(x, w, sign=-1.0 if len(x) < 5 else 1.0))


# --------------------------------------------------------------------------- softplus_vjp


def sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def test_softplus_vjp_names_each_slip():
    for seed in SEEDS:
        checks.check_softplus_vjp(lambda x, g: g * sigmoid(x), seed=seed)
    checks.check_softplus_vjp(lambda x, g: (g * sigmoid(x)).tolist())
    named = {
        "sign": (lambda x, g: g * sigmoid(-x), "the sign of x is flipped"),
        "no g": (lambda x, g: sigmoid(x), "without multiplying by the incoming gradient g"),
        "sigmoid's": (lambda x, g: g * sigmoid(x) * sigmoid(-x), "the derivative of the sigmoid"),
        "the function": (lambda x, g: g * np.logaddexp(0, x), "the function instead of its derivative"),
        "at the output": (lambda x, g: g * sigmoid(np.logaddexp(0, x)), "the output y = softplus(x)"),
    }
    for kind, (answer, said) in named.items():
        assert_named(checks.check_softplus_vjp, answer, said)
    text = message(checks.check_softplus_vjp, lambda x, g: g * np.exp(x) / (1 + np.exp(x)))
    assert "exp of a large number overflows" in text, text


def test_softplus_vjp_names_nothing_for_a_slip_on_one_shape():
    assert_located(checks.check_softplus_vjp, lambda x, g: g * sigmoid(-x if x.ndim == 1 else x))


# --------------------------------------------------------------------------- layernorm_backward


def layernorm(x, gamma, y_bar, eps, **slips):
    """layernorm_backward with the ``slips`` planted (each a keyword, see the code)."""
    axis = slips.get("axis", 1)
    ddof, eps_used = slips.get("ddof", 0), slips.get("eps_used", eps)
    var = x.var(axis=axis, keepdims=True, ddof=ddof)
    s = np.sqrt(var) + eps_used if slips.get("outside") else np.sqrt(var + eps_used)
    x_hat = (x - x.mean(axis=axis, keepdims=True)) / s
    g = y_bar if slips.get("no_gamma") else gamma * y_bar
    count = slips.get("count", x.shape[axis])
    mean_path = g.sum(axis=axis, keepdims=True) / count
    variance_path = x_hat * (g * x_hat).sum(axis=axis, keepdims=True) / count
    x_bar = (g - mean_path - variance_path) / s
    s1 = np.sqrt(x.var(axis=1, keepdims=True, ddof=ddof)) + eps_used if slips.get("outside") else None
    s1 = np.sqrt(x.var(axis=1, keepdims=True, ddof=ddof) + eps_used) if s1 is None else s1
    x_hat1 = (x - x.mean(axis=1, keepdims=True)) / s1
    rows = np.mean if slips.get("mean") else np.sum
    gamma_bar = rows(y_bar * (x if slips.get("x_for_x_hat") else x_hat1), axis=0)
    return x_bar, gamma_bar, rows(y_bar, axis=0)


def test_layernorm_backward_passes_right_answers_in_other_forms():
    def einsum_form(x, gamma, y_bar, eps):
        d, centred = x.shape[1], x - x.mean(1, keepdims=True)
        inverse = 1 / np.sqrt((centred**2).mean(1, keepdims=True) + eps)
        x_hat, g = centred * inverse, gamma * y_bar
        x_bar = inverse / d * (d * g - g.sum(1, keepdims=True) - x_hat * (g * x_hat).sum(1, keepdims=True))
        return [x_bar, np.einsum("ij,ij->j", y_bar, x_hat), y_bar.sum(0)]

    for seed in SEEDS:
        checks.check_layernorm_backward(layernorm, seed=seed)
        checks.check_layernorm_backward(einsum_form, seed=seed)
    checks.check_layernorm_backward(lambda *a: tuple(torch.tensor(g, dtype=torch.float32) for g in layernorm(*a)))


def test_layernorm_reference_derivation_is_chainrules():
    for seed in SEEDS:
        for p in checks._layernorm_problems(seed):
            for ours, theirs in zip(checks.LAYERNORM.right(p), layernorm(*p.values()), strict=True):
                np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


LAYERNORM_SLIPS = {
    "eps left out": ({"eps_used": 0.0}, "eps is left out of the square root"),
    "eps written out": ({"eps_used": 1e-5}, "eps is 1e-5 written out; use the argument eps"),
    "eps outside": ({"outside": True}, "eps is added outside the square root"),
    "sums for means": ({"count": 1}, "the means are sums: their 1/d is missing"),
    "ddof=1": ({"ddof": 1}, "it divides the variance by d - 1 (ddof=1)"),
    "gamma left out": ({"no_gamma": True}, "gamma is left out"),
    "batch axis": ({"axis": 0}, "it normalises each column over the batch"),
    "mean for sum": ({"mean": True}, "gamma_bar and beta_bar average over the rows"),
    "x for x_hat": ({"x_for_x_hat": True}, "gamma_bar multiplies y_bar by x, not by x_hat"),
}


@pytest.mark.parametrize("kind", LAYERNORM_SLIPS)
def test_layernorm_backward_names_each_slip(kind):
    planted, said = LAYERNORM_SLIPS[kind]
    assert_named(checks.check_layernorm_backward, lambda *a: layernorm(*a, **planted), said)


def test_layernorm_backward_names_the_mean_for_n_and_the_swapped_sums():
    def divided_by_n(x, gamma, y_bar, eps):
        return layernorm(x, gamma, y_bar, eps, count=x.shape[0])

    assert_named(checks.check_layernorm_backward, divided_by_n, "the means divide by n (the number of rows)")
    swapped = "the two results are swapped: return (gamma_bar, beta_bar), in that order"
    assert_named(checks.check_layernorm_backward, lambda *a: (lambda b: (b[0], b[2], b[1]))(layernorm(*a)), swapped)
    both = message(checks.check_layernorm_backward, lambda *a: layernorm(*a, eps_used=0.0, mean=True))
    assert "eps is left out" in both and "average over the rows" in both, both


def test_layernorm_backward_names_nothing_for_a_slip_on_one_shape():
    def eps_left_out_when_wide(x, gamma, y_bar, eps):
        return layernorm(x, gamma, y_bar, eps, eps_used=0.0 if x.shape[1] > 5 else eps)

    assert_located(checks.check_layernorm_backward, eps_left_out_when_wide)


# --------------------------------------------------------------------------- tanh_hvp (7.2)


def hvp(W, x, v, slope=None, tangent=None):
    """tanh_hvp with tanh' in t_dot replaced by ``slope(z, t)`` or the tangent of 1 - t * t by ``tangent(t, t_dot)``."""
    z = W @ x
    t = np.tanh(z)
    t_dot = (slope(z, t) if slope else 1 - t * t) * (W @ v)
    return W.T @ (tangent(t, t_dot) if tangent else -2 * t * t_dot)


def test_tanh_hvp_names_tanh_prime_at_the_output_or_the_pre_activation():
    for seed in SEEDS:
        checks.check_tanh_hvp(hvp, seed=seed)
    checks.check_tanh_hvp(lambda W, x, v: hvp(W, x, v).tolist())
    named = {
        "at the output": (lambda z, t: 1 - np.tanh(t) ** 2, "tanh' is taken at the output"),
        "at the pre-activation": (lambda z, t: 1 - z * z, "tanh' is taken at the pre-activation"),
        "sigmoid's": (lambda z, t: 1 / (1 + np.exp(-z)) * (1 - 1 / (1 + np.exp(-z))), "the sigmoid's derivative"),
        "missing": (lambda z, t: 1.0, "the factor (1 - t * t) of t_dot is missing"),
    }
    for kind, (slope, said) in named.items():
        assert_named(checks.check_tanh_hvp, lambda W, x, v, s=slope: hvp(W, x, v, slope=s), said)


def test_tanh_hvp_names_each_slip_in_the_tangent():
    named = {
        "half": (lambda t, d: -t * d, "it is half the product"),
        "sign": (lambda t, d: 2 * t * d, "the sign is flipped"),
        "half and flipped": (lambda t, d: t * d, "half the product with the sign flipped"),
        "first derivative": (lambda t, d: d, "it applies tanh's first derivative"),
        "no t": (lambda t, d: -2 * d, "the factor t of -2 t * t_dot is missing"),
    }
    for kind, (tangent, said) in named.items():
        assert_named(checks.check_tanh_hvp, lambda W, x, v, g=tangent: hvp(W, x, v, tangent=g), said)
    assert_named(checks.check_tanh_hvp, lambda W, x, v: hvp(W, v, x), "x and v are swapped")
    both = message(
        checks.check_tanh_hvp, lambda W, x, v: hvp(W, x, v, slope=lambda z, t: 1 - z * z, tangent=np.multiply)
    )
    assert "pre-activation" in both and "half the product with the sign flipped" in both, both


def test_tanh_hvp_names_nothing_for_a_slip_on_one_shape():
    def pre_activation_when_tall(W, x, v):
        return hvp(W, x, v, slope=(lambda z, t: 1 - z * z) if W.shape[0] > W.shape[1] else None)

    assert_located(checks.check_tanh_hvp, pre_activation_when_tall)

"""The checks of the exercises on trusting and shaping gradients, with numpy.

A numeric gradient by central differences (tensors chapter), the gradient through a detached
norm and a stable custom VJP for softplus (frameworks), a Hessian-vector product by hand
(forward mode), and the backward pass of layer normalisation (depth). Like
:mod:`chainrule_course.exercises.array_checks` they load numpy, and
:mod:`chainrule_course.exercises.feedback` loads them the first time a check cell asks for one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from chainrule.autograd import grad
from chainrule.tensor import Tensor

from ..grading.contract import allowed, seeded
from .answers import ATOL, RTOL, AnswerError, Mistake, check_array
from .calling import call

# --------------------------------------------------------------------------- a numeric gradient (tensors)


def numeric_target(A, x) -> float:
    """The tensors chapter's function for a numeric gradient, f(A, x) = sum(tanh(A @ x.ravel())) + sum(x**3) / 3."""
    x = np.asarray(x, dtype=float)
    return float(np.tanh(A @ x.ravel()).sum() + (x**3).sum() / 3)


def _numeric_problem(seed: int, index: int):
    """A, x and the step of one call of :func:`check_numeric_grad`: x is 1-D, then 2-D."""
    rng = np.random.default_rng(seeded(seed) * 2 + index)
    if seed == 0:
        shape, step = ((4,), (2, 3))[index], (0.05, 0.02)[index]
    else:
        shape = (int(rng.integers(3, 7)),) if index == 0 else tuple(int(n) for n in rng.integers(2, 5, size=2))
        step = float(rng.uniform(0.02, 0.08))
    x = rng.normal(size=shape)
    return rng.normal(size=(5, x.size)), x, step


def _one_sided(f, x, step, sign):
    """Forward (sign 1) or backward (sign -1) differences, entry by entry, over ``step``."""
    grad, here = np.zeros_like(x), f(x)
    for index in np.ndindex(x.shape):
        moved = x.copy()
        moved[index] += sign * step
        grad[index] = sign * (f(moved) - here) / step
    return grad


@allowed("numpy")
def check_numeric_grad(numeric_grad: Callable, seed: int = 0) -> None:
    """``numeric_grad(A, x, step)`` must return central differences of f(A, x) in x, one entry at a time.

    f is :func:`numeric_target`, which the exercise gives.

    Two points are tried, x of one and of two dimensions, with a large step, at which a
    one-sided difference is far from the central one.
    """
    name = "numeric_grad"
    for index in range(2):
        A, x, step = _numeric_problem(seed, index)

        def f(values, A=A):
            return numeric_target(A, values)

        forward, backward = _one_sided(f, x, step, 1), _one_sided(f, x, step, -1)
        expected = (forward + backward) / 2  # the central difference
        ones = np.ones_like(x)
        along_ones = (f(x + step * ones) - f(x - step * ones)) / (2 * step)
        result = call(name, numeric_grad, A, x, step, names=("A", "x", "step"))
        check_array(  # an approximation is asked: it may differ by the rounding of f over the step
            f"the gradient {name} returns at an x of shape {x.shape} with step {step:g}",
            result,
            expected,
            [
                Mistake("it is a forward difference (f(x + step) - f(x)) / step, not a central one", forward),
                Mistake("it is a backward difference (f(x) - f(x - step)) / step, not a central one", backward),
                Mistake("it divides by step, but the two points are 2 * step apart", 2 * expected),
                Mistake(
                    "the second point is x itself: after x[i] += step, x[i] -= step only brings it back; "
                    "move it by 2 * step, or start from a fresh copy",
                    forward / 2,
                ),
                Mistake(
                    "it moves every entry of x at once, which gives the derivative along a vector of ones, "
                    "not one partial derivative per entry",
                    np.full_like(x, along_ones),
                ),
            ],
            rtol=RTOL,
            atol=ATOL,
        )


# --------------------------------------------------------------------------- a detached norm (frameworks)


@allowed("numpy")
def check_normalised_grads(normalised_grads: Callable, seed: int = 0) -> None:
    """``normalised_grads(x, w)`` must return dL/dx for L = w·x / |x|, with |x| detached and without.

    Two lengths of x are tried; the two answers are checked one after the other.
    """
    name = "normalised_grads"
    rng = np.random.default_rng(seeded(seed))
    for size in (3, 5) if seed == 0 else (int(rng.integers(2, 5)), int(rng.integers(5, 9))):
        x, w = rng.normal(size=size), rng.normal(size=size)
        r = float(np.sqrt(x @ x))
        detached, through = w / r, (w @ x) * x / r**3
        result = call(name, normalised_grads, x, w, names=("x", "w"))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
            raise AnswerError(name, f"{name} should return two gradients (detached, full), but it returned {got}.")
        where = f"for x of length {size}"
        check_array(
            f"the gradient with the norm detached {where}",
            result[0],
            detached,
            [
                Mistake(
                    "it is the gradient without detaching: the term through |x| is dropped when detached",
                    detached - through,
                ),
                Mistake("it is w: the division by |x| still applies to a detached norm", w),
            ],
        )
        check_array(
            f"the gradient without detaching {where}",
            result[1],
            detached - through,
            [
                Mistake("the term through |x|, -(w·x) x / |x|³, is missing: that is the detached gradient", detached),
                Mistake("the term through |x| has the wrong sign: d(1/r)/dr is -1/r²", detached + through),
                Mistake(
                    "the term through |x| is divided by |x|² instead of |x|³: d|x|/dx is x / |x|",
                    detached - through * r,
                ),
            ],
        )


# --------------------------------------------------------------------------- a stable custom VJP (frameworks)


@allowed("numpy")
def check_softplus_vjp(softplus_vjp: Callable, seed: int = 0) -> None:
    """``softplus_vjp(x, g)`` must return g * sigmoid(x), finite for every float64 x (|x| up to 1000)."""
    name = "softplus_vjp"
    rng = np.random.default_rng(seeded(seed))
    for shape in ((6,), (2, 4)) if seed == 0 else ((int(rng.integers(5, 9)),), (2, int(rng.integers(3, 6)))):
        x = rng.normal(scale=3.0, size=shape)
        x.flat[0], x.flat[1] = rng.uniform(710, 1000), -rng.uniform(710, 1000)  # where exp overflows
        g = rng.normal(size=shape)
        sigmoid = np.exp(-np.logaddexp(0.0, -x))  # 1 / (1 + e^-x), without overflow
        with np.errstate(all="ignore"):
            result = call(name, softplus_vjp, x, g, names=("x", "g"))
        where = f"at an x of shape {shape} (entries from {x.min():.0f} to {x.max():.0f})"
        array = np.asarray(result, dtype=float) if isinstance(result, np.ndarray) else None
        if array is not None and array.shape == shape and not np.isfinite(array).all():
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
            raise AnswerError(
                name,
                f"{name} returned {array[bad]} at x = {x[bad]:.4g} {where}: exp of a large number overflows "
                "to inf, and inf / inf is nan. Compute the sigmoid from exp(-|x|), which is at most 1.",
                "overflow",
            )
        check_array(
            f"the gradient {name} returns {where}",
            result,
            g * sigmoid,
            [
                Mistake("it returns sigmoid(x) without multiplying by the incoming gradient g", sigmoid),
                Mistake("it returns g * sigmoid(-x): the sign of x is flipped", g * (1 - sigmoid)),
                Mistake(
                    "it returns g * sigmoid(x) * (1 - sigmoid(x)), the derivative of the sigmoid, not of softplus",
                    g * sigmoid * (1 - sigmoid),
                ),
                Mistake("it returns g * softplus(x), the function instead of its derivative", g * np.logaddexp(0, x)),
            ],
        )


# --------------------------------------------------------------------------- layer normalisation (depth)


def _normalised_backward(x, gamma, y_bar, eps, axis, mean_path=True, variance_path=True, ddof=0):
    """The input gradient of normalising x along ``axis``, with either path left out, or the variance
    divided by n - ``ddof`` in the formula written for n (the planted mistakes)."""
    s = np.sqrt(x.var(axis=axis, keepdims=True, ddof=ddof) + eps)
    x_hat = (x - x.mean(axis=axis, keepdims=True)) / s
    xh_bar = gamma * y_bar
    x_bar = xh_bar.copy()
    if mean_path:
        x_bar = x_bar - xh_bar.mean(axis=axis, keepdims=True)
    if variance_path:
        x_bar = x_bar - x_hat * (xh_bar * x_hat).mean(axis=axis, keepdims=True)
    return x_bar / s


def _layernorm_terms(x, gamma, y_bar, eps) -> float:
    """The largest sum of |terms| in an entry of layer normalisation's x_bar, which cancel where d is small."""
    s = np.sqrt(x.var(axis=1, keepdims=True) + eps)
    x_hat, xh_bar = np.abs(x - x.mean(axis=1, keepdims=True)) / s, np.abs(gamma * y_bar)
    terms = xh_bar + xh_bar.mean(axis=1, keepdims=True) + x_hat * (xh_bar * x_hat).mean(axis=1, keepdims=True)
    return float(np.max(terms / s))


def _layernorm_grads(x, gamma, y_bar, eps, ddof=0):
    """(x_bar, gamma_bar) of layer normalisation with the variance divided by d - ``ddof``: the gradients
    of a forward pass written with that variance and that ``eps`` (the planted mistakes), by chainrule."""
    d = x.shape[1]
    xt, gt = Tensor(x.copy(), requires_grad=True), Tensor(gamma.copy(), requires_grad=True)
    centred = xt - xt.mean(axis=1, keepdims=True)
    scale = ((centred**2).sum(axis=1, keepdims=True) * (1.0 / (d - ddof)) + eps) ** 0.5
    (gt * centred / scale).backward(gradient=y_bar)
    return xt.grad, gt.grad


@allowed("numpy")
def check_layernorm_backward(layernorm_backward: Callable, seed: int = 0) -> None:
    """``layernorm_backward(x, gamma, y_bar, eps)`` must return (x_bar, gamma_bar, beta_bar) of layer norm.

    The expected gradients come from chainrule's backward pass through the composed
    normalisation; two shapes (n, d) are tried, with n != d so that the axes cannot be confused.
    """
    name = "layernorm_backward"
    rng = np.random.default_rng(seeded(seed))
    shapes = [(6, 4), (3, 7)] if seed == 0 else [(int(rng.integers(5, 9)), int(rng.integers(2, 5))), (3, 6)]
    for n, d in shapes:
        x, gamma = rng.normal(1.0, 2.0, size=(n, d)), rng.normal(size=d)
        y_bar, eps = rng.normal(size=(n, d)), 1e-5
        xt, gt, bt = (Tensor(a.copy(), requires_grad=True) for a in (x, gamma, np.zeros(d)))
        centred = xt - xt.mean(axis=1, keepdims=True)
        scale = ((centred**2).mean(axis=1, keepdims=True) + eps) ** 0.5
        (gt * centred / scale + bt).backward(gradient=y_bar)
        result = call(name, layernorm_backward, x, gamma, y_bar, eps, names=("x", "gamma", "y_bar", "eps"))
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
            raise AnswerError(name, f"{name} should return three arrays (x_bar, gamma_bar, beta_bar), not {got}.")
        where = f"for x of shape ({n}, {d})"
        x_hat = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + eps)
        sample, no_eps = _layernorm_grads(x, gamma, y_bar, eps, ddof=1), _layernorm_grads(x, gamma, y_bar, 0.0)
        sample_variance = "it divides the variance by d - 1 (ddof=1); layer normalisation divides by d"
        eps_left_out = "eps is left out of the square root: sqrt(var + eps)"
        check_array(
            f"x_bar {where}",
            result[0],
            xt.grad,
            [
                Mistake(
                    "it normalises each column over the batch (axis 0), as batch normalisation does; "
                    "layer normalisation normalises each row",
                    _normalised_backward(x, gamma, y_bar, eps, axis=0),
                ),
                Mistake(
                    "the path through the mean is missing: subtract the row mean of gamma * y_bar",
                    _normalised_backward(x, gamma, y_bar, eps, axis=1, mean_path=False),
                ),
                Mistake(
                    "the path through the variance is missing: subtract x_hat times the row mean of "
                    "gamma * y_bar * x_hat",
                    _normalised_backward(x, gamma, y_bar, eps, axis=1, variance_path=False),
                ),
                Mistake(
                    "gamma is left out: the gradient reaching x_hat is gamma * y_bar",
                    _normalised_backward(x, 1.0, y_bar, eps, axis=1),
                ),
                Mistake(sample_variance, sample[0]),
                Mistake(sample_variance, _normalised_backward(x, gamma, y_bar, eps, axis=1, ddof=1)),
                Mistake(eps_left_out, no_eps[0]),
            ],
            terms=_layernorm_terms(x, gamma, y_bar, eps),
        )
        check_array(
            f"gamma_bar {where}",
            result[1],
            gt.grad,
            [
                Mistake("it sums over the features (axis 1); gamma is shared by the rows", (y_bar * x_hat).sum(axis=1)),
                Mistake(sample_variance, sample[1]),
                Mistake(eps_left_out, no_eps[1]),
            ],
        )
        check_array(
            f"beta_bar {where}",
            result[2],
            bt.grad,
            [Mistake("it sums over the features (axis 1); beta is shared by the rows", y_bar.sum(axis=1))],
        )


# --------------------------------------------------------------------------- a Hessian-vector product (forward mode)


@allowed("numpy")
def check_tanh_hvp(tanh_hvp: Callable, seed: int = 0) -> None:
    """``tanh_hvp(W, x, v)`` must return the Hessian of sum(tanh(W @ x)) times v.

    The expected product comes from chainrule's backward pass run twice (reverse over
    reverse); two shapes of W are tried, neither square, so that W and its transpose
    cannot be confused.
    """
    name = "tanh_hvp"
    rng = np.random.default_rng(seeded(seed))
    shapes = [(5, 3), (2, 4)] if seed == 0 else [(int(rng.integers(4, 8)), 3), (2, int(rng.integers(3, 7)))]
    for m, k in shapes:
        W, x, v = rng.normal(size=(m, k)), rng.normal(size=k), rng.normal(size=k)
        leaf = Tensor(x.copy(), requires_grad=True)
        (g,) = grad((Tensor(W) @ leaf).tanh().sum(), leaf, create_graph=True)
        (expected,) = grad((g * Tensor(v)).sum(), leaf)
        result = call(name, tanh_hvp, W, x, v, names=("W", "x", "v"))
        t, Wv = np.tanh(W @ x), W @ v
        s = t * (1 - t * t)  # -2 s is tanh'' at W x
        tv = np.tanh(Wv)
        check_array(
            f"the product {name} returns for W of shape ({m}, {k})",
            result,
            expected.data,
            [
                Mistake("it is half the product: the tangent of t * t is 2 t * t_dot", -W.T @ (s * Wv)),
                Mistake("the sign is flipped: the tangent of 1 - t * t is -2 t * t_dot", 2 * W.T @ (s * Wv)),
                Mistake(
                    "the factor (1 - t * t) of t_dot is missing: tanh's tangent is (1 - t * t) * (W v), not W v",
                    -2 * W.T @ (t * Wv),
                ),
                Mistake(
                    "it applies tanh's first derivative, W.T ((1 - t * t) * W v); the product needs the "
                    "tangent of (1 - t * t), which is -2 t * t_dot",
                    W.T @ ((1 - t * t) * Wv),
                ),
                Mistake("it is the gradient W.T (1 - t * t), not its derivative along v", W.T @ (1 - t * t)),
                Mistake(
                    "it is half the product with the sign flipped: the tangent of 1 - t * t is -2 t * t_dot",
                    W.T @ (s * Wv),
                ),
                Mistake("the tangent of t * t is 2 t * t_dot, not t * t times it", -2 * W.T @ (t * s * Wv)),
                Mistake("the factor t of -2 t * t_dot is missing", -2 * W.T @ ((1 - t * t) * Wv)),
                Mistake(
                    "it is only the Hessian's diagonal times v; the product needs the whole Hessian, "
                    "W.T diag(-2 t (1 - t * t)) W, applied to v",
                    -2 * ((W * W).T @ s) * v,
                ),
                Mistake("x and v are swapped", -2 * W.T @ (tv * (1 - tv * tv) * (W @ x))),
            ],
        )

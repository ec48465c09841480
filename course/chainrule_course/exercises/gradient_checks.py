"""The checks of the exercises on trusting and shaping gradients, with numpy.

A numeric gradient by central differences (tensors chapter), the gradient through a detached
norm and a stable custom VJP for softplus (frameworks), a Hessian-vector product by hand
(forward mode), and the backward pass of layer normalisation (depth). Like
:mod:`chainrule_course.exercises.array_checks` they load numpy, and
:mod:`chainrule_course.exercises.feedback` loads them the first time a check cell asks for one.

Each check writes its right answer as a derivation (:mod:`chainrule_course.exercises.mistakes`),
calls the answer on two problems of different sizes, and names a mistake only when one slip of
the derivation gives the answer on both; otherwise its message locates the wrong entry.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from chainrule.autograd import grad
from chainrule.tensor import Tensor

from ..grading.contract import allowed, seeded
from .answers import ATOL, RTOL, AnswerError, check_array
from .array_checks import same
from .calling import call
from .mistakes import Derivation, Slips

# --------------------------------------------------------------------------- a numeric gradient (tensors)


def numeric_target(A, x) -> float:
    """The tensors chapter's function for a numeric gradient, f(A, x) = sum(tanh(A @ x.ravel())) + sum(x**3) / 3."""
    x = np.asarray(x, dtype=float)
    return float(np.tanh(A @ x.ravel()).sum() + (x**3).sum() / 3)


def _numeric_problem(seed: int, index: int):
    """A, x and the step of one call of :func:`check_numeric_grad`: x is 1-D, then 2-D."""
    rng = np.random.default_rng(seeded(seed) * 2 + index)
    shape: tuple[int, ...]
    if seed == 0:
        shape, step = ((4,), (2, 3))[index], (0.05, 0.02)[index]
    else:
        shape = (int(rng.integers(3, 7)),) if index == 0 else tuple(int(n) for n in rng.integers(2, 5, size=2))
        step = float(rng.uniform(0.02, 0.08))
    x = rng.normal(size=shape)
    return rng.normal(size=(5, x.size)), x, step


def _moved(A, x, step: float, alone: bool) -> np.ndarray:
    """f at x with one entry moved by ``step``, for each entry (``alone``), or at x with every entry moved."""
    if not alone:
        return np.full(x.shape, numeric_target(A, x + step))
    values = np.empty(x.shape)
    for index in np.ndindex(x.shape):
        moved = x.copy()
        moved[index] += step
        values[index] = numeric_target(A, moved)
    return values


def numeric_derivation(problem, at: Slips) -> np.ndarray:
    """Central differences of :func:`numeric_target` at ``problem`` = (A, x, step), with the slips of each step."""
    A, x, step = problem
    all_at_once = (
        "it moves every entry of x at once, which gives the derivative along a vector of ones, "
        "not one partial derivative per entry"
    )
    alone = at.choose("one entry at a time", True, {all_at_once: False})
    here, up, down = numeric_target(A, x), _moved(A, x, step, alone), _moved(A, x, -step, alone)
    upper, lower, apart = at.choose(
        "the two points",
        (up, down, 2 * step),
        {
            "it is a forward difference (f(x + step) - f(x)) / step, not a central one": (up, here, step),
            "it is a backward difference (f(x) - f(x - step)) / step, not a central one": (here, down, step),
            "the second point is x itself: after x[i] += step, x[i] -= step only brings it back; "
            "move it by 2 * step, or start from a fresh copy": (up, here, 2 * step),
        },
    )
    apart = at.choose(
        "the distance between the points",
        apart,
        {"it divides by step, but the two points are 2 * step apart": step} if apart == 2 * step else {},
    )
    return at.sign("the difference", (upper - lower) / apart, "f(x - step) - f(x + step)")


NUMERIC = Derivation(numeric_derivation)


@allowed("numpy")
def check_numeric_grad(numeric_grad: Callable, seed: int = 0) -> None:
    """``numeric_grad(A, x, step)`` must return central differences of f(A, x) in x, one entry at a time.

    f is :func:`numeric_target`, which the exercise gives.

    Two points are tried, x of one and of two dimensions, with a large step, at which a
    one-sided difference is far from the central one.
    """
    name = "numeric_grad"
    problems = [_numeric_problem(seed, index) for index in range(2)]
    received = [call(name, numeric_grad, A, x, step, names=("A", "x", "step")) for A, x, step in problems]
    mistake = NUMERIC.mistake(problems, received, same)
    for index, (problem, result) in enumerate(zip(problems, received, strict=True)):
        _, x, step = problem
        check_array(  # an approximation is asked: it may differ by the rounding of f over the step
            f"the gradient {name} returns at an x of shape {x.shape} with step {step:g}",
            result,
            NUMERIC.right(problem),
            mistake.on(index) if mistake else [],
            rtol=RTOL,
            atol=ATOL,
            guess=False,
        )


# --------------------------------------------------------------------------- a detached norm (frameworks)


def normalised_derivation(problem, at: Slips) -> tuple:
    """dL/dx for L = w·x / |x| at ``problem`` = (x, w): (with |x| detached, without), with the slips of each step."""
    x, w = problem
    r = float(np.sqrt(x @ x))
    through = at.choose(
        "the power of |x| in the term through |x|",
        (w @ x) * x / r**3,
        {"the term through |x| is divided by |x|² instead of |x|³: d|x|/dx is x / |x|": (w @ x) * x / r**2},
    )
    full = at.term(
        "the term through |x|, -(w·x) x / |x|³",
        w / r,
        -through,
        words={
            "missing": "the term through |x|, -(w·x) x / |x|³, is missing: that is the detached gradient",
            "sign": "the term through |x| has the wrong sign: d(1/r)/dr is -1/r²",
            "half": "the term through |x| is halved: d|x|/dx is x / |x| (the 2 of d(x·x)/dx cancels the "
            "square root's 1/2)",
        },
    )
    detached = at.choose(
        "the detached gradient",
        w / r,
        {
            "the detached gradient is w: the division by |x| still applies to a detached norm": w,
            "the detached gradient is the one without detaching: the term through |x| is dropped when detached": full,
        },
    )
    return at.swap("(detached, full)", detached, full)


NORMALISED = Derivation(normalised_derivation)


def _two_gradients(name: str, result, size: int) -> tuple:
    """The (detached, full) pair a function returned: two values, or one (2, n) array whose rows are they."""
    shape = getattr(result, "shape", None)
    if shape is not None and tuple(shape) == (2, size):
        return result[0], result[1]
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return tuple(result)
    if isinstance(result, (tuple, list)):
        got = f"{len(result)} values"
    else:
        got = f"one {type(result).__name__}" + (f" of shape {tuple(shape)}" if shape is not None else "")
    raise AnswerError(
        name,
        f"{name} should return two gradients, (detached, full): a pair of arrays of length {size}, or one "
        f"array of shape (2, {size}) whose rows are they; it returned {got}.",
    )


@allowed("numpy")
def check_normalised_grads(normalised_grads: Callable, seed: int = 0) -> None:
    """``normalised_grads(x, w)`` must return dL/dx for L = w·x / |x|, with |x| detached and without.

    Two lengths of x are tried; the two answers are checked one after the other. They may come
    as a pair or as the two rows of one array.
    """
    name = "normalised_grads"
    rng = np.random.default_rng(seeded(seed))
    problems = []
    for size in (3, 5) if seed == 0 else (int(rng.integers(2, 5)), int(rng.integers(5, 9))):
        problems.append((rng.normal(size=size), rng.normal(size=size)))
    received = [_two_gradients(name, call(name, normalised_grads, x, w, names=("x", "w")), len(x)) for x, w in problems]
    mistake = NORMALISED.mistake(problems, received, same)
    for index, (problem, result) in enumerate(zip(problems, received, strict=True)):
        right, where = NORMALISED.right(problem), f"for x of length {len(problem[0])}"
        for part, quantity in enumerate(("the gradient with the norm detached", "the gradient without detaching")):
            mistakes = mistake.on(index, part) if mistake else []
            check_array(f"{quantity} {where}", result[part], right[part], mistakes, guess=False)


# --------------------------------------------------------------------------- a stable custom VJP (frameworks)


def _sigmoid(x):
    """1 / (1 + e^-x), without overflow."""
    return np.exp(-np.logaddexp(0.0, -x))


def softplus_derivation(problem, at: Slips) -> np.ndarray:
    """g * sigmoid(x) at ``problem`` = (x, g), with the slips of each step."""
    x, g = problem
    s = _sigmoid(x)
    slope = at.choose(
        "softplus' = sigmoid",
        s,
        {
            "it uses g * sigmoid(-x): the sign of x is flipped": lambda: _sigmoid(-x),
            "it uses g * sigmoid(x) * (1 - sigmoid(x)), the derivative of the sigmoid, not of softplus": lambda: (
                s * (1 - s)
            ),
            "it uses g * softplus(x), the function instead of its derivative": lambda: np.logaddexp(0.0, x),
            "it takes the sigmoid of the output y = softplus(x), not of the input x": lambda: _sigmoid(
                np.logaddexp(0.0, x)
            ),
            "it uses tanh(x), but softplus' = sigmoid(x) = 1 / (1 + exp(-x))": lambda: np.tanh(x),
            "it uses ReLU's derivative (x > 0), but softplus is smooth: its derivative is sigmoid(x)": lambda: (
                x > 0
            ).astype(float),
        },
    )
    return at.choose(
        "the incoming gradient g",
        g * slope,
        {"it returns the slope without multiplying by the incoming gradient g": slope},
    )


SOFTPLUS = Derivation(softplus_derivation)


def _softplus_problem(rng, shape: tuple) -> tuple:
    """x (two entries beyond ±710, where exp overflows) and g of one shape."""
    x = rng.normal(scale=3.0, size=shape)
    x.flat[0], x.flat[1] = rng.uniform(710, 1000), -rng.uniform(710, 1000)
    return x, rng.normal(size=shape)


@allowed("numpy")
def check_softplus_vjp(softplus_vjp: Callable, seed: int = 0) -> None:
    """``softplus_vjp(x, g)`` must return g * sigmoid(x), finite for every float64 x (|x| up to 1000)."""
    name = "softplus_vjp"
    rng = np.random.default_rng(seeded(seed))
    shapes = ((6,), (2, 4)) if seed == 0 else ((int(rng.integers(5, 9)),), (2, int(rng.integers(3, 6))))
    problems = [_softplus_problem(rng, shape) for shape in shapes]
    with np.errstate(all="ignore"):
        received = [call(name, softplus_vjp, x, g, names=("x", "g")) for x, g in problems]
    mistake = SOFTPLUS.mistake(problems, received, same)
    for index, ((x, g), result) in enumerate(zip(problems, received, strict=True)):
        where = f"at an x of shape {x.shape} (entries from {x.min():.0f} to {x.max():.0f})"
        array = np.asarray(result, dtype=float) if isinstance(result, np.ndarray) else None
        if array is not None and array.shape == x.shape and not np.isfinite(array).all():
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
            raise AnswerError(
                name,
                f"{name} returned {array[bad]} at x = {x[bad]:.4g} {where}: exp of a large number overflows "
                "to inf, and inf / inf is nan. Compute the sigmoid from exp(-|x|), which is at most 1.",
                "overflow",
            )
        mistakes = mistake.on(index) if mistake else []
        check_array(f"the gradient {name} returns {where}", result, SOFTPLUS.right((x, g)), mistakes, guess=False)


# --------------------------------------------------------------------------- layer normalisation (depth)

SAMPLE_VARIANCE = "it divides the variance by d - 1 (ddof=1); layer normalisation divides by d"


def _normalised(at: Slips, x, axis: int, eps: float) -> tuple:
    """s, x_hat and the divisor of the variance path's mean, of normalising x along ``axis``, with the slips of
    the forward pass: a variance divided by count - 1 changes s, and the exact derivative of that forward
    pass divides the variance path's sum by count - 1 too (a formula written for count keeps its 1/count)."""
    count = x.shape[axis]
    centred = x - x.mean(axis=axis, keepdims=True)
    divisor, path = at.choose(
        "the variance's divisor",
        (count, None),
        {SAMPLE_VARIANCE: (count - 1, None), SAMPLE_VARIANCE + " (in its derivative too)": (count - 1, count - 1)},
    )
    var = (centred**2).sum(axis=axis, keepdims=True) / divisor
    eps = at.choose(
        "eps",
        eps,
        {
            "eps is left out of the square root: sqrt(var + eps)": 0.0,
            "eps is 1e-5 written out; use the argument eps": 1e-5,
        },
    )
    s = at.choose(
        "s = sqrt(var + eps)",
        np.sqrt(var + eps),
        {"eps is added outside the square root: sqrt(var + eps)": np.sqrt(var) + eps},
    )
    return s, centred / s, path


def _x_bar(at: Slips, x, gamma, y_bar, eps) -> np.ndarray:
    """Layer normalisation's x_bar, derived as batch normalisation's with the means along the rows."""
    batch = (
        "it normalises each column over the batch (axis 0), as batch normalisation does; "
        "layer normalisation normalises each row"
    )
    axis = at.choose("the axis of the normalisation", 1, {batch: 0})
    s, x_hat, path = _normalised(at, x, axis, eps)
    g = at.choose(
        "the gradient reaching x_hat",
        gamma * y_bar,
        {"gamma is left out: the gradient reaching x_hat is gamma * y_bar": y_bar},
    )
    count, other = x.shape[axis], x.shape[1 - axis]
    per = at.choose(
        "the means' 1/d",
        1 / count,
        {
            "the means are sums: their 1/d is missing": 1.0,
            "the means divide by n (the number of rows), not by d (the number of features)": 1 / other,
        },
    )
    mean_path = -g.sum(axis=axis, keepdims=True) * per
    variance_path = -x_hat * (g * x_hat).sum(axis=axis, keepdims=True) * (per if path is None else 1 / path)
    numerator = at.term(
        "the path through the mean",
        g,
        mean_path,
        words={"missing": "the path through the mean is missing: subtract the row mean of gamma * y_bar"},
    )
    numerator = at.term(
        "the path through the variance",
        numerator,
        variance_path,
        words={
            "missing": "the path through the variance is missing: subtract x_hat times the row mean of "
            "gamma * y_bar * x_hat"
        },
    )
    return at.choose(
        "the division by s",
        numerator / s,
        {
            "the division by s = sqrt(var + eps) is missing": numerator,
            "it divides by s² = var + eps, but x_hat divides by s = sqrt(var + eps)": lambda: numerator / (s * s),
        },
    )


def _over_rows(a, axis: int, reduce: Callable):
    """``reduce`` (np.sum, or np.mean for the slip) of ``a`` along ``axis`` (0, or 1 for the slip)."""
    return reduce(a, axis=axis)


def layernorm_derivation(problem: dict, at: Slips) -> tuple:
    """(x_bar, gamma_bar, beta_bar) of layer normalisation at ``problem``, with the slips of each step."""
    x, gamma, y_bar, eps = problem["x"], problem["gamma"], problem["y_bar"], problem["eps"]
    x_bar = _x_bar(at, x, gamma, y_bar, eps)
    _, x_hat, _ = _normalised(at, x, 1, eps)
    shared = at.choose(  # one slip in both parameters' sums, or a slip in one of them (below)
        "the sums over the rows",
        (0, np.sum),
        {
            "gamma_bar and beta_bar average over the rows: the rows' gradients add up, a sum, not a mean": (
                0,
                np.mean,
            ),
            "gamma_bar and beta_bar sum over the features (axis 1); gamma and beta are shared by the rows": (
                1,
                np.sum,
            ),
        },
    )
    gamma_bar = at.choose(
        "gamma_bar",
        _over_rows(y_bar * x_hat, *shared),
        {
            "gamma_bar sums over the features (axis 1); gamma is shared by the rows": lambda: (y_bar * x_hat).sum(1),
            "gamma_bar averages over the rows: the rows' gradients add up, a sum, not a mean": lambda: (
                y_bar * x_hat
            ).mean(0),
            "gamma_bar multiplies y_bar by x, not by x_hat, the normalised x it scales": lambda: _over_rows(
                y_bar * x, *shared
            ),
            "gamma_bar multiplies by gamma: it is the sum of y_bar * x_hat": lambda: _over_rows(
                gamma * y_bar * x_hat, *shared
            ),
        },
    )
    beta_bar = at.choose(
        "beta_bar",
        _over_rows(y_bar, *shared),
        {
            "beta_bar sums over the features (axis 1); beta is shared by the rows": lambda: y_bar.sum(1),
            "beta_bar averages over the rows: the rows' gradients add up, a sum, not a mean": lambda: y_bar.mean(0),
        },
    )
    return (x_bar, *at.swap("(gamma_bar, beta_bar)", gamma_bar, beta_bar))


LAYERNORM = Derivation(layernorm_derivation)


def _layernorm_terms(x, gamma, y_bar, eps) -> float:
    """The largest sum of |terms| in an entry of layer normalisation's x_bar, which cancel where d is small."""
    s = np.sqrt(x.var(axis=1, keepdims=True) + eps)
    x_hat, xh_bar = np.abs(x - x.mean(axis=1, keepdims=True)) / s, np.abs(gamma * y_bar)
    terms = xh_bar + xh_bar.mean(axis=1, keepdims=True) + x_hat * (xh_bar * x_hat).mean(axis=1, keepdims=True)
    return float(np.max(terms / s))


def _layernorm_problems(seed: int) -> list[dict]:
    """x, gamma, y_bar and eps of two shapes (n, d), n != d so that the axes cannot be confused.

    eps is large enough to matter (0.01 to 0.1), and one row of x is narrow (its spread a twentieth
    of the others'), where leaving eps out, or writing 1e-5 for it, shows.
    """
    rng = np.random.default_rng(seeded(seed))
    apart = np.random.default_rng([seeded(seed), 3])  # apart from x, gamma and y_bar, which stay as they were
    shapes = [(6, 4), (3, 7)] if seed == 0 else [(int(rng.integers(5, 9)), int(rng.integers(2, 5))), (3, 6)]
    problems = []
    for index, (n, d) in enumerate(shapes):
        x, gamma = rng.normal(1.0, 2.0, size=(n, d)), rng.normal(size=d)
        y_bar = rng.normal(size=(n, d))
        eps = (0.01, 0.1)[index] if seed == 0 else float(apart.uniform(0.01, 0.1))
        row = int(apart.integers(n))
        x[row] = x[row].mean() + (x[row] - x[row].mean()) / 20
        problems.append({"x": x, "gamma": gamma, "y_bar": y_bar, "eps": eps})
    return problems


def _three_arrays(name: str, result) -> tuple:
    """The (x_bar, gamma_bar, beta_bar) a function returned, as a tuple."""
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
        raise AnswerError(name, f"{name} should return three arrays (x_bar, gamma_bar, beta_bar), not {got}.")
    return tuple(result)


@allowed("numpy")
def check_layernorm_backward(layernorm_backward: Callable, seed: int = 0) -> None:
    """``layernorm_backward(x, gamma, y_bar, eps)`` must return (x_bar, gamma_bar, beta_bar) of layer norm.

    The expected gradients come from chainrule's backward pass through the composed
    normalisation; two shapes (n, d) are tried, with n != d so that the axes cannot be confused.
    """
    name, names = "layernorm_backward", ("x", "gamma", "y_bar", "eps")
    problems = _layernorm_problems(seed)
    received = [_three_arrays(name, call(name, layernorm_backward, *p.values(), names=names)) for p in problems]
    mistake = LAYERNORM.mistake(problems, received, same)
    for index, (p, result) in enumerate(zip(problems, received, strict=True)):
        x, gamma, y_bar, eps = p.values()
        xt, gt, bt = (Tensor(a.copy(), requires_grad=True) for a in (x, gamma, np.zeros_like(gamma)))
        centred = xt - xt.mean(axis=1, keepdims=True)
        scale = ((centred**2).mean(axis=1, keepdims=True) + eps) ** 0.5
        (gt * centred / scale + bt).backward(gradient=y_bar)
        where = f"for x of shape {x.shape} and eps = {eps:.4g}"
        terms = (_layernorm_terms(x, gamma, y_bar, eps), 0.0, 0.0)
        for part, (quantity, expected) in enumerate(
            zip(("x_bar", "gamma_bar", "beta_bar"), (xt.grad, gt.grad, bt.grad), strict=True)
        ):
            mistakes = mistake.on(index, part) if mistake else []
            check_array(f"{quantity} {where}", result[part], expected, mistakes, terms=terms[part], guess=False)


# --------------------------------------------------------------------------- a Hessian-vector product (forward mode)


def tanh_hvp_derivation(problem, at: Slips) -> np.ndarray:
    """The Hessian of sum(tanh(W @ x)) times v at ``problem`` = (W, x, v), by the tangents of the gradient's lines,
    with the slips of each step."""
    W, x, v = problem
    x, v = at.choose("x and v", (x, v), {"x and v are swapped": (v, x)})
    z, z_dot = W @ x, W @ v
    t = np.tanh(z)
    slope = at.choose(
        "tanh' in t_dot",
        1 - t * t,
        {
            "the factor (1 - t * t) of t_dot is missing: tanh's tangent is (1 - t * t) * (W v), not W v": 1.0,
            "tanh' is taken at the output, 1 - tanh(t)², but t = tanh(W x) is the output already: "
            "tanh'(W x) = 1 - t * t": lambda: 1 - np.tanh(t) ** 2,
            "tanh' is taken at the pre-activation as 1 - z * z for z = W x; tanh'(z) = 1 - tanh(z)², "
            "which is 1 - t * t": lambda: 1 - z * z,
            "the sigmoid's derivative is used for tanh's: tanh'(z) = 1 - t * t, not sigmoid(z) (1 - sigmoid(z))": (
                lambda: _sigmoid(z) * (1 - _sigmoid(z))
            ),
        },
    )
    t_dot = slope * z_dot
    said = "the tangent of 1 - t * t is -2 t * t_dot"
    tangent = at.choose(
        "the tangent of 1 - t * t",
        -2 * t * t_dot,
        {
            "it is half the product: the tangent of t * t is 2 t * t_dot": lambda: -t * t_dot,
            f"the sign is flipped: {said}": lambda: 2 * t * t_dot,
            f"it is half the product with the sign flipped: {said}": lambda: t * t_dot,
            "the tangent of t * t is 2 t * t_dot, not t * t times it": lambda: -2 * t * t * t_dot,
            "the factor t of -2 t * t_dot is missing": lambda: -2 * t_dot,
            "it applies tanh's first derivative, W.T ((1 - t * t) * W v); the product needs the "
            "tangent of (1 - t * t), which is -2 t * t_dot": t_dot,
        },
    )
    return at.choose(
        "what is returned",
        W.T @ tangent,
        {
            "it is the gradient W.T (1 - t * t), not its derivative along v": lambda: W.T @ (1 - t * t),
            "it is only the Hessian's diagonal times v; the product needs the whole Hessian, "
            "W.T diag(-2 t (1 - t * t)) W, applied to v": lambda: -2 * ((W * W).T @ (t * (1 - t * t))) * v,
        },
    )


TANH_HVP = Derivation(tanh_hvp_derivation)


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
    problems = [(rng.normal(size=(m, k)), rng.normal(size=k), rng.normal(size=k)) for m, k in shapes]
    received = [call(name, tanh_hvp, W, x, v, names=("W", "x", "v")) for W, x, v in problems]
    mistake = TANH_HVP.mistake(problems, received, same)
    for index, ((W, x, v), result) in enumerate(zip(problems, received, strict=True)):
        leaf = Tensor(x.copy(), requires_grad=True)
        (g,) = grad((Tensor(W) @ leaf).tanh().sum(), leaf, create_graph=True)
        (expected,) = grad((g * Tensor(v)).sum(), leaf)
        mistakes = mistake.on(index) if mistake else []
        check_array(
            f"the product {name} returns for W of shape {W.shape}", result, expected.data, mistakes, guess=False
        )

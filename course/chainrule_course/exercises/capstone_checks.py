"""The check of the capstone's exercise: the whole backward pass of a small network, by hand, in numpy.

embedding → linear → batch normalisation → tanh → linear → cross-entropy (the mean over the
batch). The seven expected gradients come from ``chainrule``'s backward pass through the same
network; the mistakes are the slips of :func:`network_derivation`, the backward pass by hand,
named only when one fits both batches the check tried. Each gradient gets its own verdict (and
its own points in the grader), so an answer that is right up to batch normalisation earns what
it got right.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

import chainrule.functional as layers
from chainrule.tensor import Tensor

from ..grading.contract import allowed, seeded
from .answers import ATOL, RTOL, Report, check_array, tolerances
from .layer_checks import Raised, either, guarded, tried
from .mistakes import Derivation, Slips

EPS = 1e-5
#: The parameters, in the order the answer takes them and returns their gradients.
PARAMETERS = ("E", "W1", "b1", "gamma", "beta", "W2", "b2")
GRADIENTS = tuple(f"{name}_bar" for name in PARAMETERS)
PATHS = ("mean", "variance")


def engine_gradients(params: dict, tokens, y) -> dict:
    """The gradient of every parameter, by name, from chainrule's backward pass."""
    t = {name: Tensor(array.copy(), requires_grad=True) for name, array in params.items()}
    n = len(y)
    X = layers.embedding(tokens, t["E"]).reshape((n, -1))
    Z = X @ t["W1"].T + t["b1"]
    centred = Z - Z.mean(axis=0)
    Z_hat = centred / ((centred**2).mean(axis=0) + EPS) ** 0.5
    H = (t["gamma"] * Z_hat + t["beta"]).tanh()
    layers.cross_entropy(H @ t["W2"].T + t["b2"], y).backward()
    return {name: tensor.grad for name, tensor in t.items()}


BESSEL = (
    "the variance divides by n - 1 (Bessel's correction); batch normalisation divides by n, "
    "as np.var does by default and PyTorch's batch_norm does in training"
)
ONE_HOT = "the one-hot of the labels is not subtracted: Ō = (P - Y)/n, Y one-hot"
KEEPDIMS = (
    "the softmax's sum over the classes lost its axis: with n = q it divides each column by one row's sum, "
    "without an error; sum with keepdims=True"
)
MAX_KEEPDIMS = (
    "the largest logit is subtracted without keepdims: with n = q it subtracts row j's largest logit from "
    "column j, which changes the softmax; use keepdims=True"
)
ASSIGNED = "repeated tokens must add their rows (np.add.at), not overwrite them"


class Gradients(tuple):
    """The seven gradients of one problem, and for each the scale its rounding is relative to (:func:`_terms`)."""

    terms: tuple = ()


def _softmax(at: Slips, O: np.ndarray) -> np.ndarray:
    """The softmax of each row of O, and the slips made in it (the two without keepdims raise unless n = q)."""
    right = np.exp(O - O.max(axis=1, keepdims=True))
    shifted = lambda: np.exp(O - O.max(axis=1))  # noqa: E731
    return at.choose(
        "softmax",
        right / right.sum(axis=1, keepdims=True),
        {
            KEEPDIMS: lambda: right / right.sum(axis=1),
            MAX_KEEPDIMS: lambda: shifted() / shifted().sum(axis=1, keepdims=True),
            "the softmax runs over axis 0 (the examples), not axis 1 (the classes)": lambda: (
                np.exp(O) / np.exp(O).sum(axis=0)
            ),
            "the log-softmax (log-probabilities) is used where Ō needs the softmax's probabilities P": lambda: np.log(
                right / right.sum(axis=1, keepdims=True)
            ),
        },
    )


def _bias(at: Slips, name: str, upstream: np.ndarray) -> np.ndarray:
    """The gradient of a bias added to every row: ``upstream`` summed over the batch, and the slips made there."""
    summed = f"a broadcast sum not undone: {name} is added to every row, so its gradient sums over the batch (axis 0)"
    averaged = f"{name}'s gradient is averaged over the batch (a mean for a sum): a broadcast is undone by a sum"
    return at.choose(f"{name}'s sum", upstream.sum(axis=0), {summed: upstream, averaged: lambda: upstream.mean(axis=0)})


def _output_bars(at: Slips, O, H, A, W2, y) -> tuple:
    """Ō, the mean cross-entropy's gradient at the scores, and Ū, at tanh's input, with their slips."""
    n, q = len(y), W2.shape[0]
    P = _softmax(at, O)
    O_bar = at.choose("one-hot", P - np.eye(q)[y], {ONE_HOT: P})
    O_bar = at.factor(
        "the mean's 1/n",
        O_bar,
        1 / n,
        {
            "the mean's 1/n is missing: the loss is the mean over the batch, so Ō = (P - Y)/n": 1.0,
            "the mean divides by q (the number of classes), not by n (the batch size)": 1 / q,
        },
    )
    O_bar = at.sign("Ō", O_bar, "Y - P instead of P - Y")
    slope = at.choose(
        "tanh′",
        1 - H * H,
        {
            "tanh's derivative 1 - H² is missing": 1.0,
            "tanh′ is taken at the pre-activation A = γẐ + β, 1 - A², but tanh′(A) = 1 - tanh(A)² = 1 - H²": 1 - A * A,
            "sigmoid′, H(1 - H), is used for tanh′ = 1 - H²": H * (1 - H),
        },
    )
    U_bar = (O_bar @ W2) * slope
    return O_bar, U_bar


def network_derivation(p: dict, at: Slips) -> Gradients:
    """The seven gradients, derived by hand in numpy, with the slips of each step."""
    E, W1, b1, gamma, beta, W2, b2 = (p["params"][name] for name in PARAMETERS)
    tokens, y = p["tokens"], p["y"]
    n = len(y)
    X = E[tokens].reshape(n, -1)
    Z = X @ W1.T + b1
    ddof = at.choose("the variance's divisor", 0, {BESSEL: 1})
    eps = at.choose("ε", EPS, {"ε is left out of σ = √(σ² + ε), which the forward pass adds": 0.0})
    s = np.sqrt(Z.var(axis=0, ddof=ddof) + eps)
    Z_hat = (Z - Z.mean(axis=0)) / s
    A = gamma * Z_hat + beta
    H = np.tanh(A)
    O = H @ W2.T + b2
    O_bar, U_bar = _output_bars(at, O, H, A, W2, y)
    Zh_bar = at.choose("γ", gamma * U_bar, {"Ẑ's gradient leaves out γ: it is γ ⊙ Ū": U_bar})
    paths = at.choose(
        "batch normalisation's paths",
        PATHS,
        {
            "batch normalisation's paths through the mean and the variance are missing": (),
            "batch normalisation's path through the mean is missing: subtract the column mean": ("variance",),
            "batch normalisation's path through the variance is missing": ("mean",),
        },
    )
    Z_bar = Zh_bar - ("mean" in paths) * Zh_bar.mean(axis=0)
    variance = ("variance" in paths) * n / (n - ddof)  # dσ²/dZ has 2(Z - μ)/(n - ddof)
    Z_bar = (Z_bar - variance * Z_hat * (Zh_bar * Z_hat).mean(axis=0)) / s
    X_bar = (Z_bar @ W1).reshape(*tokens.shape, -1)
    E_bar = np.zeros_like(E)
    np.add.at(E_bar, tokens, X_bar)
    assigned = np.zeros_like(E)
    assigned[tokens] = X_bar
    E_bar = at.choose("the embedding's rows", E_bar, {ASSIGNED: assigned})
    gamma_bar = at.choose(
        "γ̄",
        (U_bar * Z_hat).sum(axis=0),
        {
            "γ̄ sums Ū ⊙ Ẑ over the batch, not Ū alone": lambda: U_bar.sum(axis=0),
            "a broadcast sum not undone: γ̄ sums Ū ⊙ Ẑ over the batch": lambda: U_bar * Z_hat,
            "γ̄ sums Ū ⊙ Z, but γ multiplies Ẑ, Z normalised": lambda: (U_bar * Z).sum(axis=0),
        },
    )
    gamma_bar, beta_bar = at.swap("(gamma_bar, beta_bar)", gamma_bar, _bias(at, "beta", U_bar))
    hidden = at.choose("H in W2_bar", H, {"W2_bar uses the pre-activation A = γẐ + β, not H = tanh(A)": A})
    result = Gradients(
        (
            E_bar,
            at.transpose("W1_bar", Z_bar.T @ X),
            _bias(at, "b1", Z_bar),
            gamma_bar,
            beta_bar,
            at.transpose("W2_bar", O_bar.T @ hidden),
            _bias(at, "b2", O_bar),
        )
    )
    result.terms = p["terms"]
    return result


NETWORK = Derivation(guarded(network_derivation))


def same(answer, result) -> bool:
    """Whether ``answer`` (the seven arrays a student's function returned) equals ``result`` (:class:`Gradients`)
    within a mistake's tolerance, each array's relative to the terms it adds up."""
    if not isinstance(answer, tuple) or len(answer) != len(result):
        return False
    for got, right, terms in zip(answer, result, result.terms, strict=True):
        try:
            array = np.asarray(got.detach() if hasattr(got, "detach") else got, dtype=float)
        except (TypeError, ValueError, RuntimeError):
            return False
        rtol = max(tolerances(got)[0], RTOL)
        if array.shape != right.shape or not np.allclose(array, right, rtol=rtol, atol=max(ATOL, rtol * terms)):
            return False
    return True


def problem(seed: int, index: int) -> dict:
    """The parameters, tokens and labels of one call, and the :func:`_terms` of its gradients: first a batch as
    large as the number of classes (where a sum that lost its axis broadcasts without an error), then one that is
    not."""
    rng = np.random.default_rng(seeded(seed) * 2 + index)
    if seed == 0:
        n, q, T, d_e, d_h = ((6, 6, 3, 2, 5), (9, 5, 2, 3, 4))[index]
    else:
        q, d_h = (int(v) for v in rng.integers(4, 8, size=2))
        T, d_e = (int(v) for v in rng.integers(2, 4, size=2))
        n = q if index == 0 else q + int(rng.integers(2, 5))
    d = T * d_e
    params = {
        "E": rng.normal(size=(q, d_e)),
        "W1": rng.normal(size=(d_h, d)) / np.sqrt(d),
        "b1": rng.normal(size=d_h),
        "gamma": rng.normal(1.0, 0.3, size=d_h),
        "beta": rng.normal(size=d_h),
        "W2": rng.normal(size=(q, d_h)) / np.sqrt(d_h),
        "b2": rng.normal(size=q),
    }
    tokens = rng.integers(0, q, size=(n, T))
    tokens[1] = tokens[0]  # two examples with the same tokens: their rows must add
    y = rng.integers(0, q, size=n)
    return {"params": params, "tokens": tokens, "y": y, "terms": _terms(params, tokens, y)}


def _terms(p: dict, tokens, y) -> tuple[float, ...]:
    """For each gradient, in the order of :data:`PARAMETERS`, the largest sum of |terms| in an entry where they
    cancel (batch normalisation's backward pass, b1's to 0 in exact arithmetic): their rounding is relative to
    it. 0 for the gradients whose terms do not cancel."""
    n = len(tokens)
    X = p["E"][tokens].reshape(n, -1)
    Z = X @ p["W1"].T + p["b1"]
    s = np.sqrt(Z.var(axis=0) + EPS)
    z_hat = (Z - Z.mean(axis=0)) / s
    H = np.tanh(p["gamma"] * z_hat + p["beta"])
    O = H @ p["W2"].T + p["b2"]
    P = np.exp(O - O.max(axis=1, keepdims=True))
    O_bar = (P / P.sum(axis=1, keepdims=True) - np.eye(len(p["b2"]))[y]) / n
    zh_bar, z_hat = np.abs(p["gamma"] * (O_bar @ p["W2"]) * (1 - H * H)), np.abs(z_hat)
    T = (zh_bar + zh_bar.mean(axis=0) + z_hat * (zh_bar * z_hat).mean(axis=0)) / s
    E = np.zeros_like(p["E"])
    np.add.at(E, tokens, (T @ np.abs(p["W1"])).reshape(*tokens.shape, -1))
    return float(E.max()), float((T.T @ np.abs(X)).max()), float(T.sum(axis=0).max()), 0.0, 0.0, 0.0, 0.0


@allowed("numpy")
def check_network_backward(network_backward: Callable, seed: int = 0) -> None:
    """``network_backward(E, W1, b1, gamma, beta, W2, b2, tokens, y)`` must return the seven gradients
    of the mean cross-entropy, (E_bar, W1_bar, b1_bar, gamma_bar, beta_bar, W2_bar, b2_bar), on a batch
    with n = q and on one without, each batch with a repeated example."""
    name = "network_backward"
    problems = [problem(seed, index) for index in (0, 1)]
    calls = [(*(p["params"][key] for key in PARAMETERS), p["tokens"], p["y"]) for p in problems]
    received = tried(name, network_backward, calls, (*PARAMETERS, "tokens", "y"), GRADIENTS)
    mistake = NETWORK.mistake(problems, received, either(same))
    for index, (p, result) in enumerate(zip(problems, received, strict=True)):
        if isinstance(result, Raised):
            raise result.error
        n, q = len(p["y"]), p["params"]["W2"].shape[0]
        expected = engine_gradients(p["params"], p["tokens"], p["y"])
        report = Report(f"{name} on n = {n} examples of T = {p['tokens'].shape[1]} tokens, q = {q} classes")
        for part, (key, got) in enumerate(zip(PARAMETERS, result, strict=True)):
            found = mistake.on(index, part) if mistake else []
            terms = p["terms"][part]
            report.check(
                f"{key}_bar",
                functools.partial(check_array, f"{key}_bar", got, expected[key], found, terms=terms, guess=False),
            )
        report.close()

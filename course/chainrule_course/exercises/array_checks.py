"""The checks of the array chapters' exercises: the d2l network, VJPs, clipping.

They compare arrays, so they load numpy; :mod:`chainrule_course.exercises.feedback` loads this module
the first time a check cell asks for one of them (``feedback.check_matmul_vjp``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from chainrule.nn import d2l_forward
from chainrule.tensor import Tensor

from ..grading.contract import allowed, seeded
from .answers import ATOL, RTOL, AnswerError, Report, _matches, check_array, tolerances
from .calling import call, joined, returned
from .mistakes import Derivation, Slips

# --------------------------------------------------------------------------- the d2l network


def d2l_gradients(X, y, W1, W2, lam, b1=None) -> dict[str, np.ndarray]:
    """∂J/∂W1, ∂J/∂W2 (and ∂J/∂b1) of the d2l network, computed by chainrule's backward pass."""
    W1t, W2t = Tensor(W1, requires_grad=True), Tensor(W2, requires_grad=True)
    b1t = None if b1 is None else Tensor(b1, requires_grad=True)
    forward = d2l_forward(X, y, W1t, W2t, lam=lam, b1=b1t)
    forward.J.backward()
    grads = {"W1": W1t.grad, "W2": W2t.grad, "Z": forward.z.grad, "H": forward.h.grad, "O": forward.o.grad}
    if b1t is not None:
        grads["b1"] = b1t.grad
    return grads


def d2l_sizes(X, W1, W2) -> dict[str, int]:
    """N, d, h and q of a d2l problem, read from its arrays."""
    return {"N": len(X), "d": X.shape[1], "h": W1.shape[0], "q": W2.shape[0]}


def _softmax(O: np.ndarray, axis: int) -> np.ndarray:
    P = np.exp(O - O.max(axis=axis, keepdims=True))
    return P / P.sum(axis=axis, keepdims=True)


def _softmax_step(at: Slips, scores: np.ndarray, called: str, why: str = "") -> np.ndarray:
    """softmax(scores) over the classes (axis 1), and the slips made there: the wrong axis, no softmax, its log."""
    return at.choose(
        "softmax",
        _softmax(scores, 1),
        {
            "the softmax runs over axis 0 (the examples), not axis 1 (the classes)": lambda: _softmax(scores, 0),
            f"the softmax is missing: {called} were used as probabilities": scores,
            f"the log-softmax is used where the softmax is{why}": lambda: np.log(_softmax(scores, 1)),
        },
    )


def _decay(at: Slips, rest: np.ndarray, W: np.ndarray, lam: float, n: int, name: str) -> np.ndarray:
    """``rest + λ·W``, the gradient of a weight W with decay λ, and the slips made in its decay term."""
    return at.term(
        f"the weight-decay term λ·{name}",
        rest,
        lam * W,
        words={
            "half": f"the weight-decay term is λ/2·{name}, but the derivative of λ/2·‖{name}‖² is λ·{name}",
            "double": f"the weight-decay term is 2λ·{name}, but the penalty is λ/2·‖{name}‖², whose derivative is "
            f"λ·{name}",
        },
        scaled={f"the weight-decay term is divided by N (λ·{name}/N), but the penalty is outside the mean": 1 / n},
    )


def d2l_derivation(p: dict, at: Slips, bias: bool = False):
    """The d2l network's (∂J/∂W1, ∂J/∂W2), or with ``bias`` ∂J/∂b1, derived by hand, with the slips of each step."""
    X, y, W1, W2, lam = p["X"], p["y"], p["W1"], p["W2"], p["lam"]
    n, q = len(X), W2.shape[0]
    Z = X @ W1.T
    if bias:
        Z = at.choose("b1 in Z", Z + p["b1"], {"b1 is left out of the forward pass: Z = X W1ᵀ + b1": Z})
    H = np.maximum(Z, 0)
    O = H @ W2.T
    P = _softmax_step(at, O, "the scores O", ": ∂L/∂O = (P − Y)/N")
    Y = np.eye(q)[y]
    dO = at.choose("one-hot", P - Y, {"the one-hot is missing: the softmax alone is not ∂L/∂O": P})
    dO = at.factor(
        "the mean's 1/N",
        dO,
        1 / n,
        {
            "the 1/N of the mean loss is missing": 1.0,
            "the mean divides by q (the number of classes), not by N (the batch size)": 1 / q,
            "the 1/N of the mean is applied twice": 1 / n**2,
        },
    )
    dO = at.sign("∂J/∂O", dO, "Y − P instead of P − Y")
    dZ = at.choose(
        "ReLU",
        (dO @ W2) * (Z > 0),
        {
            "the ReLU's mask (Z > 0) is missing": lambda: dO @ W2,
            "∂J/∂H is multiplied by H = relu(Z), not by the ReLU's derivative (Z > 0)": lambda: (dO @ W2) * H,
        },
    )
    if bias:
        db1 = at.choose(
            "sum over the batch",
            dZ.sum(axis=0),
            {
                "the bias gradient is not summed over the batch (one row per example)": dZ,
                "the sum runs over the hidden units (axis 1) instead of over the batch (axis 0)": lambda: dZ.sum(1),
                "the bias gradient is averaged over the batch instead of summed (1/N twice)": lambda: dZ.mean(0),
            },
        )
        said = "b1 is treated as penalized (λ·b1 added), but weight decay leaves the bias out"
        return at.choose("bias decay", db1, {said: lambda: db1 + lam * p["b1"]})
    used = at.choose("H in dJ/dW2", H, {"the gradient uses Z instead of H = relu(Z)": Z})
    dW1 = at.transpose("dJ/dW1", at.sign("dJ/dW1", _decay(at, dZ.T @ X, W1, lam, n, "W1")))
    dW2 = at.transpose("dJ/dW2", at.sign("dJ/dW2", _decay(at, dO.T @ used, W2, lam, n, "W2")))
    return at.swap("(dJ/dW1, dJ/dW2)", dW1, dW2)


D2L_WEIGHTS = Derivation(d2l_derivation)
D2L_BIAS = Derivation(functools.partial(d2l_derivation, bias=True))


def same(answer, result) -> bool:
    """Whether ``answer`` (a student's array, or a tuple of them) equals ``result`` within a mistake's tolerance
    (float32's): what :meth:`~.mistakes.Derivation.name` matches a variant by."""
    if isinstance(result, tuple):
        return (
            isinstance(answer, tuple)
            and len(answer) == len(result)
            and all(same(a, r) for a, r in zip(answer, result, strict=True))
        )
    try:
        array = np.asarray(answer.detach() if hasattr(answer, "detach") else answer, dtype=float)
    except (TypeError, ValueError, RuntimeError):
        return False
    return _matches(array, result, max(tolerances(answer)[0], RTOL), ATOL)


def check_d2l_weight_grads(
    dJ_dW1, dJ_dW2, X, y, W1, W2, lam, title: str = "", after: str = "", named: tuple = (None, 0)
) -> None:
    """The d2l network's ∂J/∂W1 and ∂J/∂W2 with weight decay λ.

    Both are checked, and a wrong answer's message gives each one's verdict. ``named`` is the mistake
    the answer makes on every problem its check tried (:meth:`~.mistakes.Derivation.mistake`) and this problem's index.
    """
    g = d2l_gradients(X, y, W1, W2, lam)
    sizes, (mistake, index) = d2l_sizes(X, W1, W2), named
    report = Report(title)
    for part, name, key in ((0, "dJ/dW1", "W1"), (1, "dJ/dW2", "W2")):
        answer, mistakes = (dJ_dW1, dJ_dW2)[part], mistake.on(index, part) if mistake else []
        report.check(name, functools.partial(check_array, name, answer, g[key], mistakes, sizes=sizes, guess=False))
    report.close(after)


def check_hidden_bias_grad(
    dJ_db1, X, y, W1, b1, W2, lam, title: str = "", after: str = "", named: tuple = (None, 0)
) -> None:
    """∂J/∂b1 of the d2l network with a hidden bias b1 that is not penalized (``named`` as in
    :func:`check_d2l_weight_grads`)."""
    g = d2l_gradients(X, y, W1, W2, lam, b1=b1)
    mistake, index = named
    mistakes = mistake.on(index) if mistake else []
    report = Report(title)
    sizes = d2l_sizes(X, W1, W2)
    report.check("dJ/db1", lambda: check_array("dJ/db1", dJ_db1, g["b1"], mistakes, sizes=sizes, guess=False))
    report.close(after)


#: The sizes of the smallest problem, which every function check tries first: N, d, h and q
#: all different, so that a wrong shape says which size it has.
SMALL = {"N": 2, "d": 3, "h": 4, "q": 5}


def d2l_problem(seed: int, small: bool = False) -> dict:
    """A random batch and weights for the d2l network: X, y, W1, b1, W2, lam and their ``sizes``.

    The sizes N, d, h and q are drawn from ``seed``, all different (``small``: the sizes of
    :data:`SMALL`). ``d2l_weight_grads(p["X"], p["y"], p["W1"], p["W2"], p["lam"])`` with
    ``p = d2l_problem(seed)`` repeats what a check called.
    """
    rng = np.random.default_rng(seeded(seed))
    sizes = dict(SMALL)
    while not small:
        sizes = dict(zip("Ndhq", (int(v) for v in rng.integers([6, 3, 5, 2], [13, 7, 10, 5])), strict=True))
        if len(set(sizes.values())) == 4:
            break
    N, d, h, q = sizes.values()
    return {
        "X": rng.normal(size=(N, d)),
        "y": rng.integers(0, q, size=N),
        "W1": rng.normal(size=(h, d)) * 0.8,
        "b1": rng.normal(size=h) * 0.5,
        "W2": rng.normal(size=(q, h)) * 0.8,
        "lam": float(rng.uniform(0.05, 0.5)),
        "sizes": sizes,
    }


def _problems(seed: int) -> list[tuple[dict, str]]:
    """The problems a function check tries, smallest first, each with the call that rebuilds it."""
    return [
        (d2l_problem(seed, small=True), f"feedback.d2l_problem({seeded(seed)}, small=True)"),
        (d2l_problem(seed), f"feedback.d2l_problem({seeded(seed)})"),
    ]


def _on(function: str, problem: dict, rebuild: str, arguments: str) -> tuple[str, str]:
    """The title and the closing line of a message about ``function`` on one problem."""
    sizes = ", ".join(f"{k} = {v}" for k, v in problem["sizes"].items())
    return (
        f"{function} on the batch {rebuild} ({sizes})",
        f"To try it yourself: p = {rebuild}, then {function}({arguments}).",
    )


@allowed("numpy")
def check_d2l_weight_grads_function(d2l_weight_grads: Callable, seed: int = 0) -> None:
    """``d2l_weight_grads(X, y, W1, W2, lam)`` must return (∂J/∂W1, ∂J/∂W2): on a small batch, then on ``seed``'s."""
    tried = _problems(seed)
    received = []
    for p, _ in tried:
        arguments = p["X"], p["y"], p["W1"], p["W2"], p["lam"]
        result = call("d2l_weight_grads", d2l_weight_grads, *arguments, names=("X", "y", "W1", "W2", "lam"))
        received.append(returned("d2l_weight_grads", result, ("dJ_dW1", "dJ_dW2")))
    mistake = D2L_WEIGHTS.mistake([p for p, _ in tried], received, same)
    for index, ((p, rebuild), (dJ_dW1, dJ_dW2)) in enumerate(zip(tried, received, strict=True)):
        title, after = _on("d2l_weight_grads", p, rebuild, "p['X'], p['y'], p['W1'], p['W2'], p['lam']")
        arguments = p["X"], p["y"], p["W1"], p["W2"], p["lam"]
        check_d2l_weight_grads(dJ_dW1, dJ_dW2, *arguments, title, after, named=(mistake, index))


@allowed("numpy")
def check_hidden_bias_grad_function(hidden_bias_grad: Callable, seed: int = 0) -> None:
    """``hidden_bias_grad(X, y, W1, b1, W2, lam)`` must return ∂J/∂b1: on a small batch, then on ``seed``'s."""
    tried = _problems(seed)
    received = []
    for p, _ in tried:
        arguments = p["X"], p["y"], p["W1"], p["b1"], p["W2"], p["lam"]
        names = ("X", "y", "W1", "b1", "W2", "lam")
        received.append(call("hidden_bias_grad", hidden_bias_grad, *arguments, names=names))
    mistake = D2L_BIAS.mistake([p for p, _ in tried], received, same)
    for index, ((p, rebuild), answer) in enumerate(zip(tried, received, strict=True)):
        title, after = _on("hidden_bias_grad", p, rebuild, "p['X'], p['y'], p['W1'], p['b1'], p['W2'], p['lam']")
        arguments = p["X"], p["y"], p["W1"], p["b1"], p["W2"], p["lam"]
        check_hidden_bias_grad(answer, *arguments, title, after, named=(mistake, index))


# --------------------------------------------------------------------------- VJP rules


def _two_sizes(seed: int, first: tuple[int, ...], count: int, low: int, high: int) -> list[tuple[int, ...]]:
    """``first``, then a second size drawn from ``seed``: ``count`` sizes in [low, high), all different,
    and none equal to the first's, so that an answer written for one size fails on the other."""
    rng = np.random.default_rng([seeded(seed), 2])  # apart from the problem's numbers, which stay as they were
    while True:
        second = tuple(int(v) for v in rng.integers(low, high, size=count))
        if len(set(second)) == count and not set(second) & set(first):
            return [first, second]


def matmul_derivation(p: dict, at: Slips) -> tuple:
    """(Ḡ Bᵀ, Aᵀ Ḡ), the VJP of C = A B, with the slips of each result."""
    A, B, G = p["A"], p["B"], p["G"]
    dA = at.transpose("A_bar", at.sign("A_bar", G @ B.T))
    dB = at.transpose("B_bar", at.sign("B_bar", A.T @ G))
    return at.swap("(A_bar, B_bar)", dA, dB)


def ce_derivation(p: dict, at: Slips):
    """∂L/∂logits of the mean cross-entropy, (softmax − onehot)/N, with the slips of each step."""
    logits, labels = p["logits"], p["labels"]
    n, q = logits.shape
    P = _softmax_step(at, logits, "the logits")
    onehot = np.eye(q)[labels]
    dL = at.choose(
        "one-hot",
        P - onehot,
        {
            "the one-hot is missing: softmax − 1 at every entry, not only at the label": lambda: P - 1,
            "the one-hot is missing: the softmax alone is not the gradient": P,
        },
    )
    dL = at.factor(
        "the mean's 1/N",
        dL,
        1 / n,
        {"the 1/N of the mean is missing": 1.0, "the mean divides by q (the classes), not by N (the examples)": 1 / q},
    )
    return at.sign("∂L/∂logits", dL, "onehot − softmax")


MATMUL = Derivation(matmul_derivation)
CROSS_ENTROPY = Derivation(ce_derivation)


@allowed("numpy")
def check_matmul_vjp(matmul_vjp: Callable, seed: int = 0) -> None:
    """``matmul_vjp(A, B, G)`` must return ``(G Bᵀ, Aᵀ G)``, the VJP of C = A B for the upstream gradient G.

    ``seed`` picks the shapes and the numbers: two sizes each time (seed 0: A is 2×3 and B is
    3×4 first), so that an answer written for one shape fails on the other.
    """
    rng = np.random.default_rng(seeded(seed))
    first = (2, 3, 4) if seed == 0 else tuple(int(v) for v in rng.integers(2, 7, size=3))
    problems = []
    for m, k, n in _two_sizes(seed, first, 3, 2, 9):
        problems.append({"A": rng.normal(size=(m, k)), "B": rng.normal(size=(k, n)), "G": rng.normal(size=(m, n))})
    received = [
        returned("matmul_vjp", call("matmul_vjp", matmul_vjp, p["A"], p["B"], p["G"], names=("A", "B", "G")), _BARS)
        for p in problems
    ]
    mistake = MATMUL.mistake(problems, received, same)
    for index, (p, answer) in enumerate(zip(problems, received, strict=True)):
        At, Bt = Tensor(p["A"], requires_grad=True), Tensor(p["B"], requires_grad=True)
        (At @ Bt).backward(p["G"])
        report = Report(f"matmul_vjp with A of shape {p['A'].shape} and B of shape {p['B'].shape}")
        for part, (name, right) in enumerate((("dA", At.grad), ("dB", Bt.grad))):
            mistakes = mistake.on(index, part) if mistake else []
            report.check(name, functools.partial(check_array, name, answer[part], right, mistakes, guess=False))
        report.close()


_BARS = ("A_bar", "B_bar")


@allowed("numpy")
def check_softmax_cross_entropy_vjp(ce_grad: Callable, seed: int = 1) -> None:
    """``ce_grad(logits, labels)`` must return ∂L/∂logits of the *mean* cross-entropy: (softmax − onehot)/N.

    Two sizes each time (seed 1: 5 examples of 3 classes first), so that an answer written
    for one size (``np.eye(3)``, ``/ 5``) fails on the other.
    """
    rng = np.random.default_rng(seeded(seed))
    first = (5, 3) if seed == 1 else tuple(int(v) for v in rng.integers(3, 9, size=2))
    problems = []
    for n, q in _two_sizes(seed, first, 2, 2, 10):
        problems.append({"logits": rng.normal(size=(n, q)) * 2, "labels": rng.integers(0, q, size=n)})
    received = [call("ce_grad", ce_grad, p["logits"], p["labels"], names=("logits", "labels")) for p in problems]
    mistake = CROSS_ENTROPY.mistake(problems, received, same)
    for index, (p, answer) in enumerate(zip(problems, received, strict=True)):
        (n, q), expected = p["logits"].shape, CROSS_ENTROPY.right(p)
        report = Report(f"ce_grad on {n} examples of {q} classes (logits of shape {p['logits'].shape})")
        mistakes = mistake.on(index) if mistake else []
        report.check("dL/dlogits", lambda: check_array("dL/dlogits", answer, expected, mistakes, guess=False))
        report.close()


# --------------------------------------------------------------------------- clipping


def clip_derivation(p: dict, at: Slips) -> tuple:
    """The arrays of ``p["grads"]`` scaled together by min(1, max_norm / their global norm), with the slips."""
    grads, max_norm = p["grads"], p["max_norm"]
    norm = at.choose(
        "global norm",
        float(np.sqrt(sum((g**2).sum() for g in grads))),
        {
            "the norm has no square root: it is the square root of the sum of squares": lambda: float(
                sum((g**2).sum() for g in grads)
            ),
            "the norms of the arrays are added, but the global norm is the square root of the sum of all squares": (
                lambda: sum(float(np.sqrt((g**2).sum())) for g in grads)
            ),
        },
    )
    factor = at.choose(
        "factor",
        min(1.0, max_norm / norm),
        {
            "it scales every gradient, also when the norm is already under the threshold": max_norm / norm,
            "it divides by the norm but does not multiply by max_norm": 1 / norm,
            "the factor is inverted: it is max_norm / norm, not norm / max_norm": min(1.0, norm / max_norm),
        },
    )
    per_array = [g * min(1.0, max_norm / np.sqrt((g**2).sum())) for g in grads]
    return at.choose(
        "clipping",
        tuple(g * factor for g in grads),
        {
            "it clips each array by its own norm instead of the norm of all gradients together": tuple(per_array),
            "it clips each entry to [-max_norm, max_norm] (clipping by value), not the whole gradient by its norm": (
                lambda: tuple(np.clip(g, -max_norm, max_norm) for g in grads)
            ),
        },
    )


CLIPPING = Derivation(clip_derivation)


def _same_list(answer, result) -> bool:
    return isinstance(answer, (list, tuple)) and same(tuple(answer), result)


@allowed("numpy")
def check_clip_by_norm(clip_by_norm: Callable, seed: int = 2) -> None:
    """``clip_by_norm(grads, max_norm)`` must scale the list of arrays by min(1, max_norm / global norm).

    Two lists are tried, of different lengths and shapes: one whose norm is under ``max_norm``
    and one far over it.
    """
    name = "clip_by_norm"
    rng = np.random.default_rng(seeded(seed))
    max_norm = 5.0 if seed == 2 else float(rng.uniform(0.5, 3.0))
    small = [rng.normal(size=(3, 2)) * 0.02 * max_norm, rng.normal(size=4) * 0.02 * max_norm]
    large = [rng.normal(size=shape) * 2 * max_norm for shape in ((2, 5), (3,), (1, 4))]
    problems: list[dict[str, Any]] = [{"grads": grads, "max_norm": max_norm} for grads in (small, large)]
    received = [
        _clipped(name, call(name, clip_by_norm, grads, max_norm, names=("grads", "max_norm")), grads)
        for grads in (small, large)
    ]
    mistake = CLIPPING.mistake(problems, received, _same_list)
    for index, (p, result) in enumerate(zip(problems, received, strict=True)):
        grads, right = p["grads"], CLIPPING.right(p)
        norm = float(np.sqrt(sum((g**2).sum() for g in grads)))
        report = Report(
            f"{name} on arrays of shapes {joined([str(g.shape) for g in grads])} with a global norm of {norm:.3g} and "
            f"max_norm = {max_norm:.3g} ({'under' if norm < max_norm else 'over'} the threshold)",
            separate=False,
        )  # one answer: the arrays are scaled together
        for part, (got, expected) in enumerate(zip(result, right, strict=True)):
            mistakes = mistake.on(index, part) if mistake else []
            # rtol: not a derivative; torch's convention, max_norm / (norm + 1e-6), is right too
            said = f"the array [{part}] it returns"
            report.check(
                f"[{part}]",
                functools.partial(check_array, said, got, expected, mistakes, rtol=RTOL, atol=ATOL, guess=False),
            )
        report.close()


def _clipped(name: str, result, grads: list) -> list:
    """What ``clip_by_norm`` returned, as its list of arrays; an answer of another form explained."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], (list, tuple)):
        raise AnswerError(
            name,
            f"{name} returned (the list, a number), as torch's clip_grad_norm_ returns the norm: "
            "return only the list of arrays.",
            "the norm returned with the list",
        )
    if not isinstance(result, (list, tuple)) or len(result) != len(grads):
        got = f"{len(result)} values" if isinstance(result, (list, tuple)) else f"one {type(result).__name__}"
        raise AnswerError(name, f"{name} should return a list of {len(grads)} arrays, but it returned {got}.")
    return list(result)

"""The checks of the array chapters' exercises: the d2l network, VJPs, clipping.

They compare arrays, so they load numpy; :mod:`chainrule_course.exercises.feedback` loads this module
the first time a check cell asks for one of them (``feedback.check_matmul_vjp``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from chainrule.nn import d2l_forward
from chainrule.tensor import Tensor

from ..grading.contract import allowed, seeded
from .answers import ATOL, RTOL, AnswerError, Mistake, Report, check_array
from .calling import call, joined, returned

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


def _weight_mistakes(g: np.ndarray, W: np.ndarray, lam: float, n: int, name: str) -> list[Mistake]:
    """What the usual mistakes make of ∂J/∂W = g, for a weight W with decay λ in a batch of n."""
    data = g - lam * W  # the part that comes from the mean loss
    return [
        Mistake(f"the weight-decay term λ·{name} is missing", data),
        Mistake("the 1/N of the mean loss is missing", data * n + lam * W),
        Mistake(f"both the weight-decay term λ·{name} and the 1/N of the mean loss are missing", data * n),
        Mistake(
            f"the weight-decay term is λ/2·{name}, but the derivative of λ/2·‖{name}‖² is λ·{name}", data + lam * W / 2
        ),
        Mistake(
            f"the weight-decay term is 2λ·{name}, but the penalty is λ/2·‖{name}‖², whose derivative is λ·{name}",
            data + 2 * lam * W,
        ),
        Mistake("the sign is flipped", -g),
    ]


SWAPPED = "the two results are swapped: return (dJ/dW1, dJ/dW2), in that order"


def check_d2l_weight_grads(dJ_dW1, dJ_dW2, X, y, W1, W2, lam, title: str = "", after: str = "") -> None:
    """The d2l network's ∂J/∂W1 and ∂J/∂W2 with weight decay λ, each with its known mistakes.

    Both are checked, and a wrong answer's message gives each one's verdict.
    """
    g = d2l_gradients(X, y, W1, W2, lam)
    n, sizes = len(X), d2l_sizes(X, W1, W2)
    report = Report(title)
    report.check(
        "dJ/dW1",
        lambda: check_array(
            "dJ/dW1",
            dJ_dW1,
            g["W1"],
            [
                *_weight_mistakes(g["W1"], W1, lam, n, "W1"),
                Mistake("the ReLU's mask (Z > 0) is missing", g["H"].T @ X + lam * W1),
                Mistake(SWAPPED, g["W2"]),
            ],
            sizes=sizes,
        ),
    )
    report.check(
        "dJ/dW2",
        lambda: check_array(
            "dJ/dW2",
            dJ_dW2,
            g["W2"],
            [
                *_weight_mistakes(g["W2"], W2, lam, n, "W2"),
                Mistake("the gradient uses Z instead of H = relu(Z)", g["O"].T @ (X @ W1.T) + lam * W2),
                Mistake(SWAPPED, g["W1"]),
            ],
            sizes=sizes,
        ),
    )
    report.close(after)


def check_hidden_bias_grad(dJ_db1, X, y, W1, b1, W2, lam, title: str = "", after: str = "") -> None:
    """∂J/∂b1 of the d2l network with a hidden bias b1 that is not penalized."""
    g = d2l_gradients(X, y, W1, W2, lam, b1=b1)
    n = len(X)
    report = Report(title)
    report.check(
        "dJ/db1",
        lambda: check_array(
            "dJ/db1",
            dJ_db1,
            g["b1"],
            [
                Mistake("the bias gradient is not summed over the batch (one row per example)", g["Z"]),
                Mistake(
                    "the sum runs over the hidden units (axis 1) instead of over the batch (axis 0)", g["Z"].sum(axis=1)
                ),
                Mistake("the bias gradient is averaged over the batch instead of summed (1/N twice)", g["b1"] / n),
                Mistake("the 1/N of the mean loss is missing", g["b1"] * n),
                Mistake(
                    "b1 is treated as penalized (λ·b1 added), but weight decay leaves the bias out", g["b1"] + lam * b1
                ),
                Mistake("the sign is flipped", -g["b1"]),
                Mistake("the ReLU's mask (Z > 0) is missing", g["H"].sum(axis=0)),
            ],
            sizes=d2l_sizes(X, W1, W2),
        ),
    )
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
    for p, rebuild in _problems(seed):
        title, after = _on("d2l_weight_grads", p, rebuild, "p['X'], p['y'], p['W1'], p['W2'], p['lam']")
        arguments = p["X"], p["y"], p["W1"], p["W2"], p["lam"]
        result = call("d2l_weight_grads", d2l_weight_grads, *arguments, names=("X", "y", "W1", "W2", "lam"))
        dJ_dW1, dJ_dW2 = returned("d2l_weight_grads", result, ("dJ_dW1", "dJ_dW2"))
        check_d2l_weight_grads(dJ_dW1, dJ_dW2, p["X"], p["y"], p["W1"], p["W2"], p["lam"], title, after)


@allowed("numpy")
def check_hidden_bias_grad_function(hidden_bias_grad: Callable, seed: int = 0) -> None:
    """``hidden_bias_grad(X, y, W1, b1, W2, lam)`` must return ∂J/∂b1: on a small batch, then on ``seed``'s."""
    for p, rebuild in _problems(seed):
        title, after = _on("hidden_bias_grad", p, rebuild, "p['X'], p['y'], p['W1'], p['b1'], p['W2'], p['lam']")
        arguments = p["X"], p["y"], p["W1"], p["b1"], p["W2"], p["lam"]
        answer = call("hidden_bias_grad", hidden_bias_grad, *arguments, names=("X", "y", "W1", "b1", "W2", "lam"))
        check_hidden_bias_grad(answer, p["X"], p["y"], p["W1"], p["b1"], p["W2"], p["lam"], title, after)


# --------------------------------------------------------------------------- VJP rules


def _two_sizes(seed: int, first: tuple[int, ...], count: int, low: int, high: int) -> list[tuple[int, ...]]:
    """``first``, then a second size drawn from ``seed``: ``count`` sizes in [low, high), all different,
    and none equal to the first's, so that an answer written for one size fails on the other."""
    rng = np.random.default_rng([seeded(seed), 2])  # apart from the problem's numbers, which stay as they were
    while True:
        second = tuple(int(v) for v in rng.integers(low, high, size=count))
        if len(set(second)) == count and not set(second) & set(first):
            return [first, second]


@allowed("numpy")
def check_matmul_vjp(matmul_vjp: Callable, seed: int = 0) -> None:
    """``matmul_vjp(A, B, G)`` must return ``(G Bᵀ, Aᵀ G)``, the VJP of C = A B for the upstream gradient G.

    ``seed`` picks the shapes and the numbers: two sizes each time (seed 0: A is 2×3 and B is
    3×4 first), so that an answer written for one shape fails on the other.
    """
    rng = np.random.default_rng(seeded(seed))
    first = (2, 3, 4) if seed == 0 else tuple(int(v) for v in rng.integers(2, 7, size=3))
    for size in _two_sizes(seed, first, 3, 2, 9):
        _check_matmul_vjp_on(matmul_vjp, rng, *size)


def _check_matmul_vjp_on(matmul_vjp: Callable, rng, m: int, k: int, n: int) -> None:
    A, B = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    G = rng.normal(size=(m, n))
    At, Bt = Tensor(A, requires_grad=True), Tensor(B, requires_grad=True)
    (At @ Bt).backward(G)
    dA, dB = returned("matmul_vjp", call("matmul_vjp", matmul_vjp, A, B, G, names=("A", "B", "G")), ("A_bar", "B_bar"))
    report = Report(f"matmul_vjp with A of shape {A.shape} and B of shape {B.shape}")
    swapped = "the two results are swapped: return (A_bar, B_bar), in that order"
    flipped = "the sign is flipped"
    report.check("dA", lambda: check_array("dA", dA, At.grad, [Mistake(flipped, -At.grad), Mistake(swapped, Bt.grad)]))
    report.check("dB", lambda: check_array("dB", dB, Bt.grad, [Mistake(flipped, -Bt.grad), Mistake(swapped, At.grad)]))
    report.close()


@allowed("numpy")
def check_softmax_cross_entropy_vjp(ce_grad: Callable, seed: int = 1) -> None:
    """``ce_grad(logits, labels)`` must return ∂L/∂logits of the *mean* cross-entropy: (softmax − onehot)/N.

    Two sizes each time (seed 1: 5 examples of 3 classes first), so that an answer written
    for one size (``np.eye(3)``, ``/ 5``) fails on the other.
    """
    rng = np.random.default_rng(seeded(seed))
    first = (5, 3) if seed == 1 else tuple(int(v) for v in rng.integers(3, 9, size=2))
    for n, q in _two_sizes(seed, first, 2, 2, 10):
        _check_ce_grad_on(ce_grad, rng, n, q)


def _check_ce_grad_on(ce_grad: Callable, rng, n: int, q: int) -> None:
    logits, labels = rng.normal(size=(n, q)) * 2, rng.integers(0, q, size=n)
    probabilities = np.exp(logits - logits.max(1, keepdims=True))
    probabilities /= probabilities.sum(1, keepdims=True)
    onehot = np.eye(q)[labels]
    expected = (probabilities - onehot) / len(labels)
    by_column = np.exp(logits - logits.max(0, keepdims=True))
    by_column /= by_column.sum(0, keepdims=True)
    answer = call("ce_grad", ce_grad, logits, labels, names=("logits", "labels"))
    mistakes = [
        Mistake("the 1/N of the mean is missing", probabilities - onehot),
        Mistake("the sign is flipped (onehot − softmax)", -expected),
        Mistake("the softmax is missing: the logits were used as probabilities", (logits - onehot) / len(labels)),
        Mistake("the softmax runs over axis 0 (the examples), not axis 1 (the classes)", (by_column - onehot) / n),
        Mistake("the one-hot is missing: softmax − 1 at every entry, not only at the label", (probabilities - 1) / n),
        Mistake("the one-hot is missing: the softmax alone is not the gradient", probabilities / n),
    ]
    report = Report(f"ce_grad on {n} examples of {q} classes (logits of shape {logits.shape})")
    report.check("dL/dlogits", lambda: check_array("dL/dlogits", answer, expected, mistakes))
    report.close()


# --------------------------------------------------------------------------- clipping


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
    for grads in (small, large):
        norm = float(np.sqrt(sum((g**2).sum() for g in grads)))
        factor = min(1.0, max_norm / norm)
        result = call(name, clip_by_norm, grads, max_norm, names=("grads", "max_norm"))
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
        per_tensor = [g * min(1.0, max_norm / np.sqrt((g**2).sum())) for g in grads]
        report = Report(
            f"{name} on arrays of shapes {joined([str(g.shape) for g in grads])} with a global norm of {norm:.3g} and "
            f"max_norm = {max_norm:.3g} ({'under' if norm < max_norm else 'over'} the threshold)",
            separate=False,
        )  # one answer: the arrays are scaled together
        for index, (got, g) in enumerate(zip(result, grads, strict=True)):
            report.check(
                f"[{index}]",
                lambda got=got, g=g, index=index: check_array(
                    f"the array [{index}] it returns",
                    got,
                    g * factor,
                    [
                        Mistake(
                            "it scales every gradient, also when the norm is already under the threshold",
                            g * max_norm / norm,
                        ),
                        Mistake(
                            "it clips each array by its own norm instead of the norm of all gradients together",
                            per_tensor[index],
                        ),
                        Mistake("it divides by the norm but does not multiply by max_norm", g / norm),
                        Mistake(
                            "the norm has no square root: it is the square root of the sum of squares",
                            g * min(1.0, max_norm / norm**2),
                        ),
                        Mistake(
                            "the norms of the arrays are added, but the global norm is the square root of the sum "
                            "of all squares",
                            g * min(1.0, max_norm / sum(float(np.sqrt((a**2).sum())) for a in grads)),
                        ),
                        Mistake(
                            "it clips each entry to [-max_norm, max_norm] (clipping by value), not the whole "
                            "gradient by its norm",
                            np.clip(g, -max_norm, max_norm),
                        ),
                    ],
                    rtol=RTOL,  # not a derivative: torch's convention, max_norm / (norm + 1e-6), is right too
                    atol=ATOL,
                ),
            )
        report.close()

"""The check of the capstone's exercise: the whole backward pass of a small network, by hand, in numpy.

embedding → linear → batch normalisation → tanh → linear → cross-entropy (the mean over the
batch). The seven expected gradients come from ``chainrule``'s backward pass through the same
network; the known mistakes from :func:`backward_with`, a numpy backward pass that makes them on
purpose. Each gradient gets its own verdict (and its own points in the grader), so an answer
that is right up to batch normalisation earns what it got right.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import chainrule.functional as layers
from chainrule.tensor import Tensor

from ..grading.contract import allowed, seeded
from .answers import AnswerError, Mistake, Report, check_array
from .calling import call

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


def backward_with(
    p: dict, tokens, y, *, keepdims=True, max_keepdims=True, one_hot=True, mean=True, paths=PATHS, ddof=0, add=True
):
    """The seven gradients in numpy, with the mistakes the flags name: the softmax's sum or its
    largest logit without keepdims, the one-hot not subtracted, the mean's 1/n left out, batch
    normalisation without the paths that ``paths`` leaves out or with the variance divided by
    n - ``ddof``, and the embedding's rows assigned rather than added."""
    n = len(y)
    X = p["E"][tokens].reshape(n, -1)
    Z = X @ p["W1"].T + p["b1"]
    s = np.sqrt(Z.var(axis=0, ddof=ddof) + EPS)
    Z_hat = (Z - Z.mean(axis=0)) / s
    H = np.tanh(p["gamma"] * Z_hat + p["beta"])
    O = H @ p["W2"].T + p["b2"]
    P = np.exp(O - (O.max(axis=1, keepdims=True) if max_keepdims else O.max(axis=1)))
    P = P / (P.sum(axis=1, keepdims=True) if keepdims else P.sum(axis=1))
    O_bar = P - np.eye(P.shape[1])[y] * one_hot
    O_bar = O_bar / n if mean else O_bar
    U_bar = (O_bar @ p["W2"]) * (1 - H * H)
    Zh_bar = p["gamma"] * U_bar
    Z_bar = Zh_bar - ("mean" in paths) * Zh_bar.mean(axis=0)
    variance = ("variance" in paths) * n / (n - ddof)  # dσ²/dZ has 2(Z - μ)/(n - ddof)
    Z_bar = (Z_bar - variance * Z_hat * (Zh_bar * Z_hat).mean(axis=0)) / s
    X_bar = (Z_bar @ p["W1"]).reshape(*tokens.shape, -1)
    E_bar = np.zeros_like(p["E"])
    if add:
        np.add.at(E_bar, tokens, X_bar)
    else:
        E_bar[tokens] = X_bar
    return {
        "E": E_bar,
        "W1": Z_bar.T @ X,
        "b1": Z_bar.sum(axis=0),
        "gamma": (U_bar * Z_hat).sum(axis=0),
        "beta": U_bar.sum(axis=0),
        "W2": O_bar.T @ H,
        "b2": O_bar.sum(axis=0),
        "U_bar": U_bar,
        "O_bar": O_bar,
        "Z_bar": Z_bar,
        "Z_hat": Z_hat,
    }


def problem(seed: int, index: int):
    """The parameters, tokens and labels of one call: first a batch as large as the number of
    classes (where a sum that lost its axis broadcasts without an error), then one that is not."""
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
    return params, tokens, rng.integers(0, q, size=n)


def _mistakes(p, tokens, y, right: dict) -> dict[str, list[Mistake]]:
    """The known mistakes of each gradient, by parameter; ``right`` is :func:`backward_with` without a mistake."""
    n, q = len(y), p["W2"].shape[0]
    found: dict[str, list[Mistake]] = {name: [] for name in PARAMETERS}
    wrong = [
        ("the one-hot of the labels is not subtracted: Ō = (P - Y)/n, Y one-hot", {"one_hot": False}),
        ("the mean's 1/n is missing: the loss is the mean over the batch, so Ō = (P - Y)/n", {"mean": False}),
        ("batch normalisation's paths through the mean and the variance are missing", {"paths": ()}),
        ("batch normalisation's path through the mean is missing: subtract the column mean", {"paths": ("variance",)}),
        ("batch normalisation's path through the variance is missing", {"paths": ("mean",)}),
        (
            "the variance divides by n - 1 (Bessel's correction); batch normalisation divides by n, "
            "as np.var does by default and PyTorch's batch_norm does in training",
            {"ddof": 1},
        ),
    ]
    if n == q:
        wrong.insert(
            0,
            (
                f"the softmax's sum over the classes lost its axis: with n = q = {n} it divides each column by "
                "one row's sum, without an error; sum with keepdims=True",
                {"keepdims": False},
            ),
        )
        wrong.insert(
            1,
            (
                f"the largest logit is subtracted without keepdims: with n = q = {n} it subtracts row j's "
                "largest logit from column j, which changes the softmax; use keepdims=True",
                {"max_keepdims": False},
            ),
        )
    for description, flags in wrong:
        answer = backward_with(p, tokens, y, **flags)
        for name in PARAMETERS:
            found[name].append(Mistake(description, answer[name]))
    assigned = backward_with(p, tokens, y, add=False)["E"]
    found["E"].append(Mistake("repeated tokens must add their rows (np.add.at), not overwrite them", assigned))
    for bias, upstream in (("b1", "Z_bar"), ("beta", "U_bar"), ("b2", "O_bar")):
        found[bias].append(
            Mistake(
                f"a broadcast sum not undone: {bias} is added to every row, so its gradient sums over the "
                "batch (axis 0)",
                right[upstream],
            )
        )
    found["gamma"].append(Mistake("γ̄ sums Ū ⊙ Ẑ over the batch, not Ū alone", right["beta"]))
    rows = right["U_bar"] * right["Z_hat"]
    found["gamma"].append(Mistake("a broadcast sum not undone: γ̄ sums Ū ⊙ Ẑ over the batch", rows))
    return found


def _terms(p: dict, tokens, right: dict) -> dict[str, float]:
    """For the gradients that pass through batch normalisation, whose terms cancel (b1's to 0 in exact
    arithmetic), the largest sum of |terms| in an entry: their rounding is relative to it."""
    n = len(tokens)
    X = p["E"][tokens].reshape(n, -1)
    Z = X @ p["W1"].T + p["b1"]
    s = np.sqrt(Z.var(axis=0) + EPS)
    zh_bar, z_hat = np.abs(p["gamma"] * right["U_bar"]), np.abs(right["Z_hat"])
    T = (zh_bar + zh_bar.mean(axis=0) + z_hat * (zh_bar * z_hat).mean(axis=0)) / s
    E = np.zeros_like(p["E"])
    np.add.at(E, tokens, (T @ np.abs(p["W1"])).reshape(*tokens.shape, -1))
    return {"E": float(E.max()), "W1": float((T.T @ np.abs(X)).max()), "b1": float(T.sum(axis=0).max())}


@allowed("numpy")
def check_network_backward(network_backward: Callable, seed: int = 0) -> None:
    """``network_backward(E, W1, b1, gamma, beta, W2, b2, tokens, y)`` must return the seven gradients
    of the mean cross-entropy, (E_bar, W1_bar, b1_bar, gamma_bar, beta_bar, W2_bar, b2_bar), on a batch
    with n = q and on one without, each batch with a repeated example."""
    name = "network_backward"
    for index in (0, 1):
        p, tokens, y = problem(seed, index)
        n, q = len(y), p["W2"].shape[0]
        expected = engine_gradients(p, tokens, y)
        arguments = (*(p[key] for key in PARAMETERS), tokens, y)
        result = call(name, network_backward, *arguments, names=(*PARAMETERS, "tokens", "y"))
        if not isinstance(result, (tuple, list)) or len(result) != len(PARAMETERS):
            got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
            raise AnswerError(name, f"{name} should return seven arrays ({', '.join(GRADIENTS)}), not {got}.")
        right = backward_with(p, tokens, y)
        mistakes = _mistakes(p, tokens, y, right)
        report = Report(f"{name} on n = {n} examples of T = {tokens.shape[1]} tokens, q = {q} classes")
        terms = _terms(p, tokens, right)
        for key, got in zip(PARAMETERS, result, strict=True):
            report.check(
                f"{key}_bar",
                lambda key=key, got=got: check_array(
                    f"{key}_bar", got, expected[key], mistakes[key], terms=terms.get(key, 0.0)
                ),
            )
        report.close()

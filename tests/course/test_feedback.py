"""chainrule_course.exercises.feedback: right answers pass, and each known mistake is named in the message.

Each planted wrong answer is what a student who makes that mistake would compute; the
test asserts the message text (quantity, entry, expected and received values, mistake).
The reference gradients are also checked against PyTorch, so a wrong "expected" cannot
pass silently.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np
import pytest
import torch

from chainrule import Value
from chainrule.nn import make_classification
from chainrule_course.exercises import feedback
from chainrule_course.exercises.answers import wrapped
from chainrule_course.exercises.feedback import AnswerError
from chainrule_course.exercises.scalar_checks import EXAMPLE_GRAPH

LAM = 0.05


@pytest.fixture(scope="module")
def d2l():
    X, y = make_classification(num_examples=16, num_inputs=4, num_classes=3, seed=0)
    rng = np.random.default_rng(3)
    W1, W2, b1 = rng.normal(size=(5, 4)), rng.normal(size=(3, 5)), rng.normal(size=5)
    return X, y, W1, W2, b1


def hand_d2l(X, y, W1, W2, b1=None, lam=LAM):
    """The hand-derived gradients, written out as in the mlp chapter."""
    Z = X @ W1.T + (0 if b1 is None else b1)
    H = np.maximum(Z, 0)
    O = H @ W2.T
    P = np.exp(O - O.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    dO = (P - np.eye(W2.shape[0])[y]) / len(X)
    dZ = (dO @ W2) * (Z > 0)
    return {"W1": dZ.T @ X + lam * W1, "W2": dO.T @ H + lam * W2, "b1": dZ.sum(0), "dZ": dZ, "dO": dO, "H": H}


def torch_d2l(X, y, W1, W2, b1):
    tensors = [torch.tensor(a, requires_grad=True) for a in (W1, W2, b1)]
    tW1, tW2, tb1 = tensors
    O = torch.relu(torch.tensor(X) @ tW1.T + tb1) @ tW2.T
    J = torch.nn.functional.cross_entropy(O, torch.tensor(y)) + LAM / 2 * ((tW1**2).sum() + (tW2**2).sum())
    J.backward()
    return {"W1": tW1.grad.numpy(), "W2": tW2.grad.numpy(), "b1": tb1.grad.numpy()}


def test_reference_gradients_match_torch_and_the_hand_formulas(d2l):
    X, y, W1, W2, b1 = d2l
    ours = feedback.d2l_gradients(X, y, W1, W2, LAM, b1=b1)
    theirs, hand = torch_d2l(X, y, W1, W2, b1), hand_d2l(X, y, W1, W2, b1)
    for name in ("W1", "W2", "b1"):
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-10)
        np.testing.assert_allclose(ours[name], hand[name], rtol=1e-10)


def raises(check, *args, match: str) -> AnswerError:
    with pytest.raises(AnswerError, match=match) as error:
        check(*args)
    return error.value


def test_right_d2l_answers_pass(d2l):
    X, y, W1, W2, _ = d2l
    hand = hand_d2l(X, y, W1, W2)
    feedback.check_d2l_weight_grads(hand["W1"], hand["W2"], X, y, W1, W2, LAM)


def weights(X, y, W1, W2, lam, dO_scale=1.0, mask=True):
    """The d2l weight gradients as a student derives them, with ∂J/∂O scaled and the ReLU's mask optional."""
    Z = X @ W1.T
    H = np.maximum(Z, 0)
    O = H @ W2.T
    P = np.exp(O - O.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    dO = (P - np.eye(W2.shape[0])[y]) / len(X) * dO_scale
    dZ = (dO @ W2) * ((Z > 0) if mask else 1)
    return dZ.T @ X, dO.T @ H


D2L_PLANTS = {
    "no-lambda-W2": (lambda g, W1, W2, lam, n: (g[0] + lam * W1, g[1]), "the weight-decay term λ·W2 is missing"),
    "no-lambda": (
        lambda g, W1, W2, lam, n: g,
        "the weight-decay term λ·W1 is missing, and the weight-decay term λ·W2 is missing",
    ),
    "lambda-over-N": (
        lambda g, W1, W2, lam, n: (g[0] + lam * W1 / n, g[1] + lam * W2 / n),
        "the weight-decay term is divided by N (λ·W1/N)",
    ),
    "half-lambda-W1": (lambda g, W1, W2, lam, n: (g[0] + lam * W1 / 2, g[1] + lam * W2), "λ/2·W1, but"),
    "double-lambda-W2": (lambda g, W1, W2, lam, n: (g[0] + lam * W1, g[1] + 2 * lam * W2), "2λ·W2, but"),
    "transposed": (lambda g, W1, W2, lam, n: ((g[0] + lam * W1).T, g[1] + lam * W2), "dJ/dW1 is transposed"),
    "swapped": (lambda g, W1, W2, lam, n: (g[1] + lam * W2, g[0] + lam * W1), "the two results are swapped"),
    "sign-W2": (lambda g, W1, W2, lam, n: (g[0] + lam * W1, -(g[1] + lam * W2)), "the sign of dJ/dW2 is flipped"),
}


@pytest.mark.parametrize("plant", D2L_PLANTS)
def test_each_d2l_mistake_is_named_when_it_fits_every_batch(plant):
    change, words = D2L_PLANTS[plant]

    def answer(X, y, W1, W2, lam):
        return change(weights(X, y, W1, W2, lam), W1, W2, lam, len(X))

    error = raises(feedback.check_d2l_weight_grads_function, answer, match="d2l_weight_grads on the batch")
    assert words in str(error) and error.mistake and words in error.mistake, str(error)


@pytest.mark.parametrize(
    "scale, mask, words",
    [
        (lambda n, q: n, True, "the 1/N of the mean loss is missing"),
        (lambda n, q: n / q, True, "divides by q (the number of classes), not by N"),
        (lambda n, q: -1, True, "the sign of ∂J/∂O is flipped"),
        (lambda n, q: 1, False, "the ReLU's mask (Z > 0) is missing"),
    ],
)
def test_a_slip_inside_the_derivation_is_named(scale, mask, words):
    def answer(X, y, W1, W2, lam):
        g = weights(X, y, W1, W2, lam, scale(len(X), W2.shape[0]), mask)
        return g[0] + lam * W1, g[1] + lam * W2

    error = raises(feedback.check_d2l_weight_grads_function, answer, match="d2l_weight_grads on the batch")
    assert words in str(error), str(error)


def test_a_mistake_that_fits_only_one_batch_is_located_not_named():
    """λ/N on the batch of N = 2 gives λ/2's numbers, yet it is named by the batch of another size; a table
    of the small batch's answer, or an answer off by noise, is only located."""
    error = raises(
        feedback.check_d2l_weight_grads_function,
        lambda X, y, W1, W2, lam: tuple(
            g + lam * W / len(X) for g, W in zip(weights(X, y, W1, W2, lam), (W1, W2), strict=False)
        ),
        match="divided by N",
    )
    assert "λ/2" not in str(error)
    small = feedback.d2l_problem(0, small=True)
    table = weights(small["X"], small["y"], small["W1"], small["W2"], small["lam"])
    table = (table[0] + small["lam"] * small["W1"], table[1] + small["lam"] * small["W2"])
    for answer in (
        lambda X, y, W1, W2, lam: table if len(X) == 2 else (W1 * 0, W2 * 0),
        lambda X, y, W1, W2, lam: tuple(
            g + lam * W + 1e-3 * np.cos(W) for g, W in zip(weights(X, y, W1, W2, lam), (W1, W2), strict=False)
        ),
    ):
        error = raises(feedback.check_d2l_weight_grads_function, answer, match=r"is wrong at entry \(\d+, \d+\)")
        assert error.mistake is None and "It matches" not in str(error), str(error)


def test_right_d2l_answers_in_other_forms_pass():
    def einsum(X, y, W1, W2, lam):
        g = weights(X, y, W1, W2, lam)
        return [np.einsum("ij->ij", g[0] + lam * W1).tolist(), torch.tensor(g[1] + lam * W2)]

    def float32(X, y, W1, W2, lam):
        g = weights(X, y, W1, W2, lam)
        return (g[0] + lam * W1).astype(np.float32), (g[1] + lam * W2).astype(np.float32)

    for answer in (einsum, float32):
        feedback.check_d2l_weight_grads_function(answer, seed=2)


def test_d2l_answers_of_the_wrong_kind_are_explained(d2l):
    X, y, W1, W2, _ = d2l
    hand = hand_d2l(X, y, W1, W2)
    raises(
        feedback.check_d2l_weight_grads,
        hand["W1"],
        None,
        X,
        y,
        W1,
        W2,
        LAM,
        match=r"dJ/dW2 is None: assign your answer to it \(an array of shape \(3, 5\)\)",
    )
    raises(
        feedback.check_d2l_weight_grads,
        hand["W1"],
        "W2 grad",
        X,
        y,
        W1,
        W2,
        LAM,
        match=r"dJ/dW2 is text \('W2 grad'\), not a number: compute it in Python \(an array of shape \(3, 5\)\)",
    )
    raises(
        feedback.check_d2l_weight_grads,
        hand["W1"],
        hand["W2"][:, :2],
        X,
        y,
        W1,
        W2,
        LAM,
        match=r"dJ/dW2 has shape \(3, 2\), expected \(3, 5\)",
    )
    nan = hand["W2"].copy()
    nan[1, 2] = np.nan
    raises(
        feedback.check_d2l_weight_grads, hand["W1"], nan, X, y, W1, W2, LAM, match=r"dJ/dW2 has nan at entry \(1, 2\)"
    )


def test_hidden_bias_mistakes(d2l):
    X, y, W1, W2, b1 = d2l
    hand = hand_d2l(X, y, W1, W2, b1)
    feedback.check_hidden_bias_grad(hand["b1"], X, y, W1, b1, W2, LAM)
    per_example = lambda X, y, W1, b1, W2, lam: hand_d2l(X, y, W1, W2, b1, lam)["dZ"]  # noqa: E731
    error = raises(
        feedback.check_hidden_bias_grad_function,
        per_example,
        match=r"dJ/db1 has shape \(2, 4\) = \(N, h\), expected \(4,\) = \(h,\); here N = 2 is the batch size",
    )
    assert "not summed over the batch" in str(error)
    penalized = lambda X, y, W1, b1, W2, lam: hand_d2l(X, y, W1, W2, b1, lam)["b1"] + lam * b1  # noqa: E731
    error = raises(feedback.check_hidden_bias_grad_function, penalized, match="dJ/db1 is wrong")
    assert "weight decay leaves the bias out" in str(error)


def test_scalar_graph_fan_out():
    # c = (a + a) * a at a = 3: dc/da = 4a = 12; forgetting one branch of b = a + a gives 3a = 9.
    expected = {"a": 12.0, "b": 3.0, "c": 1.0}
    mistakes = [
        ("a lost fan-out contribution: a feeds b twice (b = a + a), so both add to a.grad", {"a": 9.0}),
        ("the sign is flipped", {"a": -12.0, "b": -3.0}),
    ]
    feedback.check_scalars({"a": 12.0, "b": 3.0, "c": 1.0}, expected, mistakes)
    error = raises(
        feedback.check_scalars,
        {"a": 9.0, "b": 3.0, "c": 1.0},
        expected,
        mistakes,
        match=r"a is wrong: expected 12, received 9\. It matches a known mistake: a lost fan-out",
    )
    assert error.mistake.startswith("a lost fan-out")
    raises(feedback.check_scalars, {"a": 12.0, "c": 1.0}, expected, mistakes, match="b is missing from the answer")
    raises(
        feedback.check_scalars,
        {"a": 11.0, "b": 3.0, "c": 1.0},
        expected,
        mistakes,
        match=r"\n  WRONG: a is wrong: expected 12, received 11\.\n",
    )


PARENTS = EXAMPLE_GRAPH
DFS = ["x", "a", "b", "c", "d", "f"]


def test_topological_order_mistakes():
    feedback.check_topological_order(DFS, PARENTS, "f")
    raises(feedback.check_topological_order, DFS[::-1], PARENTS, "f", match="the order is reversed")
    raises(feedback.check_topological_order, DFS[:-1], PARENTS, "f", match="off by one: it leaves out f")
    raises(feedback.check_topological_order, DFS[1:], PARENTS, "f", match="off by one: it leaves out x")
    raises(
        feedback.check_topological_order,
        ["x", "a", "c", "b", "d", "f"],
        PARENTS,
        "f",
        match="c comes before its input b",
    )
    raises(
        feedback.check_topological_order,
        ["a", "b", "x", "c", "d", "f"],
        PARENTS,
        "f",
        match="a valid topological order, but not the one depth-first search from f gives",
    )
    raises(
        feedback.check_topological_order,
        DFS[:3] + ["e"] + DFS[3:],
        PARENTS,
        "f",
        match=r"the wrong nodes: \['e'\] do not lead to f",
    )
    raises(feedback.check_topological_order, DFS + ["f"], PARENTS, "f", match="off by one: it has one node too many")
    raises(
        feedback.check_topological_order,
        ["x", "a", "e", "c", "d", "f", "b"][:6],
        PARENTS,
        "f",
        match=r"the wrong nodes: missing \['b'\]; \['e'\] do not lead to f",
    )
    raises(feedback.check_topological_order, None, PARENTS, "f", match="should be a list of node names")
    raises(feedback.check_topological_order, "xabcdf", PARENTS, "f", match="should be a list of node names")


def test_memory_count_mistakes():
    """The counts for one size alone locate a wrong count; the function check, on every size, names the mistake."""
    N, d, h, q = 64, 4, 8, 3
    right = feedback.d2l_memory(N, d, h, q)
    assert right == {"prediction": 32 + 24 + 64 * 16, "training": 2 * 56 + 64 * 15 + 2 * 64 * 8}
    feedback.check_memory_count(right["prediction"], right["training"], N, d, h, q)
    one = feedback.d2l_memory(1, d, h, q)
    error = raises(
        feedback.check_memory_count, one["prediction"], one["training"], N, d, h, q, match="prediction is wrong"
    )
    assert "known mistake" not in str(error), "never a name from one size"
    assert str(error).startswith("memory_count(64, 4, 8, 3), that is N = 64, d = 4, h = 8, q = 3: 0 of 2 right.")
    planted = {
        "counted for one example": lambda N, d, h, q: tuple(feedback.d2l_memory(1, d, h, q).values()),
        "without the weight gradients": memory_variant(
            RIGHT_PREDICTION, lambda N, d, h, q, w: RIGHT_TRAINING(N, d, h, q, w) - w
        ),
        "without the gradients in flight": memory_variant(
            RIGHT_PREDICTION, lambda N, d, h, q, w: 2 * w + N * (d + h + q)
        ),
        "in-place ReLU": memory_variant(lambda N, d, h, q, w: w + N * max(d + h, h + q), RIGHT_TRAINING),
    }
    for named, memory_count in planted.items():
        raises(feedback.check_memory_count_function, memory_count, match=named)


def target(A, x):
    return np.tanh(A @ x.ravel()).sum() + (x**3).sum() / 3


def numeric_right(A, x, step):
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        ahead, behind = x.copy(), x.copy()
        ahead[index] += step
        behind[index] -= step
        grad[index] = (target(A, ahead) - target(A, behind)) / (2 * step)
    return grad


def numeric_wrong(kind):
    """numeric_grad with one planted mistake."""

    def answer(A, x, step):
        grad = np.zeros(x.shape)
        for index in np.ndindex(x.shape):
            ahead, behind = x.copy(), x.copy()
            ahead[index] += step
            if kind == "forward":
                grad[index] = (target(A, ahead) - target(A, x)) / step
            elif kind == "one step":
                behind[index] -= step
                grad[index] = (target(A, ahead) - target(A, behind)) / step
            elif kind == "back to x":
                moved = ahead.copy()
                moved[index] -= step
                grad[index] = (target(A, ahead) - target(A, moved)) / (2 * step)
        if kind == "all at once":
            grad[...] = (target(A, x + step) - target(A, x - step)) / (2 * step)
        return grad

    return answer


def test_numeric_grad_right_in_other_forms_and_each_mistake_named():
    for seed in (0, 19, 20):  # the public check and the hidden ones
        feedback.check_numeric_grad(numeric_right, seed=seed)
    feedback.check_numeric_grad(lambda A, x, step: numeric_right(A, x, step).astype(np.float32))
    feedback.check_numeric_grad(lambda A, x, step: torch.tensor(numeric_right(A, x, step)))
    named = {
        "forward": "it is a forward difference",
        "one step": "it divides by step, but the two points are 2 * step apart",
        "back to x": "the second point is x itself",
        "all at once": "it moves every entry of x at once",
    }
    for kind, mistake in named.items():
        error = raises(feedback.check_numeric_grad, numeric_wrong(kind), match=r"^the gradient numeric_grad returns")
        assert "It matches a known mistake: " + mistake in str(error), (kind, str(error))

    def in_place(A, x, step):
        x[0] += step  # left moved
        return numeric_right(A, x, step)

    raises(feedback.check_numeric_grad, in_place, match="numeric_grad changed x in place")

    def restored_by_arithmetic(A, x, step):  # the classic loop, which can leave x off by an ulp
        grad = np.zeros(x.shape)
        for index in np.ndindex(x.shape):
            x[index] += step
            ahead = target(A, x)
            x[index] -= 2 * step
            behind = target(A, x)
            x[index] += step
            grad[index] = (ahead - behind) / (2 * step)
        return grad

    raises(feedback.check_numeric_grad, restored_by_arithmetic, match="in place, though only by rounding")
    raises(feedback.check_numeric_grad, lambda A, x, step: numeric_right(A, x, step).ravel(), match=r"has shape")


def test_normalised_grads_right_in_other_forms_and_each_mistake_named():
    def grads(x, w, sign=1.0, power=3):
        r = np.sqrt(x @ x)
        return w / r, w / r - sign * (w @ x) * x / r**power

    for seed in (0, 25, 26):  # the public check and the hidden ones
        feedback.check_normalised_grads(grads, seed=seed)
    feedback.check_normalised_grads(lambda x, w: [g.astype(np.float32) for g in grads(x, w)])
    feedback.check_normalised_grads(lambda x, w: tuple(torch.tensor(g) for g in grads(x, w)))
    wrong = {
        "swapped": (lambda x, w: grads(x, w)[::-1], "the two results are swapped: return (detached, full)"),
        "detached is w": (lambda x, w: (w, grads(x, w)[1]), "is w: the division by |x| still applies"),
        "term missing": (lambda x, w: (grads(x, w)[0],) * 2, "the term through |x|, -(w·x) x / |x|³, is missing"),
        "sign": (lambda x, w: grads(x, w, sign=-1.0), "the term through |x| has the wrong sign"),
        "power": (lambda x, w: grads(x, w, power=2), "divided by |x|² instead of |x|³"),
        "one value": (lambda x, w: grads(x, w)[1], "should return two gradients"),
    }
    for kind, (answer, message) in wrong.items():
        error = raises(feedback.check_normalised_grads, answer, match=r"normalised_grads|the gradient")
        assert message in str(error), (kind, str(error))


def test_softplus_vjp_right_in_other_forms_and_each_mistake_named():
    def right(x, g):
        e = np.exp(-np.abs(x))
        return g * np.where(x >= 0, 1 / (1 + e), e / (1 + e))

    for seed in (0, 27, 28):  # the public check and the hidden ones
        feedback.check_softplus_vjp(right, seed=seed)
    feedback.check_softplus_vjp(lambda x, g: right(x, g).astype(np.float32))
    feedback.check_softplus_vjp(lambda x, g: torch.tensor(right(x, g)))
    wrong = {
        "overflows": (lambda x, g: g * np.exp(x) / (1 + np.exp(x)), "exp of a large number overflows"),
        "no g": (lambda x, g: right(x, np.ones_like(g)), "without multiplying by the incoming gradient g"),
        "sign": (lambda x, g: right(-x, g), "the sign of x is flipped"),
        "sigmoid's own": (lambda x, g: right(x, g) * right(-x, np.ones_like(g)), "the derivative of the sigmoid"),
        "the value": (lambda x, g: g * np.logaddexp(0, x), "the function instead of its derivative"),
    }
    for kind, (answer, message) in wrong.items():
        with np.errstate(all="ignore"):
            error = raises(feedback.check_softplus_vjp, answer, match=r"softplus_vjp")
        assert message in str(error), (kind, str(error))


def test_tanh_hvp_right_in_other_forms_and_each_mistake_named():
    def right(W, x, v, scale=-2.0, first=False, tangent=True):
        t = np.tanh(W @ x)
        if first:
            return W.T @ ((1 - t * t) * (W @ v))
        return scale * W.T @ (t * ((1 - t * t) if tangent else 1.0) * (W @ v))

    for seed in (0, 33, 34):  # the public check and the hidden ones
        feedback.check_tanh_hvp(right, seed=seed)
    feedback.check_tanh_hvp(lambda W, x, v: right(W, x, v).astype(np.float32))
    feedback.check_tanh_hvp(lambda W, x, v: torch.tensor(right(W, x, v)))
    feedback.check_tanh_hvp(lambda W, x, v: right(W, x, v).tolist())
    wrong = {
        "half": (lambda W, x, v: right(W, x, v, scale=-1.0), "it is half the product"),
        "sign": (lambda W, x, v: right(W, x, v, scale=2.0), "the sign is flipped"),
        "no tanh tangent": (
            lambda W, x, v: right(W, x, v, tangent=False),
            "the factor (1 - t * t) of t_dot is missing",
        ),
        "first derivative": (lambda W, x, v: right(W, x, v, first=True), "it applies tanh's first derivative"),
        "the gradient": (lambda W, x, v: W.T @ (1 - np.tanh(W @ x) ** 2), "not its derivative along v"),
        "W not W.T": (lambda W, x, v: right(W.T, x, v), "tanh_hvp raised ValueError"),
        "half and flipped": (lambda W, x, v: right(W, x, v, scale=1.0), "half the product with the sign flipped"),
        "swapped": (lambda W, x, v: right(W, v, x), "x and v are swapped"),
        "diagonal": (
            lambda W, x, v: -2 * ((W * W).T @ (np.tanh(W @ x) * (1 - np.tanh(W @ x) ** 2))) * v,
            "only the Hessian's diagonal",
        ),
    }
    for kind, (answer, message) in wrong.items():
        error = raises(feedback.check_tanh_hvp, answer, match=r"tanh_hvp")
        assert message in str(error), (kind, str(error))


def test_longest_chain_right_in_other_forms_and_each_mistake_named():
    def right(c, r):
        return math.comb(c + r, c)

    for seed in (0, 29, 30):  # the public check and the hidden ones
        feedback.check_longest_chain(right, seed=seed)
    feedback.check_longest_chain(lambda c, r: float(right(c, r)))
    feedback.check_longest_chain(lambda c, r: np.int64(right(c, r)))
    wrong = {
        "input slot": (lambda c, r: right(c + 1, r), "the input's slot is counted as a free one"),
        "first pass": (lambda c, r: right(c, r + 1), "the first forward pass is not counted as a run"),
        "multiplied": (lambda c, r: (r + 1) ** c, "the tail and the head multiply"),
        "split twice": (split_twice, "counted in both the tail and the head"),
        "c times runs plus one": (lambda c, r: c * r + 1, "the chain grows by runs steps per slot, c·runs + 1"),
    }
    for kind, (answer, message) in wrong.items():
        error = raises(feedback.check_longest_chain, answer, match=r"^longest_chain\(2, 3\): D is wrong")
        assert message in str(error), (kind, str(error))


def test_longest_chain_names_a_d_two_mistakes_share_at_one_pair_by_the_other_pairs():
    """c·runs + 1 and the split counted twice both give 7 at (2, 3), and so does c + runs + 2: the check's other
    pairs say which mistake it is, and name none for a formula that is neither."""
    split, linear = "counted in both the tail and the head", "c·runs + 1"
    for seed in (0, 29, 30):  # the public check and the hidden ones; 0 starts at (2, 3)
        error = raises(feedback.check_longest_chain, lambda c, r: c * r + 1, seed, match="D is wrong")
        assert linear in str(error) and split not in str(error), str(error)
        error = raises(feedback.check_longest_chain, split_twice, seed, match="D is wrong")
        assert split in str(error) and linear not in str(error), str(error)
        error = raises(feedback.check_longest_chain, lambda c, r: c + r + 2, seed, match="D is wrong")
        assert "known mistake" not in str(error), str(error)


def split_twice(c, r):
    """The recursion with the split step in both parts: D(c-1, r) + D(c, r-1) - 1."""
    if c == 1:
        return r + 1
    if r == 0:
        return 1
    return split_twice(c - 1, r) + split_twice(c, r - 1) - 1


def layernorm_right(x, gamma, y_bar, eps, axis=1, mean_path=True, variance_path=True, ddof=0):
    s = np.sqrt(x.var(axis=axis, keepdims=True, ddof=ddof) + eps)
    x_hat = (x - x.mean(axis=axis, keepdims=True)) / s
    xh_bar = gamma * y_bar
    x_bar = xh_bar - (xh_bar.mean(axis=axis, keepdims=True) if mean_path else 0)
    x_bar = x_bar - (x_hat * (xh_bar * x_hat).mean(axis=axis, keepdims=True) if variance_path else 0)
    return x_bar / s, (y_bar * x_hat).sum(axis=0), y_bar.sum(axis=0)


def test_layernorm_backward_right_in_other_forms_and_each_mistake_named():
    for seed in (0, 31, 32):  # the public check and the hidden ones
        feedback.check_layernorm_backward(layernorm_right, seed=seed)
    feedback.check_layernorm_backward(lambda *a: [g.astype(np.float32) for g in layernorm_right(*a)])
    feedback.check_layernorm_backward(lambda *a: tuple(torch.tensor(g) for g in layernorm_right(*a)))

    def with_x_bar(**planted):
        def answer(x, gamma, y_bar, eps):
            return (layernorm_right(x, gamma, y_bar, eps, **planted)[0], *layernorm_right(x, gamma, y_bar, eps)[1:])

        return answer

    wrong = {
        "batch axis": (with_x_bar(axis=0), "it normalises each column over the batch"),
        "no mean path": (with_x_bar(mean_path=False), "the path through the mean is missing"),
        "no variance path": (with_x_bar(variance_path=False), "the path through the variance is missing"),
        "no gamma": (
            lambda x, g, y, e: with_x_bar()(x, 1.0, y, e)[:1] + layernorm_right(x, g, y, e)[1:],
            "gamma is left",
        ),
        "two values": (lambda *a: layernorm_right(*a)[:2], "should return three arrays"),
        "ddof=1": (lambda *a: layernorm_right(*a, ddof=1), "it divides the variance by d - 1 (ddof=1)"),
        "no eps": (lambda x, g, y, e: layernorm_right(x, g, y, 0.0), "eps is left out of the square root"),
    }
    for kind, (answer, message) in wrong.items():
        error = raises(feedback.check_layernorm_backward, answer, match=r"x_bar|layernorm_backward")
        assert message in str(error), (kind, str(error))


def clip_right(grads, max_norm):
    norm = np.sqrt(sum((g**2).sum() for g in grads))
    return [g * min(1.0, max_norm / norm) for g in grads]


def test_clipping_mistakes():
    feedback.check_clip_by_norm(clip_right)

    def always(grads, max_norm):
        norm = np.sqrt(sum((g**2).sum() for g in grads))
        return [g * max_norm / norm for g in grads]

    def per_array(grads, max_norm):
        return [g * min(1.0, max_norm / np.sqrt((g**2).sum())) for g in grads]

    def broken(grads, max_norm):
        raise ValueError("oops")

    error = raises(feedback.check_clip_by_norm, always, match=r"^clip_by_norm on arrays of shapes \(3, 2\) and \(4,\)")
    assert "scales every gradient, also when the norm is already under the threshold" in str(error)
    raises(feedback.check_clip_by_norm, per_array, match="clips each array by its own norm")
    raises(
        feedback.check_clip_by_norm,
        broken,
        match=r"clip_by_norm raised ValueError in line \d+ of broken \(`raise ValueError\(\"oops\"\)`\): oops",
    )
    raises(
        feedback.check_clip_by_norm,
        lambda grads, max_norm: None,
        match=r"clip_by_norm returned None: is a `return` missing",
    )
    raises(feedback.check_clip_by_norm, lambda grads, max_norm: grads[:1], match="should return a list of 2 arrays")
    raises(feedback.check_clip_by_norm, 3, match="clip_by_norm should be a function, but it is a int")


def test_vjp_rule_mistakes():
    feedback.check_matmul_vjp(lambda A, B, G: (G @ B.T, A.T @ G))
    raises(
        feedback.check_matmul_vjp,
        lambda A, B, G: (B @ G.T, A.T @ G),
        match=r"dA has shape \(3, 2\), expected "
        r"\(2, 3\)\. It matches a known mistake: A_bar is transposed",
    )
    raises(feedback.check_matmul_vjp, lambda A, B, G: (G @ B.T,), match="should return 2 values, .*returned 1\\.")
    raises(feedback.check_matmul_vjp, lambda A, B, G: (A.T @ G, G @ B.T), match="the two results are swapped")

    def ce(logits, labels):
        p = np.exp(logits - logits.max(1, keepdims=True))
        return p / p.sum(1, keepdims=True) - np.eye(logits.shape[1])[labels]

    feedback.check_softmax_cross_entropy_vjp(lambda logits, labels: ce(logits, labels) / len(labels))
    raises(feedback.check_softmax_cross_entropy_vjp, ce, match="the 1/N of the mean is missing")
    raises(
        feedback.check_softmax_cross_entropy_vjp,
        lambda logits, labels: -ce(logits, labels) / len(labels),
        match=r"the sign of ∂L/∂logits is flipped \(onehot − softmax\)",
    )
    raises(
        feedback.check_softmax_cross_entropy_vjp,
        lambda logits, labels: ce(logits, labels) / logits.shape[1],
        match=r"divides by q \(the classes\), not by N",
    )

    def log_softmax(logits, labels):
        shifted = logits - logits.max(1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        return (log_p - np.eye(logits.shape[1])[labels]) / len(labels)

    raises(feedback.check_softmax_cross_entropy_vjp, log_softmax, match="the log-softmax is used where the softmax is")


def test_placeholders_and_unanswered_functions_say_not_answered_yet(d2l):
    X, y, W1, W2, _ = d2l
    hand = hand_d2l(X, y, W1, W2)
    error = raises(
        feedback.check_d2l_weight_grads,
        hand["W1"],
        ...,
        X,
        y,
        W1,
        W2,
        LAM,
        match=r"dJ/dW2 is not answered yet: replace the \.\.\. with your answer",
    )
    assert isinstance(error, feedback.NotAnswered)
    raises(feedback.check_topological_order, ..., PARENTS, "f", match="order is not answered yet")

    def unanswered(grads, max_norm):
        raise NotImplementedError("Exercise 8.3 is not answered yet: write clip_by_norm")

    error = raises(feedback.check_clip_by_norm, unanswered, match="^Exercise 8.3 is not answered yet")
    assert isinstance(error, feedback.NotAnswered)
    assert error._render_traceback_() == ["NotAnswered: Exercise 8.3 is not answered yet: write", "  clip_by_norm"]
    raises(
        feedback.call,
        "d2l_weight_grads",
        lambda *args: (_ for _ in ()).throw(NotImplementedError("no")),
        X,
        match="d2l_weight_grads raised NotImplementedError in line .*: no$",
    )
    raises(feedback.call, "d2l_weight_grads", lambda *args: 1 / 0, X, match="d2l_weight_grads raised ZeroDivisionError")


def broken_clip(grads, max_norm):
    return [g / 0 for g in grads] if False else 1 / 0


def test_jupyter_shows_the_message_first_and_alone():
    error = AnswerError("dJ/dW1", "dJ/dW1 is wrong at entry (0, 1): expected 1, received 2.")
    # IPython calls _render_traceback_ instead of printing the frames of the check.
    assert error._render_traceback_() == ["AnswerError: dJ/dW1 is wrong at entry (0, 1): expected", "  1, received 2."]
    raised = raises(feedback.check_clip_by_norm, broken_clip, match="clip_by_norm raised ZeroDivisionError in line")
    assert "of broken_clip (`return [g / 0 for g in grads] if False else 1 / 0`): division by zero" in str(raised)


def test_scalar_graph_checks_use_the_engine_and_name_mistakes():
    x, w, b = 0.5, -2.0, 0.5
    tx, tw, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, w, b))
    torch.tanh(tw * tx + tb).backward()
    feedback.check_tanh_neuron_grads(tx.grad.item(), tw.grad.item(), tb.grad.item(), x=x, w=w, b=b)
    slope = tb.grad.item()
    neuron = functools.partial(feedback.check_tanh_neuron_grads, x=x, w=w, b=b)
    raises(neuron, w, x, 1.0, match="tanh'.*is missing")
    raises(neuron, slope * x, slope * w, slope, match="are swapped")
    raises(neuron, -slope * w, -slope * x, -slope, match="sign is flipped")
    t = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
    s = t * t
    s.retain_grad()
    (s * t).backward()
    feedback.check_cube_grads(s.grad.item(), t.grad.item(), x=1.3)
    cube = functools.partial(feedback.check_cube_grads, x=1.3)
    raises(cube, 1.3, 2 * 1.3**2, match="a lost fan-out contribution")
    raises(cube, 1.3**2, 3 * 1.3**2, match="the gradient s.grad = x, not the value s")


def test_function_checks_on_random_batches():
    def weight_grads(X, y, W1, W2, lam):
        grads = hand_d2l(X, y, W1, W2, lam=lam)
        return grads["W1"], grads["W2"]

    shapes = set()
    for seed in range(6):
        feedback.check_d2l_weight_grads_function(weight_grads, seed=seed)
        shapes.add(feedback.d2l_problem(seed)["W1"].shape)
    assert len(shapes) > 1  # the seeds change the sizes, not only the numbers
    raises(feedback.check_d2l_weight_grads_function, lambda *a: weight_grads(*a)[::-1], match="dJ/dW2 has shape")
    raises(feedback.check_d2l_weight_grads_function, lambda *a: None, match=r"returned None")
    returned_one = r"should return 2 values, \(dJ_dW1, dJ_dW2\), but it returned one int \(1\)"
    raises(feedback.check_d2l_weight_grads_function, lambda *a: 1, match=returned_one)
    raises(feedback.check_hidden_bias_grad_function, lambda X, y, W1, b1, W2, lam: b1 * 0, match="dJ/db1 is wrong")
    raises(
        feedback.check_memory_count_function,
        lambda N, d, h, q: feedback.d2l_memory(N, d, h, q),
        match="should return 2 values, \\(prediction, training\\), but it returned one dict",
    )
    feedback.check_memory_count_function(lambda N, d, h, q: tuple(feedback.d2l_memory(N, d, h, q).values()))
    for seed in (3, 4):
        feedback.check_matmul_vjp(lambda A, B, G: (G @ B.T, A.T @ G), seed=seed)
        feedback.check_clip_by_norm(clip_right, seed=seed)


def test_a_function_that_never_returns_is_stopped():
    def forever(*args):
        while True:
            pass

    error = raises(
        functools.partial(feedback.call, time_limit=0.5), "clip", forever, 1, match=r"clip did not return within 0\.5 s"
    )
    assert "loop" in str(error)
    assert feedback.call("double", lambda v: 2 * v, 4, time_limit=0.5) == 8
    raises(feedback.call, "f", None, match="f is not defined")


# --------------------------------------------------------------------------- planted student answers
# Right answers in other dtypes and in other frameworks' formulas pass; wrong answers fail with
# a short message of the right kind; a message never names a cause the answer does not have.


def bias_grad(X, y, W1, b1, W2, lam):
    return hand_d2l(X, y, W1, W2, b1, lam=lam)["dZ"].sum(0)


def weight_grads(X, y, W1, W2, lam):
    grads = hand_d2l(X, y, W1, W2, lam=lam)
    return grads["W1"], grads["W2"]


def in_float32(function):
    """The same function computed in float32 throughout, as a student using float32 arrays would."""

    def float32(*args):
        args = [
            np.asarray(a, dtype=np.float32)
            if isinstance(a, np.ndarray) and a.dtype.kind == "f"
            else np.float32(a)
            if isinstance(a, float)
            else a
            for a in args
        ]
        result = function(*args)
        return tuple(r.astype(np.float32) for r in result) if isinstance(result, tuple) else result.astype(np.float32)

    return float32


def torch_weight_grads(X, y, W1, W2, lam):
    """Returns torch tensors that require no grad, as a student using torch.autograd would."""
    tW1, tW2 = (torch.tensor(W, requires_grad=True) for W in (W1, W2))
    O = torch.relu(torch.tensor(X) @ tW1.T) @ tW2.T
    J = torch.nn.functional.cross_entropy(O, torch.tensor(y)) + lam / 2 * ((tW1**2).sum() + (tW2**2).sum())
    J.backward()
    return tW1.grad, tW2.grad


def torch_clip(grads, max_norm):
    """torch.nn.utils.clip_grad_norm_'s formula: max_norm / (norm + 1e-6), clamped at 1."""
    norm = np.sqrt(sum((g**2).sum() for g in grads))
    return [g * min(1.0, max_norm / (norm + 1e-6)) for g in grads]


@pytest.mark.parametrize("seed", range(6))
def test_right_answers_pass_in_float32_and_in_torch(seed):
    feedback.check_d2l_weight_grads_function(in_float32(weight_grads), seed=seed)
    feedback.check_d2l_weight_grads_function(torch_weight_grads, seed=seed)
    feedback.check_hidden_bias_grad_function(in_float32(bias_grad), seed=seed)
    feedback.check_clip_by_norm(torch_clip, seed=seed + 2)
    feedback.check_clip_by_norm(lambda grads, m: [g.astype(np.float32) for g in torch_clip(grads, m)], seed=seed + 2)
    feedback.check_matmul_vjp(lambda A, B, G: ((G @ B.T).astype(np.float32), (A.T @ G).astype(np.float32)), seed=seed)
    memory = lambda N, d, h, q: tuple(np.int64(v) for v in feedback.d2l_memory(N, d, h, q).values())  # noqa: E731
    feedback.check_memory_count_function(memory)


def test_a_float32_answer_that_is_really_wrong_says_the_rounding_was_allowed_for():
    def off(X, y, W1, b1, W2, lam):
        return (bias_grad(X, y, W1, b1, W2, lam) * 1.001).astype(np.float32)

    error = raises(feedback.check_hidden_bias_grad_function, off, match="dJ/db1 is wrong")
    assert "Your answer is float32; the check allows for its rounding" in str(error)


def memory_variant(prediction, training):
    def memory_count(N, d, h, q):
        weights = h * d + q * h
        return prediction(N, d, h, q, weights), training(N, d, h, q, weights)

    return memory_count


RIGHT_PREDICTION = lambda N, d, h, q, w: w + N * max(d + h, 2 * h, h + q)  # noqa: E731
RIGHT_TRAINING = lambda N, d, h, q, w: 2 * w + N * (d + h + q) + 2 * N * max(h, q)  # noqa: E731


@pytest.mark.parametrize(
    "prediction, training, named",
    [
        # An answer that once passed every size with d > q: only the first layer's pair, no gradients in flight.
        (
            lambda N, d, h, q, w: w + N * (d + h),
            lambda N, d, h, q, w: 2 * w + N * (d + h + q),
            ["prediction counts only the first layer's pair", "training is counted without the gradients in flight"],
        ),
        (
            RIGHT_PREDICTION,
            lambda N, d, h, q, w: RIGHT_TRAINING(N, d, h, q, w) + 1,
            ["training counts the arrays chainrule keeps"],
        ),
        (
            RIGHT_PREDICTION,
            lambda N, d, h, q, w: RIGHT_TRAINING(N, d, h, q, w) - N * max(h, q),
            ["training counts one gradient in flight"],
        ),
        (
            lambda N, d, h, q, w: w + N * max(2 * h, h + q),
            lambda N, d, h, q, w: RIGHT_TRAINING(N, d, h, q, w) - N * d,
            ["the input X is not counted"],
        ),
    ],
)
def test_wrong_memory_counts_fail_on_the_smallest_size_that_shows_them(prediction, training, named):
    error = raises(feedback.check_memory_count_function, memory_variant(prediction, training), match="is wrong")
    message = str(error)
    first = re.match(r"memory_count\((\d+), (\d+), (\d+), (\d+)\), that is N = \1, d = \2, h = \3, q = \4", message)
    assert first, message
    for description in named:
        assert description in message, message
    assert message.count("It matches") == 1, message  # one mistake, of one slip or two, fits every size
    assert "expected" in message and len(message) < 900, message


def test_forward_order_and_lost_fan_out_are_both_named_when_they_give_the_same_number():
    error = raises(feedback.check_cube_grads, 1.3, 1.3**2, 1.3, match=r"WRONG: dy/dx is wrong")
    message = str(error)
    assert "right: dy/ds" in message
    assert "2 known mistakes that give the same numbers, and the check cannot tell which: (1) lost fan-out" in message
    assert "(2) a backward loop run in forward order" in message
    # One edge lost, either of x's two uses in s = x·x or the direct one into y: both edges named, not one.
    message = str(raises(feedback.check_cube_grads, 1.3, 2 * 1.3**2, 1.3, match="dy/dx is wrong"))
    assert "forward order" not in message and "(1) a lost fan-out contribution: x feeds s twice" in message
    assert "(2) a lost fan-out contribution: x also feeds y directly" in message


@pytest.mark.parametrize("derivation", ["D2L_WEIGHTS", "D2L_BIAS"])
def test_every_slip_of_the_d2l_derivations_is_named_by_its_own_answer_alone(derivation):
    """Plant each single slip the derivation offers: the check names it (and, where two slips give equal
    numbers on every batch, both), and no mistake that gives other numbers."""
    from chainrule_course.exercises import array_checks
    from chainrule_course.exercises.mistakes import Slips

    derive = getattr(array_checks, derivation)
    check = (
        feedback.check_d2l_weight_grads_function
        if derivation == "D2L_WEIGHTS"
        else feedback.check_hidden_bias_grad_function
    )
    problems = [p for p, _ in array_checks._problems(0)]
    slips = derive.slips(problems)
    assert len(slips) >= 8, slips
    for step, words in slips:

        def planted(*arguments, step=step, words=words):
            names = ("X", "y", "W1", "W2", "lam") if len(arguments) == 5 else ("X", "y", "W1", "b1", "W2", "lam")
            return derive.derive(dict(zip(names, arguments, strict=False)), Slips({step: words}))

        try:
            check(planted)
        except AnswerError as error:
            assert error.mistake is not None and words in str(error), (words, str(error))
        else:
            pytest.fail(f"{words}: passed")


def test_a_shape_message_says_which_size_each_length_is():
    for seed in range(20):
        sizes = feedback.d2l_problem(seed)["sizes"]
        assert len(set(sizes.values())) == 4, f"seed {seed}: the sizes must differ, or a length could be two sizes"
    wrong_axis = lambda X, y, W1, b1, W2, lam: hand_d2l(X, y, W1, W2, b1, lam)["dZ"].sum(1)  # noqa: E731
    message = str(raises(feedback.check_hidden_bias_grad_function, wrong_axis, match="dJ/db1 has shape"))
    assert (
        "dJ/db1 has shape (2,) = (N,), expected (4,) = (h,); here N = 2 is the batch size, h = 4 is the "
        "hidden width." in message
    ), message
    assert "the sum runs over the hidden units (axis 1) instead of over the batch (axis 0)" in message


def test_a_failure_says_how_to_rebuild_its_batch_and_tries_the_smallest_first():
    message = str(raises(feedback.check_hidden_bias_grad_function, lambda *a: -bias_grad(*a), match="sign"))
    assert message.startswith(
        "hidden_bias_grad on the batch feedback.d2l_problem(0, small=True) (N = 2, d = 3, h = 4, q = 5)"
    ), message
    p = feedback.d2l_problem(0, small=True)
    assert (
        "To try it yourself: p = feedback.d2l_problem(0, small=True), then hidden_bias_grad(p['X'], p['y'], "
        "p['W1'], p['b1'], p['W2'], p['lam'])." in message
    )
    assert p["X"].shape == (2, 3) and p["W1"].shape == (4, 3) and p["W2"].shape == (5, 4)
    # A mistake the small batch cannot show (N = 2 examples all in the ReLU's active region, say) is
    # reported on the seed's batch instead: the rebuild line then names that one.
    message = str(
        raises(feedback.check_d2l_weight_grads_function, lambda *a: weight_grads(*a)[::-1], match="dJ/dW1 has shape")
    )
    assert "feedback.d2l_problem(0, small=True)" in message


def test_a_function_without_return_is_asked_about_it():
    def forgot(X, y, W1, b1, W2, lam):
        bias_grad(X, y, W1, b1, W2, lam)

    error = raises(feedback.check_hidden_bias_grad_function, forgot, match="hidden_bias_grad returned None")
    assert "is a `return` missing" in str(error) and "assign your answer" not in str(error)


def test_an_exercise_block_turns_a_missing_answer_into_one_line():
    with pytest.raises(feedback.NotAnswered) as caught:
        with feedback.exercise("3.2"):
            dy_ds  # noqa: B018, F821 - the answer cell was never run
    assert caught.value._render_traceback_() == [
        "NotAnswered: Exercise 3.2: dy_ds is not defined. Run",
        "  your answer cell first; if it stopped with an error,",
        "  fix that and run it again.",
    ]
    with pytest.raises(feedback.NotAnswered, match="^Exercise 6.2 is not answered yet"):
        with feedback.exercise("6.2"):
            raise NotImplementedError("Exercise 6.2 is not answered yet: write hidden_bias_grad")

    # As a chapter writes its answer cell (a fork may renumber): the number is the check's to give,
    # whether the check calls the stub through feedback's call or the stub raises in the cell.
    def stub(x):
        raise NotImplementedError("not answered yet: write stub")

    with pytest.raises(feedback.NotAnswered, match="^Exercise 4.7 is not answered yet: write stub$"):
        with feedback.exercise("4.7"):
            feedback.check_cube_grads_function(stub)
    with pytest.raises(feedback.NotAnswered, match="^Exercise 4.7 is not answered yet: write stub$"):
        with feedback.exercise("4.7"):
            stub(1.0)
    with pytest.raises(ZeroDivisionError):  # a mistake in the check itself is not hidden
        with feedback.exercise("6.2"):
            1 / 0


def test_the_summary_gives_one_verdict_per_exercise(capsys):
    summary = feedback.Summary("Chapter 6")
    with summary.exercise("6.2"):
        print("hidden_bias_grad passes the checks.")
        feedback.check_hidden_bias_grad_function(bias_grad)
    with summary.exercise("6.3"):
        feedback.check_memory_count_function(memory_count)  # noqa: F821 - never answered
    with summary.exercise("6.6"):
        feedback.check_d2l_weight_grads_function(lambda *a: weight_grads(*a)[::-1])
    summary.show()
    shown = capsys.readouterr().out
    lines = shown.splitlines()
    assert lines[0] == "Chapter 6: 1 of 3 checked exercises pass.", shown
    assert lines[1] == "  Exercise 6.2: passes"
    assert lines[2] == "  Exercise 6.3: not answered yet"
    assert lines[3].startswith("  Exercise 6.6: WRONG: d2l_weight_grads on the batch"), shown
    assert "the two results are swapped" in shown, "the summary names the mistake, not '0 of 2 right'"
    assert "passes the checks." not in shown, "what a check prints stays out of the summary"
    assert "hidden tests" in " ".join(lines[-2:])


def test_messages_wrap_at_spaces_within_56_columns():
    """Lab re-wraps longer lines mid-number in a 900 px window with the file browser open."""
    message = str(raises(feedback.check_cube_grads, 1.3, 1.3**2, 1.3, match="dy/dx"))
    shown = AnswerError("dy/dx", message)._render_traceback_()
    assert max(map(len, shown)) <= 56 < max(map(len, message.split("\n")))
    assert " ".join(shown).split() == f"AnswerError: {message}".split(), "no word is cut in two"


def test_the_instructors_page_quotes_a_real_message():
    """The example on the instructors page is what the check says to that planted answer, line for line
    (wrapped at 72 columns there, the width of the page's column)."""
    from common import ROOT

    page = (ROOT / "chapters" / "instructors.md").read_text(encoding="utf-8")
    quoted = re.search(r"```text\n(AnswerError: d2l_weight_grads.*?)\n```", page, re.DOTALL)
    assert quoted, "the instructors page has no example message"

    def no_decay_on_W2(X, y, W1, W2, lam):
        g = feedback.d2l_gradients(X, y, W1, W2, lam)
        return g["W1"], g["W2"] - lam * W2

    error = raises(feedback.check_d2l_weight_grads_function, no_decay_on_W2, match="λ·W2 is missing")
    assert quoted[1].splitlines() == wrapped(f"AnswerError: {error}", 72)


# --------------------------------------------------------------------------- inputs the answer changes


def _d2l_weight_grads(X, y, W1, W2, lam):
    g = feedback.d2l_gradients(X, y, W1, W2, lam)
    return g["W1"], g["W2"]


def _hidden_bias_grad(X, y, W1, b1, W2, lam):
    return feedback.d2l_gradients(X, y, W1, W2, lam, b1=b1)["b1"]


def test_a_function_that_changes_its_inputs_is_told_so_and_never_judged_on_changed_inputs():
    """The function gets copies: a wrong answer that scales X first cannot pass by changing the check's X,
    and a right one that scales W1 after computing cannot fail for it; both are told what they changed."""

    def scales_x_first(X, y, W1, W2, lam):
        X /= 255.0
        return _d2l_weight_grads(X, y, W1, W2, lam)

    def right_numbers_then_changes_w1(X, y, W1, W2, lam):
        g1, g2 = _d2l_weight_grads(X, y, W1, W2, lam)
        W1 *= lam
        return g1, g2

    def bias_scales_x(X, y, W1, b1, W2, lam):
        X /= 255.0
        return _hidden_bias_grad(X, y, W1, b1, W2, lam)

    def clips_in_place(grads, max_norm):
        factor = min(1.0, max_norm / np.sqrt(sum((g**2).sum() for g in grads)))
        for g in grads:
            g *= factor
        return grads

    feedback.check_d2l_weight_grads_function(_d2l_weight_grads)  # the same answers, without the change, pass
    feedback.check_hidden_bias_grad_function(_hidden_bias_grad)
    for check, function, changed in [
        (feedback.check_d2l_weight_grads_function, scales_x_first, "X"),
        (feedback.check_d2l_weight_grads_function, right_numbers_then_changes_w1, "W1"),
        (feedback.check_hidden_bias_grad_function, bias_scales_x, "X"),
        (feedback.check_clip_by_norm, clips_in_place, "grads"),
    ]:
        error = raises(check, function, match=rf"changed {changed} in place, but the caller's arrays must stay")
        assert error.mistake == "an argument changed in place" and "is wrong at entry" not in str(error)


def test_two_counts_in_an_array_pass_and_numbers_in_quotes_do_not():
    """6.3 takes any pair of numbers (an array of two too); 1.2 and 3.2 refuse text, which numpy would read."""

    def as_array(N, d, h, q):
        counts = feedback.d2l_memory(N, d, h, q)
        return np.array([counts["prediction"], counts["training"]])

    feedback.check_memory_count_function(as_array)
    x = 0.7
    right = (x, 3 * x**2)  # dy/ds = x (y = s·x with s = x·x) and dy/dx = 3x²
    feedback.check_cube_grads(*right, x)
    for pasted in ([f"{right[0]:.6f}", right[1]], [right[0], str(right[1])], [x, [f"{right[1]}"]]):
        raises(feedback.check_cube_grads, *pasted, x, match=r"is text \(.*\), not a number: remove the quotes")
    raises(feedback.check_tanh_neuron_grads, "0.1", 0.2, 0.3, 0.5, -2.0, 0.5, match="dy/dx is text")


def test_an_answer_written_for_the_public_size_fails_on_the_second():
    """5.5: the public VJP checks try two sizes, so np.eye(3) and / 5 (the first size's) cannot pass."""

    def softmax(logits):
        e = np.exp(logits - logits.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    feedback.check_softmax_cross_entropy_vjp(lambda z, y: (softmax(z) - np.eye(z.shape[1])[y]) / len(y))
    raises(
        feedback.check_softmax_cross_entropy_vjp,
        lambda z, y: (softmax(z) - np.eye(3)[y]) / 5,
        match=r"ce_grad raised|ce_grad on \d+ examples of \d+ classes",
    )
    for seed in (0, 3):
        sizes = feedback._two_sizes(seed, (2, 3, 4), 3, 2, 9)
        assert len(sizes) == 2 and not set(sizes[0]) & set(sizes[1]) and len(set(sizes[1])) == 3
    raises(
        feedback.check_matmul_vjp,
        lambda A, B, G: (G @ B.T, A.T @ G) if A.shape == (2, 3) else (np.zeros((2, 3)), np.zeros((3, 4))),
        match=r"matmul_vjp with A of shape \((?!2, 3)",
    )


def test_more_mistakes_are_named():
    """Named mistakes: accumulation (3.2), tanh for tanh' and a Value for a number (1.2), and four of 8.4."""
    x = 0.7
    error = raises(feedback.check_cube_grads, 2 * x, 6 * x**2, x, match="backward\\(\\) ran twice")
    assert error.mistake.startswith("every gradient is doubled")
    raises(feedback.check_cube_grads, Value(x), 3 * x**2, x, match=r"dy/ds is a Value .*: give its number, \.data")
    xv, w, b = 0.5, -2.0, 0.5
    t = np.tanh(w * xv + b)
    raises(feedback.check_tanh_neuron_grads, t * w, t * xv, t, xv, w, b, match="tanh\\(z\\) was used for tanh'\\(z\\)")

    def norm_of(grads):
        return np.sqrt(sum((g**2).sum() for g in grads))

    planted = {
        "the norm returned with the list": lambda grads, m: (clip_right(grads, m), norm_of(grads)),
        "the norm has no square root": lambda grads, m: [g * min(1.0, m / norm_of(grads) ** 2) for g in grads],
        "the norms of the arrays are added": lambda grads, m: [
            g * min(1.0, m / sum(np.sqrt((a**2).sum()) for a in grads)) for g in grads
        ],
        "clipping by value": lambda grads, m: [np.clip(g, -m, m) for g in grads],
    }
    for named, answer in planted.items():
        error = raises(feedback.check_clip_by_norm, answer, match="clip_by_norm")
        assert named in (error.mistake or ""), (named, str(error))


def test_each_memory_mistake_is_named_by_the_public_check():
    """6.3: every known mistake, planted as a memory_count, is named at the first public size where it differs."""
    count = len(feedback.memory_mistakes(7, 3, 5, 9))
    assert count >= 13
    for index in range(count):

        def planted(N, d, h, q, index=index):
            counts = {**feedback.d2l_memory(N, d, h, q), **feedback.memory_mistakes(N, d, h, q)[index][1]}
            return counts["prediction"], counts["training"]

        description = feedback.memory_mistakes(7, 3, 5, 9)[index][0]
        message = str(raises(feedback.check_memory_count_function, planted, match="is wrong"))
        assert description in message, (description, message)
    N, d, h, q = feedback.MEMORY_SIZES[0]
    assert q != d + h, "the first size keeps 'every layer' apart from the other counts"


def test_a_missing_mask_and_a_number_for_a_vector_are_named_in_6_2():
    def no_mask(X, y, W1, b1, W2, lam):
        return feedback.d2l_gradients(X, y, W1, W2, lam, b1=b1)["H"].sum(axis=0)

    raises(feedback.check_hidden_bias_grad_function, no_mask, match=r"the ReLU's mask \(Z > 0\) is missing")

    def summed_to_a_number(X, y, W1, b1, W2, lam):
        return float(feedback.d2l_gradients(X, y, W1, W2, lam, b1=b1)["b1"].sum())

    message = str(raises(feedback.check_hidden_bias_grad_function, summed_to_a_number, match="dJ/db1 is one number"))
    assert "should be an array of shape (4,) = (h,); here h = 4 is the hidden width" in message, message


def test_softmax_over_the_wrong_axis_and_a_missing_one_hot_are_named_in_5_5():
    def softmax(z, axis):
        e = np.exp(z - z.max(axis, keepdims=True))
        return e / e.sum(axis, keepdims=True)

    def onehot(z, y):
        return np.eye(z.shape[1])[y]

    planted = {
        "the softmax runs over axis 0": lambda z, y: (softmax(z, 0) - onehot(z, y)) / len(y),
        "softmax − 1 at every entry": lambda z, y: (softmax(z, 1) - 1) / len(y),
        "the softmax alone is not the gradient": lambda z, y: softmax(z, 1) / len(y),
        "the 1/N of the mean is missing": lambda z, y: softmax(z, 1) - onehot(z, y),
    }
    for mistake, ce_grad in planted.items():
        error = raises(feedback.check_softmax_cross_entropy_vjp, ce_grad, match="dL/dlogits is wrong")
        assert mistake in error.mistake and error.mistake in str(error), (mistake, str(error))
    three = raises(feedback.check_matmul_vjp, lambda A, B, G: (G @ B.T, A.T @ G, G), match="returned 3\\.$")
    assert "array(" not in str(three), "the count is said, no repr is cut"


def test_a_clip_written_for_two_arrays_fails_on_the_second_list():
    def two_arrays(grads, max_norm):
        factor = min(1.0, max_norm / np.sqrt((grads[0] ** 2).sum() + (grads[1] ** 2).sum()))
        return [grads[0] * factor, grads[1] * factor]

    raises(feedback.check_clip_by_norm, two_arrays, match="a list of 3 arrays, but it returned 2 values")


def test_a_count_off_by_a_few_is_shown_exactly():
    """Not 'expected 1.24326e+06, received 1.24326e+06' for a count off by 4: the digits that differ."""
    counts = feedback.d2l_memory(1000, 784, 256, 10)
    message = str(
        raises(
            feedback.check_memory_count,
            counts["prediction"] + 4,
            counts["training"],
            1000,
            784,
            256,
            10,
            match="prediction is wrong",
        )
    )
    assert f"expected {counts['prediction']:,}, received {counts['prediction'] + 4:,}." in message, message


def test_cube_grads_in_the_wrong_order_is_named():
    error = raises(feedback.check_cube_grads, 3 * 1.3**2, 1.3, 1.3, match="dy/ds is wrong")
    assert "dy/ds and dy/dx are swapped" in str(error)


def test_an_expected_zero_is_shown_as_0_not_as_its_rounding():
    """Before: "expected -5.55112e-17" for an entry whose exact value is 0 (the reference's rounding)."""
    from chainrule_course.exercises.answers import check_array

    zero = np.array([1.0, -5.551115123125783e-17])
    raises(check_array, "g", np.array([1.0, 0.5]), zero, match="expected 0, received 0.5 ")
    raises(check_array, "g", np.array([1.0, 0.5]), np.array([1.0, 1e-9]), match="expected 1e-09, received 0.5 ")


def _tape_grads(tape, k, forwards=False, overwrite=False):
    """ex-engine-tape's sweep; ``forwards`` and ``overwrite`` plant its two mistakes."""
    grads = [0.0] * (k + len(tape))
    grads[-1] = 1.0
    for i in range(len(tape)) if forwards else reversed(range(len(tape))):
        for parent, local in zip(*tape[i], strict=True):
            grads[parent] = grads[k + i] * local + (0.0 if overwrite else grads[parent])
    return grads


def test_a_tape_s_backward_pass_is_checked_against_the_engine_and_its_mistakes_named():
    for seed in (0, 5, 31, 32):
        feedback.check_tape_grads_function(_tape_grads, seed=seed)
    error = raises(feedback.check_tape_grads_function, lambda t, k: _tape_grads(t, k, overwrite=True), match="WRONG")
    assert "written over another" in str(error)
    error = raises(feedback.check_tape_grads_function, lambda t, k: _tape_grads(t, k, forwards=True), match="WRONG")
    assert "the tape run forwards" in str(error)
    raises(feedback.check_tape_grads_function, lambda t, k: _tape_grads(t, k)[:-1], match="return a list of")


def _first_bad_entry(tape, k, test="finite", forwards=False, offset=0, earliest=False):
    """The profiling chapter's anomaly search; the other arguments plant its mistakes."""
    grads = [0.0] * (k + len(tape))
    grads[-1] = 1.0
    bad = {
        "finite": lambda g, locals_, made: not all(map(math.isfinite, made)),
        "nan": lambda g, locals_, made: any(map(math.isnan, made)),
        "incoming": lambda g, locals_, made: not math.isfinite(g),
        "locals": lambda g, locals_, made: not all(map(math.isfinite, locals_)),
    }[test]
    found = []
    for i in range(len(tape)) if forwards else reversed(range(len(tape))):
        parents, local_grads = tape[i]
        made = [grads[k + i] * local for local in local_grads]
        if bad(grads[k + i], local_grads, made):
            found.append(i + offset)
        for parent, contribution in zip(parents, made, strict=True):
            grads[parent] += contribution
    if earliest:
        return min(found)
    return found[0] if found else None


@pytest.mark.parametrize(
    "planted, named",
    [
        ({"test": "nan"}, "only nan was looked for"),
        ({"test": "incoming"}, "this entry received a gradient that is not finite"),
        ({"offset": 3}, "that is the index of the entry's value, k + i"),
        ({"test": "locals"}, "only the local gradients were tested"),
        ({"forwards": True}, "the tape run forwards"),
    ],
)
def test_where_a_tape_s_pass_first_fails_is_checked_and_each_mistake_named(planted, named):
    for seed in (0, 1, 31, 32):
        feedback.check_first_bad_entry_function(_first_bad_entry, seed=seed)
    for seed in (0, 31, 32):  # the public check and both hidden ones tell each mistake from the answer
        mistaken = functools.partial(_first_bad_entry, **planted)
        error = raises(feedback.check_first_bad_entry_function, mistaken, seed, match="first_bad_entry on tape")
        assert f"It matches a known mistake: {named}" in str(error) or f"; or {named}" in str(error), str(error)


def test_the_earliest_bad_entry_and_answers_that_are_not_an_index_are_named():
    earliest = functools.partial(_first_bad_entry, earliest=True)
    error = raises(feedback.check_first_bad_entry_function, earliest, match="It matches a known mistake")
    assert "the earliest such entry on the tape" in str(error)
    raises(feedback.check_first_bad_entry_function, lambda t, k: True, match="return the index of an entry")
    raises(feedback.check_first_bad_entry_function, lambda t, k: "2", match="return the index of an entry")


def test_the_anomaly_tapes_are_what_their_kind_says():
    from chainrule_course.exercises import tape_checks

    for seed in range(200):
        for kind, tape, k in tape_checks.anomaly_cases(seed):
            entry = _first_bad_entry(tape, k)
            locals_ = [local for _, local_grads in tape for local in local_grads]
            assert entry is not None and len(tape) == 6 and k == 3
            assert (_first_bad_entry(tape, k, test="nan") == entry) == (kind == "nan"), (seed, kind)
            assert any(math.isinf(local) for local in locals_) == (kind != "overflow"), (seed, kind)

"""chainrule.feedback: right answers pass, and each known mistake is named in the message.

Each planted wrong answer is what a student who makes that mistake would compute; the
test asserts the message text (quantity, entry, expected and received values, mistake).
The reference gradients are also checked against PyTorch, so a wrong "expected" cannot
pass silently.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
import torch

from chainrule import feedback
from chainrule.feedback import AnswerError
from chainrule.nn import make_classification

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


@pytest.mark.parametrize("planted, quantity, mistake", [
    (lambda h, X, W1, W2: (h["W1"], h["W2"] - LAM * W2), "dJ/dW2", "the weight-decay term λ·W2 is missing"),
    (lambda h, X, W1, W2: (h["W1"] - LAM * W1, h["W2"]), "dJ/dW1", "the weight-decay term λ·W1 is missing"),
    (lambda h, X, W1, W2: (h["W1"], -h["W2"]), "dJ/dW2", "the sign is flipped"),
    (lambda h, X, W1, W2: (h["W1"], (h["W2"] - LAM * W2) * len(X) + LAM * W2), "dJ/dW2",
     "the 1/N of the mean loss is missing"),
    (lambda h, X, W1, W2: (h["W1"].T, h["W2"]), "dJ/dW1", "transposed"),
    (lambda h, X, W1, W2: ((h["dO"] @ W2).T @ X + LAM * W1, h["W2"]), "dJ/dW1", "the ReLU's mask (Z > 0) is missing"),
], ids=["no-lambda-W2", "no-lambda-W1", "sign", "no-1/N", "transposed", "no-relu-mask"])
def test_each_d2l_mistake_is_named(d2l, planted, quantity, mistake):
    X, y, W1, W2, _ = d2l
    dW1, dW2 = planted(hand_d2l(X, y, W1, W2), X, W1, W2)
    error = raises(feedback.check_d2l_weight_grads, dW1, dW2, X, y, W1, W2, LAM, match=re.escape(quantity))
    assert mistake in str(error), str(error)
    assert str(error).startswith(quantity), "the message must start with the quantity"
    if "transposed" not in mistake:
        assert re.search(r"at entry \(\d+, \d+\): expected -?[\d.e-]+, received -?[\d.e-]+ \(\d+ of \d+ entries differ\)",
                         str(error)), str(error)


def test_d2l_answers_of_the_wrong_kind_are_explained(d2l):
    X, y, W1, W2, _ = d2l
    hand = hand_d2l(X, y, W1, W2)
    raises(feedback.check_d2l_weight_grads, hand["W1"], None, X, y, W1, W2, LAM,
           match=r"dJ/dW2 is None: assign your answer to it \(an array of shape \(3, 5\)\)")
    raises(feedback.check_d2l_weight_grads, hand["W1"], "W2 grad", X, y, W1, W2, LAM,
           match=r"dJ/dW2 should be numbers \(shape \(3, 5\)\), but it is a str")
    raises(feedback.check_d2l_weight_grads, hand["W1"], hand["W2"][:, :2], X, y, W1, W2, LAM,
           match=r"dJ/dW2 has shape \(3, 2\), expected \(3, 5\)")
    nan = hand["W2"].copy()
    nan[1, 2] = np.nan
    raises(feedback.check_d2l_weight_grads, hand["W1"], nan, X, y, W1, W2, LAM, match=r"dJ/dW2 has nan at entry \(1, 2\)")


def test_hidden_bias_mistakes(d2l):
    X, y, W1, W2, b1 = d2l
    hand = hand_d2l(X, y, W1, W2, b1)
    feedback.check_hidden_bias_grad(hand["b1"], X, y, W1, b1, W2, LAM)
    error = raises(feedback.check_hidden_bias_grad, hand["dZ"], X, y, W1, b1, W2, LAM,
                   match=r"dJ/db1 has shape \(16, 5\), expected \(5,\)")
    assert "not summed over the batch" in str(error)
    error = raises(feedback.check_hidden_bias_grad, hand["b1"] + LAM * b1, X, y, W1, b1, W2, LAM, match="dJ/db1 is wrong")
    assert "weight decay leaves the bias out" in str(error)


def test_scalar_graph_fan_out():
    # c = (a + a) * a at a = 3: dc/da = 4a = 12; forgetting one branch of b = a + a gives 3a = 9.
    expected = {"a": 12.0, "b": 3.0, "c": 1.0}
    mistakes = [("a lost fan-out contribution: a feeds b twice (b = a + a), so both add to a.grad", {"a": 9.0}),
                ("the sign is flipped", {"a": -12.0, "b": -3.0})]
    feedback.check_scalars({"a": 12.0, "b": 3.0, "c": 1.0}, expected, mistakes)
    error = raises(feedback.check_scalars, {"a": 9.0, "b": 3.0, "c": 1.0}, expected, mistakes,
                   match=r"a is wrong: expected 12, received 9\. It matches a known mistake: a lost fan-out")
    assert error.mistake.startswith("a lost fan-out")
    raises(feedback.check_scalars, {"a": 12.0, "c": 1.0}, expected, mistakes, match="b is missing from the answer")
    raises(feedback.check_scalars, {"a": 11.0, "b": 3.0, "c": 1.0}, expected, mistakes,
           match=r"^a is wrong: expected 12, received 11\.$")


PARENTS = {"a": [], "b": [], "x": [], "c": ["a", "b"], "d": ["x", "c"], "e": ["c"], "f": ["d"]}
DFS = ["x", "a", "b", "c", "d", "f"]


def test_topological_order_mistakes():
    feedback.check_topological_order(DFS, PARENTS, "f")
    raises(feedback.check_topological_order, DFS[::-1], PARENTS, "f", match="the order is reversed")
    raises(feedback.check_topological_order, DFS[:-1], PARENTS, "f", match="off by one: it leaves out f")
    raises(feedback.check_topological_order, DFS[1:], PARENTS, "f", match="off by one: it leaves out x")
    raises(feedback.check_topological_order, ["x", "a", "c", "b", "d", "f"], PARENTS, "f",
           match="c comes before its input b")
    raises(feedback.check_topological_order, ["a", "b", "x", "c", "d", "f"], PARENTS, "f",
           match="a valid topological order, but not the one depth-first search from f gives")
    raises(feedback.check_topological_order, DFS[:3] + ["e"] + DFS[3:], PARENTS, "f",
           match=r"the wrong nodes: \['e'\] do not lead to f")
    raises(feedback.check_topological_order, DFS + ["f"], PARENTS, "f", match="off by one: it has one node too many")
    raises(feedback.check_topological_order, ["x", "a", "e", "c", "d", "f", "b"][:6], PARENTS, "f",
           match=r"the wrong nodes: missing \['b'\]; \['e'\] do not lead to f")
    raises(feedback.check_topological_order, None, PARENTS, "f", match="should be a list of node names")
    raises(feedback.check_topological_order, "xabcdf", PARENTS, "f", match="should be a list of node names")


def test_memory_count_mistakes():
    N, d, h, q = 64, 4, 8, 3
    right = feedback.d2l_memory(N, d, h, q)
    assert right == {"predict": 32 + 24 + 64 * 16, "train": 2 * 56 + 64 * 15 + 2 * 64 * 8}
    feedback.check_memory_count(right["predict"], right["train"], N, d, h, q)
    one = feedback.d2l_memory(1, d, h, q)
    error = raises(feedback.check_memory_count, one["predict"], one["train"], N, d, h, q, match="predict is wrong")
    assert "counted for one example" in str(error)
    raises(feedback.check_memory_count, right["predict"], right["train"] - 56, N, d, h, q,
           match="without the weight gradients")
    raises(feedback.check_memory_count, right["predict"], 2 * 56 + 64 * 15, N, d, h, q,
           match="without the gradients in flight")
    raises(feedback.check_memory_count, 56 + 64 * 12, right["train"], N, d, h, q,
           match="in-place ReLU")


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

    error = raises(feedback.check_clip_by_norm, always, match=r"clip\(\.\.\.\)\[0\] \(global norm")
    assert "scales every gradient, also when the norm is already under the threshold" in str(error)
    raises(feedback.check_clip_by_norm, per_array, match="clips each array by its own norm")
    raises(feedback.check_clip_by_norm, broken, match="clip raised ValueError: oops")
    raises(feedback.check_clip_by_norm, lambda grads, max_norm: None, match="should return a list of 2 arrays")
    raises(feedback.check_clip_by_norm, 3, match="clip should be a function, but it is a int")


def test_vjp_rule_mistakes():
    feedback.check_matmul_vjp(lambda A, B, G: (G @ B.T, A.T @ G))
    raises(feedback.check_matmul_vjp, lambda A, B, G: (B @ G.T, A.T @ G), match=r"dA has shape \(3, 2\), expected "
           r"\(2, 3\)\. It matches a known mistake: the gradient is transposed")
    raises(feedback.check_matmul_vjp, lambda A, B, G: (G @ B.T,), match="should return two arrays")

    def ce(logits, labels):
        p = np.exp(logits - logits.max(1, keepdims=True))
        return p / p.sum(1, keepdims=True) - np.eye(logits.shape[1])[labels]

    feedback.check_softmax_cross_entropy_vjp(lambda logits, labels: ce(logits, labels) / len(labels))
    raises(feedback.check_softmax_cross_entropy_vjp, ce, match="the 1/N of the mean is missing")
    raises(feedback.check_softmax_cross_entropy_vjp, lambda logits, labels: -ce(logits, labels) / len(labels),
           match="the sign is flipped")


def test_placeholders_and_unanswered_functions_say_not_answered_yet(d2l):
    X, y, W1, W2, _ = d2l
    hand = hand_d2l(X, y, W1, W2)
    error = raises(feedback.check_d2l_weight_grads, hand["W1"], ..., X, y, W1, W2, LAM,
                   match=r"dJ/dW2 is not answered yet: replace the \.\.\. with your answer")
    assert isinstance(error, feedback.NotAnswered)
    raises(feedback.check_topological_order, ..., PARENTS, "f", match="order is not answered yet")

    def unanswered(grads, max_norm):
        raise NotImplementedError("Exercise 8.4 is not answered yet: write clip_by_norm")

    with pytest.raises(NotImplementedError, match="Exercise 8.4 is not answered yet"):
        feedback.check_clip_by_norm(unanswered)
    with pytest.raises(NotImplementedError, match="Exercise 6.6 is not answered yet"):
        feedback.call("d2l_weight_grads", lambda *args: (_ for _ in ()).throw(
            NotImplementedError("Exercise 6.6 is not answered yet")), X)
    raises(feedback.call, "d2l_weight_grads", lambda *args: 1 / 0, X, match="d2l_weight_grads raised ZeroDivisionError")


def broken_clip(grads, max_norm):
    return [g / 0 for g in grads] if False else 1 / 0


def test_jupyter_shows_the_message_first_and_alone():
    error = AnswerError("dJ/dW1", "dJ/dW1 is wrong at entry (0, 1): expected 1, received 2.")
    # IPython calls _render_traceback_ instead of printing the frames of the check.
    assert error._render_traceback_() == ["AnswerError: dJ/dW1 is wrong at entry (0, 1): expected 1, received 2."]
    raised = raises(feedback.check_clip_by_norm, broken_clip, match="clip raised ZeroDivisionError: division by zero")
    assert "(line " in str(raised) and "of broken_clip: return [g / 0 for g in grads] if False else 1 / 0)" in str(raised)


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
    raises(cube, 1.3**2, 3 * 1.3**2, match="with respect to s is x, not s")


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
    raises(feedback.check_d2l_weight_grads_function, lambda *a: None, match=r"should return two arrays .*got None")
    raises(feedback.check_hidden_bias_grad_function, lambda X, y, W1, b1, W2, lam: b1 * 0,
           match="dJ/db1 is wrong")
    raises(feedback.check_memory_count_function, lambda N, d, h, q: feedback.d2l_memory(1, d, h, q).values(),
           match="should return two arrays")
    feedback.check_memory_count_function(lambda N, d, h, q: tuple(feedback.d2l_memory(N, d, h, q).values()))
    for seed in (3, 4):
        feedback.check_matmul_vjp(lambda A, B, G: (G @ B.T, A.T @ G), seed=seed)
        feedback.check_clip_by_norm(clip_right, seed=seed)


def test_a_function_that_never_returns_is_stopped():
    def forever(*args):
        while True:
            pass

    error = raises(functools.partial(feedback.call, time_limit=0.5), "clip", forever, 1,
                   match=r"clip did not return within 0\.5 s")
    assert "loop" in str(error)
    assert feedback.call("double", lambda v: 2 * v, 4, time_limit=0.5) == 8
    raises(feedback.call, "f", None, match="f is not defined")

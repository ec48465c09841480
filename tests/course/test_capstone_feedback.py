"""The check of ex-capstone-network-backward, a whole network's backward pass by hand: its references are PyTorch's,
a right answer passes, each trap is named on the gradients it spoils, and the grader scores each
of the seven gradients on its own, as the notebook's check judges them.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from examples import NETWORK_ANSWER
from test_scalar_checks import as_cell

from chainrule_course.exercises import answers, capstone_checks, feedback
from chainrule_course.grading import apart, scoring

SEEDS = (0, 51, 52)  # the public check and the two hidden ones
ANSWER = NETWORK_ANSWER
#: A trap, as the cell a student who falls into it writes; what the check says; the gradients it spoils.
TRAPS = {
    "keepdims": (
        ANSWER.replace("P.sum(axis=1, keepdims=True)", "P.sum(axis=1)"),
        "the softmax's sum over the classes lost its axis",
        {"E", "W1", "gamma", "beta", "W2", "b2"},
    ),
    "max without keepdims": (
        ANSWER.replace("O.max(axis=1, keepdims=True)", "O.max(axis=1)"),
        "the largest logit is subtracted without keepdims",
        {"E", "W1", "gamma", "beta", "W2", "b2"},
    ),
    "n - 1": (
        ANSWER.replace("Z.var(axis=0)", "Z.var(axis=0, ddof=1)").replace(
            "- Z_hat * (g * Z_hat).mean(0)", "- n / (n - 1) * Z_hat * (g * Z_hat).mean(0)"
        ),
        "the variance divides by n - 1",
        {"E", "W1", "gamma", "beta", "W2", "b2"},
    ),
    "one-hot": (
        ANSWER.replace("(P - np.eye(len(b2))[y]) / n", "P / n"),
        "the one-hot of the labels is not subtracted",
        {"E", "W1", "gamma", "beta", "W2", "b2"},
    ),
    "mean": (
        ANSWER.replace("(P - np.eye(len(b2))[y]) / n", "P - np.eye(len(b2))[y]"),
        "the mean's 1/n is missing",
        {"E", "W1", "gamma", "beta", "W2", "b2"},
    ),
    "one term": (
        ANSWER.replace("(g - g.mean(0) - Z_hat * (g * Z_hat).mean(0)) / s", "g / s"),
        "paths through the mean and the variance are missing",
        {"E", "W1", "b1"},
    ),
    "no variance path": (
        ANSWER.replace(" - Z_hat * (g * Z_hat).mean(0)", ""),
        "path through the variance is missing",
        {"E", "W1"},
    ),
    "overwritten": (
        ANSWER.replace(
            "np.add.at(E_bar, tokens, (Z_bar @ W1).reshape(*tokens.shape, -1))",
            "E_bar[tokens] = (Z_bar @ W1).reshape(*tokens.shape, -1)",
        ),
        "repeated tokens must add their rows",
        {"E"},
    ),
    "bias not summed": (
        ANSWER.replace("O_bar.T @ H, O_bar.sum(0))", "O_bar.T @ H, O_bar)"),
        "a broadcast sum not undone: b2",
        {"b2"},
    ),
    "gamma without Z_hat": (
        ANSWER.replace("(U_bar * Z_hat).sum(0)", "U_bar.sum(0)"),
        "γ̄ sums Ū ⊙ Ẑ over the batch, not Ū alone",
        {"gamma"},
    ),
    "no ε": (ANSWER.replace(" + 1e-5)", ")"), "ε is left out of σ", {"E", "W1", "gamma", "beta", "W2", "b2"}),
    "sigmoid′": (
        ANSWER.replace("(1 - H * H)", "H * (1 - H)"),
        "sigmoid′, H(1 - H), is used for tanh′",
        {"E", "W1", "gamma", "beta"},
    ),
    "tanh′ at the pre-activation": (
        ANSWER.replace("(1 - H * H)", "(1 - (gamma * Z_hat + beta) ** 2)"),
        "tanh′ is taken at the pre-activation",
        {"E", "W1", "gamma", "beta"},
    ),
    "log-softmax": (
        ANSWER.replace("P /= P.sum(axis=1, keepdims=True)", "P = np.log(P / P.sum(axis=1, keepdims=True))"),
        "the log-softmax (log-probabilities) is used",
        {"E", "W1", "gamma", "beta", "W2", "b2"},
    ),
    "÷q": (  # right on the first batch, where n = q: named from the second, since it fits both
        ANSWER.replace("(P - np.eye(len(b2))[y]) / n", "(P - np.eye(len(b2))[y]) / len(b2)"),
        "the mean divides by q (the number of classes), not by n",
        {"E", "W1", "gamma", "beta", "W2", "b2"},
    ),
    "b2 averaged": (ANSWER.replace("O_bar.sum(0))", "O_bar.mean(0))"), "b2's gradient is averaged", {"b2"}),
    "γ̄ and β̄ swapped": (
        ANSWER.replace(
            "(U_bar * Z_hat).sum(0),\n            U_bar.sum(0)", "U_bar.sum(0),\n            (U_bar * Z_hat).sum(0)"
        ),
        "the two results are swapped: return (gamma_bar, beta_bar)",
        {"gamma", "beta"},
    ),
    "W2 from the pre-activation": (
        ANSWER.replace("O_bar.T @ H", "O_bar.T @ (gamma * Z_hat + beta)"),
        "W2_bar uses the pre-activation",
        {"W2"},
    ),
}


@pytest.mark.parametrize("seed", SEEDS)
def test_the_references_are_pytorchs(seed):
    for index in (0, 1):
        problem = capstone_checks.problem(seed, index)
        p, tokens, y = problem["params"], problem["tokens"], problem["y"]
        t = {k: torch.tensor(v, requires_grad=True) for k, v in p.items()}
        X = F.embedding(torch.tensor(tokens), t["E"]).reshape(len(y), -1)
        Z = F.batch_norm(X @ t["W1"].T + t["b1"], None, None, t["gamma"], t["beta"], training=True, eps=1e-5)
        F.cross_entropy(Z.tanh() @ t["W2"].T + t["b2"], torch.tensor(y)).backward()
        engine, hand = capstone_checks.engine_gradients(p, tokens, y), capstone_checks.NETWORK.right(problem)
        for part, name in enumerate(capstone_checks.PARAMETERS):
            assert np.allclose(engine[name], t[name].grad.numpy(), rtol=1e-9, atol=1e-12), name
            assert np.allclose(hand[part], t[name].grad.numpy(), rtol=1e-9, atol=1e-12), name
        assert (index == 0) == (len(y) == p["W2"].shape[0])  # the first batch has n = q
        assert (tokens[0] == tokens[1]).all()


def test_a_right_answer_passes_apart_public_and_hidden_also_in_float32():
    """In float32 too, where b1_bar, zero in exact arithmetic, is the rounding of the n terms it sums."""
    names = "E, W1, b1, gamma, beta, W2, b2"
    cast = f"    {names} = (a.astype(np.float32) for a in ({names}))\n"
    in_float32 = ANSWER.replace("    n = len(y)\n", "    n = len(y)\n" + cast, 1)
    returned = in_float32.replace("    return (E_bar", "    return tuple(a.astype(np.float32) for a in (E_bar")
    returned = returned.replace("O_bar.sum(0))", "O_bar.sum(0)))")
    for cell in (ANSWER, returned):
        function = as_cell(cell, "network_backward")
        for seed in SEEDS:
            feedback.check_network_backward(function, seed=seed)
    # Computed in float32 (np.eye's float64 takes over in the backward pass) but returned as float64:
    # judged in float64, it is told why, and what to do.
    with pytest.raises(answers.AnswerError, match=r"(?s)It is close.*Computed in float32\? Return float32"):
        feedback.check_network_backward(as_cell(in_float32, "network_backward"))


@pytest.mark.parametrize("trap", TRAPS)
def test_each_trap_is_named_on_the_gradients_it_spoils(trap):
    cell, said, spoiled = TRAPS[trap]
    with pytest.raises(answers.AnswerError) as raised:
        feedback.check_network_backward(as_cell(cell, "network_backward"))
    message = str(raised.value)
    assert said in message, message
    wrong = set(re.findall(r"WRONG: (\w+)_bar", message))
    assert wrong == spoiled, (wrong, message)


@pytest.mark.parametrize("cell", TRAPS.values(), ids=TRAPS)
def test_each_trap_is_a_change_of_the_answer(cell):
    assert cell[0] != ANSWER


def test_a_mistake_no_slip_explains_is_located_not_named():
    """W2_bar doubled is no slip of the derivation (nor ÷n on a batch of 2): the entry is located, nothing named."""
    with pytest.raises(answers.AnswerError) as raised:
        feedback.check_network_backward(as_cell(ANSWER.replace("O_bar.T @ H", "2 * O_bar.T @ H"), "network_backward"))
    message = str(raised.value)
    assert "WRONG: W2_bar is wrong at entry" in message and "known mistake" not in message, message


def test_the_grader_scores_each_gradient_on_its_own():
    """In the grader a student who drops batch normalisation's variance path loses the points of
    the two gradients it spoils, and keeps the other five, on public and hidden cases alike."""
    head = "from otter.test_files import test_case\n\nOK_FORMAT = False\n\nname = 'q'\npoints = 7\n\n"
    quantities = [f"{name}_bar" for name in capstone_checks.PARAMETERS]
    tests = {
        "q.py": head
        + "@test_case(points=None, hidden=False)\ndef test_public(network_backward):\n"
        + "    from chainrule_course.exercises import feedback\n"
        + "    feedback.check_network_backward(network_backward)\n\n"
        + "@test_case(points=None, hidden=True)\ndef test_hidden(network_backward):\n"
        + "    from chainrule_course.exercises import feedback\n    for seed in (51, 52):\n"
        + "        feedback.check_network_backward(network_backward, seed=seed)\n"
        + f"chainrule_reference = {ANSWER!r}\n"
        + f"chainrule_allowed = {list(feedback.check_network_backward.allowed)!r}\n"
        + f"chainrule_parts = {[['network_backward', quantity] for quantity in quantities]!r}\n"
    }
    inputs = scoring.inputs(tests, b"secret")
    for cell, points in ((ANSWER, 7), (TRAPS["no variance path"][0], 5)):
        data = scoring.record_apart([cell], inputs, lambda source, rule, values: apart.Answer(source, rule, values))
        result = scoring.score(tests, data, "", b"secret")["q"]
        assert result.score == pytest.approx(points), [r.message for r in result.test_case_results]

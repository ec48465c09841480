"""The check of ex-layers-softplus-row, softplus as a new row of the engine's rule table: the answer's three
functions run apart, as a notebook's cell, the rule called with Tensors; right answers pass, each
known mistake is named, and the grader's replay gives the notebook's verdicts.
"""

from __future__ import annotations

import json
import re
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from examples import SOFTPLUS_RIGHT
from test_scalar_checks import as_cell

from chainrule.rules import RULES
from chainrule.tensor import Tensor
from chainrule_course.exercises import answers, feedback, row_checks
from chainrule_course.grading import apart, scoring, wire

NAMES = ("softplus_forward", "softplus_vjp", "softplus_row")
RIGHT = SOFTPLUS_RIGHT
#: The rule reading C instead, in numpy on the Tensors' arrays, its result wrapped in a Tensor: right too.
FROM_OUTPUT = (
    RIGHT.replace(
        "a = saved[0]\n    return (g * a.sigmoid(),)",
        "c = saved[1]\n    return (Tensor(g.data * -np.expm1(-c.data)),)",
    )
    .replace('(("A",),)', '(("C",),)')
    .replace("from chainrule.rules import Rule", "from chainrule import Tensor\nfrom chainrule.rules import Rule")
)
#: Planted mistakes: the cell, and what the check must say of it.
MISTAKES = {
    "reads what the row does not keep": RIGHT.replace('(("A",),)', '(("C",),)'),
    r"so \(\('A',\),\), not \('A',\)": RIGHT.replace('(("A",),)', '("A",)'),
    "the row keeps C, which softplus_vjp never reads": RIGHT.replace('(("A",),)', '(("A", "C"),)'),
    r"in a tuple: \(dA,\), not one Tensor": RIGHT.replace("(g * a.sigmoid(),)", "g * a.sigmoid()"),
    "the incoming gradient G is missing": RIGHT.replace("(g * a.sigmoid(),)", "(a.sigmoid(),)"),
    "log\\(1 \\+ exp\\(a\\)\\) overflows": RIGHT.replace("np.logaddexp(0.0, a)", "np.log(1 + np.exp(a))"),
    "G \\* exp\\(A\\) is exp's rule": RIGHT.replace("(g * a.sigmoid(),)", "(g * a.exp(),)"),
    "is sigmoid\\(-A\\)": RIGHT.replace("(g * a.sigmoid(),)", "(g / (1 + a.exp()),)"),
    "softplus_vjp returned a ndarray": RIGHT.replace("(g * a.sigmoid(),)", "(g.data / (1 + np.exp(-a.data)),)"),
    "the row's name, which the engine's messages use, should be 'softplus'": RIGHT.replace('"softplus")', '"relu")'),
    "the row's forward should be the function softplus_forward, not NoneType": RIGHT.replace(
        "Rule(softplus_forward,", "Rule(None,"
    ),
}


def functions(cell: str) -> list:
    return [as_cell(cell, name) for name in NAMES]


def test_the_checks_references_are_pytorchs():
    a = np.concatenate([row_checks.EXTREMES, np.linspace(-5, 5, 11)])
    ta = torch.tensor(a, requires_grad=True)
    F.softplus(ta).sum().backward()
    # PyTorch's softplus is a above a = 20 (its threshold), which is off by e^-a at most.
    assert np.allclose(row_checks.softplus(a), F.softplus(torch.tensor(a)).numpy(), rtol=1e-13, atol=0)
    assert np.allclose(row_checks.sigmoid(a), ta.grad.numpy(), rtol=1e-13, atol=1e-300)


def test_a_tensor_and_a_namespace_cross_to_an_answer_and_back():
    node = types.SimpleNamespace(args=(2,), input_shapes=((3,),), needs_input_grad=(True,))
    data = json.loads(json.dumps(wire.encode([Tensor(np.arange(3.0)), node, (None,)])))
    tensor, back, slots = wire.decode(data)
    assert isinstance(tensor, Tensor) and tensor.data.tolist() == [0.0, 1.0, 2.0]
    assert back == node and slots == (None,)
    with pytest.raises(wire.Unreadable, match="without an array"):
        wire.decode({"t": "tensor", "v": [1, 2]})


@pytest.mark.parametrize("cell", [RIGHT, FROM_OUTPUT], ids=["reads A", "reads C"])
def test_right_rows_pass_apart_and_the_table_is_left_as_it_was(cell):
    before = dict(RULES)
    for seed in (0, 21):
        feedback.check_softplus_row(*functions(cell), seed=seed)
    assert RULES == before


@pytest.mark.parametrize("mistake", MISTAKES)
def test_each_mistake_is_named(mistake):
    with pytest.raises(answers.AnswerError) as raised:
        feedback.check_softplus_row(*functions(MISTAKES[mistake]))
    assert re.search(mistake, str(raised.value)), str(raised.value)


def test_the_grader_gives_the_notebooks_verdicts():
    """The grader records each answer apart, the rule's calls with Tensors among them, and replays
    them: the right row earns the points, a row that keeps a slot its rule does not read loses the
    row's third, named as the notebook names it."""
    head = "from otter.test_files import test_case\n\nOK_FORMAT = False\n\nname = 'q'\npoints = 2\n\n"
    arguments = ", ".join(NAMES)
    tests = {
        "q.py": head
        + f"@test_case(points=None, hidden=False)\ndef test_public({arguments}):\n"
        + f"    from chainrule_course.exercises import feedback\n    feedback.check_softplus_row({arguments})\n\n"
        + f"@test_case(points=None, hidden=True)\ndef test_hidden({arguments}):\n"
        + "    from chainrule_course.exercises import feedback\n    for seed in (21, 22):\n"
        + f"        feedback.check_softplus_row({arguments}, seed=seed)\n"
        + f"chainrule_reference = {RIGHT!r}\n"
        + f"chainrule_allowed = {list(feedback.check_softplus_row.allowed)!r}\n"
        + f"chainrule_parts = {[[name, None] for name in NAMES]!r}\n"
    }
    inputs = scoring.inputs(tests, b"secret")
    wrong = MISTAKES["reads what the row does not keep"]
    # A row that reads C with a rule that reads C is right, and judged as one answer with its rule, as
    # the notebook judges it, also when its forward overflows (a third of the points lost, not all).
    overflows = FROM_OUTPUT.replace("np.logaddexp(0.0, a)", "np.log(1 + np.exp(a))")
    assert overflows != FROM_OUTPUT
    for cell, points in ((FROM_OUTPUT, 2), (overflows, 2 * 2 / 3), (RIGHT, 2), (wrong, 2 * 2 / 3)):
        data = scoring.record_apart([cell], inputs, lambda source, rule, values: apart.Answer(source, rule, values))
        result = scoring.score(tests, data, "", b"secret")["q"]
        messages = [r.message for r in result.test_case_results]
        assert result.score == pytest.approx(points), messages
    with pytest.raises(answers.AnswerError) as in_the_notebook:
        feedback.check_softplus_row(*functions(wrong))
    assert str(in_the_notebook.value) in messages[2], (messages, str(in_the_notebook.value))

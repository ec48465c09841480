"""Tests of forward mode (chainrule.forward): dual numbers, jvp and the evaluation trace.

The references are PyTorch's forward-mode ``torch.func.jvp`` (float64) and chainrule's own
reverse mode: a JVP along the i-th unit vector is the i-th entry of the gradient.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from chainrule import Dual, Value, evaluation_trace, jvp, topological_order
from chainrule.forward import format_trace, run_trace


def composite(a, b):
    """Uses every operation that Value, Dual and torch share."""
    u = a * b + (a / b) ** 2 - (-a).sigmoid()
    return (u.tanh() + (b * b + 1.0).log()) * (0.5 * a).exp() + (a - 0.3 * b).relu()


def torch_composite(a, b):
    u = a * b + (a / b) ** 2 - torch.sigmoid(-a)
    return (torch.tanh(u) + torch.log(b * b + 1.0)) * torch.exp(0.5 * a) + torch.relu(a - 0.3 * b)


reals = st.floats(0.2, 2.0, allow_nan=False)


@settings(max_examples=30, deadline=None)
@given(reals, reals, st.floats(-2, 2), st.floats(-2, 2))
def test_jvp_matches_torch_forward_mode(a, b, da, db):
    value, tangent = jvp(composite, (a, b), (da, db))
    args = (torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64))
    tangents = (torch.tensor(da, dtype=torch.float64), torch.tensor(db, dtype=torch.float64))
    expected_value, expected_tangent = torch.func.jvp(torch_composite, args, tangents)
    assert value == pytest.approx(expected_value.item(), rel=1e-12)
    assert tangent == pytest.approx(expected_tangent.item(), rel=1e-9, abs=1e-12)


def test_unit_tangents_give_the_gradient_of_reverse_mode():
    xs = Value(0.7, "a"), Value(1.3, "b")
    composite(*xs).backward()
    for i, x in enumerate(xs):
        unit = [0.0, 0.0]
        unit[i] = 1.0
        assert jvp(composite, (0.7, 1.3), unit)[1] == pytest.approx(x.grad, rel=1e-12)


def test_nested_duals_give_second_derivatives():
    # d²/dx² of x**3 * exp(x) is exp(x) (x**3 + 6 x**2 + 6 x)
    x = 0.8
    inner = Dual(Dual(x, 1.0), Dual(1.0, 0.0))
    out = inner**3 * inner.exp()
    assert out.tangent.tangent == pytest.approx(math.exp(x) * (x**3 + 6 * x**2 + 6 * x), rel=1e-12)


def test_duals_of_values_are_reverse_over_forward():
    # the tangent of a Dual of Values is a Value graph: its backward() gives d/dx of f'(x)·1
    x = Value(0.4)
    out = Dual(x, 1.0).tanh() * Dual(x, 1.0)
    out.tangent.backward()
    t = math.tanh(0.4)
    d1 = 1 - t * t
    # f = x tanh x: f'' = 2 (1 - t²) - 2 x t (1 - t²)
    assert x.grad == pytest.approx(2 * d1 - 2 * 0.4 * t * d1, rel=1e-12)


def test_a_constant_output_has_tangent_zero_and_tuples_give_lists():
    assert jvp(lambda a: 3.0, (1.0,), (1.0,)) == (3.0, 0.0)
    values, tangents = jvp(lambda a, b: (a * b, a + 2.0), (2.0, 5.0), (1.0, 0.0))
    assert values == [10.0, 4.0] and tangents == [5.0, 1.0]


def test_relu_takes_zero_at_the_kink_as_value_does():
    assert jvp(lambda a: a.relu(), (0.0,), (1.0,)) == (0.0, 0.0)
    v = Value(0.0)
    v.relu().backward()
    assert v.grad == 0.0


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda: Dual("2"), TypeError, "Dual() primal"),
        (lambda: Dual(1.0, True), TypeError, "Dual() tangent"),
        (lambda: Dual(1.0, 1.0) + "x", TypeError, "Dual + (add)"),
        (lambda: Dual(1.0, 1.0) / 0.0, ZeroDivisionError, "Dual / (divide)"),
        (lambda: Dual(-1.0, 1.0).log(), ValueError, "Dual.log"),
        (lambda: Dual(2.0, 1.0) ** Dual(2.0), TypeError, "Dual ** (power)"),
        (lambda: jvp(composite, (1.0, 2.0), (1.0,)), ValueError, "2 primals but 1 tangents"),
        (lambda: jvp(lambda a: "out", (1.0,), (1.0,)), TypeError, "jvp: the output of f"),
        (lambda: jvp(lambda a: a, 1.0, 1.0), TypeError, "write jvp(f, (x,), (v,))"),
        (lambda: Dual(-8.0, 1.0) ** 0.5, ValueError, "is not a real number"),
    ],
)
def test_bad_input_names_the_operation(make, error, words):
    with pytest.raises(error) as info:
        make()
    assert words in str(info.value)


def traced():
    a, b = Value(0.7, "a"), Value(1.3, "b")
    out = composite(a, b)
    return evaluation_trace(out, [a, b]), out


def test_the_trace_lists_each_operation_once_after_the_lines_it_reads():
    steps, out = traced()
    assert [s.name for s in steps[:2]] == ["a", "b"] and all(s.op == "input" for s in steps[:2])
    seen = set()
    for step in steps:
        assert all(arg in seen for arg in step.args if isinstance(arg, str)), step
        seen.add(step.name)
    assert steps[-1].value == out.data
    operations = [node for node in topological_order(out) if node.parents]
    assert len(steps) == 2 + len(operations) == 2 + 19  # composite writes out 19 operations
    assert "v1 = a * b" in format_trace(steps).replace("  ", " ")


def test_running_the_trace_again_gives_the_values_and_on_duals_the_jvp():
    steps, out = traced()
    assert run_trace(steps, [0.7, 1.3])[steps[-1].name] == pytest.approx(out.data, rel=1e-15)
    out = run_trace(steps, [Dual(0.7, 0.2), Dual(1.3, -1.0)])[steps[-1].name]
    assert out.tangent == pytest.approx(jvp(composite, (0.7, 1.3), (0.2, -1.0))[1], rel=1e-12)
    with pytest.raises(ValueError, match="the trace has 2 inputs"):
        run_trace(steps, [1.0])


def test_a_trace_refuses_two_inputs_of_the_same_name():
    a, b = Value(1.0, "a"), Value(2.0, "a")
    with pytest.raises(ValueError, match="same name"):
        evaluation_trace(a * b, [a, b])


def test_a_trace_refuses_input_labels_that_name_operation_lines():
    a, b = Value(1.0, "v1"), Value(2.0, "b")
    with pytest.raises(ValueError, match="names of operation lines"):
        evaluation_trace(a * b, [a, b])


def test_a_trace_runs_an_exponent_again_exactly_or_refuses():
    x = Value(2.0, "x")
    steps = evaluation_trace(x**1.5, [x])
    assert run_trace(steps, [2.0])[steps[-1].name] == 2.0**1.5
    with pytest.raises(ValueError, match="rounds its exponent"):
        evaluation_trace(x**1.23456789, [x])

"""Tests of chainrule.gradcheck: it must pass correct gradients, catch wrong ones with a
message that says where, leave the inputs as it found them, and refuse misuse clearly."""

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainrule import Value
from chainrule.gradcheck import (
    GradCheckResult,
    GradientCheckError,
    assert_gradients_close,
    gradcheck,
)


def wrong_square(a):
    """a**2 that claims d(a**2)/da = a (the factor 2 is missing)."""
    return Value(a.data**2, op="**2", parents=(a,), local_grads=(a.data,))


class ForgetfulTanh(Value):
    """A Value whose tanh forgets the 1 in 1 - tanh**2."""

    __slots__ = ()

    def tanh(self):
        out = super().tanh()
        out.local_grads = (-(out.data**2),)
        return out


# --------------------------------------------------------------------------- correct gradients


@settings(max_examples=25, deadline=None)
@given(x=st.floats(-3, 3), w=st.floats(-3, 3))
def test_passes_on_correct_gradients(x, w):
    inputs = [Value(x, "x"), Value(w, "w")]
    result = gradcheck(lambda x, w: (x * w).tanh() + w.sigmoid() * x - (x * x + 1.0).log(), inputs)
    assert isinstance(result, GradCheckResult)
    assert result.passed and bool(result)
    assert [row.name for row in result.rows] == ["x", "w"]
    assert all(row.ok and row.abs_error <= row.tolerance for row in result.rows)
    assert result.raise_if_failed() is result


def test_rows_hold_analytic_numeric_error_and_tolerance():
    x = Value(1.5, "x")
    result = gradcheck(lambda x: x**3, [x], rtol=1e-4, atol=1e-6)
    (row,) = result.rows
    assert row.analytic == 3 * 1.5**2
    assert row.numeric == pytest.approx(6.75, rel=1e-8)
    assert row.abs_error == abs(row.analytic - row.numeric)
    assert 0 < row.numeric_error < 1e-7  # the difference's own error: rounding, as x**3 has no 5th derivative
    assert row.tolerance == 1e-6 + 1e-4 * abs(row.numeric) + row.numeric_error
    assert result.worst is row
    assert x.grad == row.analytic  # the inputs keep the analytic gradient


def test_stale_gradients_do_not_leak_into_the_analytic_gradient():
    x = Value(2.0, "x")
    x.grad = 100.0
    assert gradcheck(lambda x: x * x, [x]).rows[0].analytic == 4.0


def test_an_input_that_f_ignores_has_gradient_zero():
    x, unused = Value(2.0, "x"), Value(7.0, "unused")
    unused.grad = 5.0
    result = gradcheck(lambda x, unused: x.exp(), [x, unused])
    assert result.passed
    assert (result.rows[1].analytic, result.rows[1].numeric) == (0.0, 0.0)


def test_assert_gradients_close_returns_the_result():
    result = assert_gradients_close(lambda a: a.tanh(), [Value(0.3, "a")], eps=1e-5)
    assert result.passed and result.eps == 1e-5


# --------------------------------------------------------------------------- wrong gradients


def test_a_wrong_local_gradient_fails_with_a_message_naming_the_input():
    x, w = Value(0.5, "x"), Value(3.0, "w")
    result = gradcheck(lambda x, w: x * 2.0 + wrong_square(w), [x, w])
    assert not result.passed and not bool(result)
    assert [row.ok for row in result.rows] == [True, False]
    assert result.worst.name == "w"
    assert result.failures == [result.rows[1]]
    with pytest.raises(GradientCheckError) as caught:
        result.raise_if_failed()
    message = str(caught.value)
    assert isinstance(caught.value, AssertionError)
    first_line = message.splitlines()[0]
    assert first_line.startswith("gradient check failed for input 'w': backward gave 3.0, central difference gave 6.0")
    assert f"|diff| 3.0 > tolerance {result.rows[1].tolerance:.3g}" in first_line
    assert "'x'" not in first_line


def test_assert_gradients_close_raises_on_a_wrong_gradient():
    with pytest.raises(GradientCheckError, match=r"input 'inputs\[1\]'"):
        assert_gradients_close(lambda a, b: a + wrong_square(b), [Value(1.0), Value(-2.0)])


def test_a_wrong_rule_in_a_subclass_is_caught():
    a = ForgetfulTanh(0.7, "a")
    with pytest.raises(GradientCheckError) as caught:
        assert_gradients_close(lambda a: a.tanh() * 2.0, [a])
    found = re.search(r"backward gave (\S+), central difference gave (\S+) ", str(caught.value))
    assert float(found[1]) == pytest.approx(2.0 * -(math.tanh(0.7) ** 2), rel=1e-7)
    assert float(found[2]) == pytest.approx(2.0 * (1 - math.tanh(0.7) ** 2), rel=1e-7)


OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "**3": lambda a, b: a**3,
    "**0.5": lambda a, b: a**0.5,
    "neg": lambda a, b: -a,
    "relu": lambda a, b: a.relu(),
    "tanh": lambda a, b: a.tanh(),
    "sigmoid": lambda a, b: a.sigmoid(),
    "exp": lambda a, b: a.exp(),
    "log": lambda a, b: a.log(),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_gradcheck_notices_when_any_rule_is_off_by_half(op):
    def f(a, b, scale):
        out = OPS[op](a, b)
        assert out.op == op
        out.local_grads = tuple(scale * g for g in out.local_grads)
        return out * 1.0

    inputs = [Value(0.8, "a"), Value(1.3, "b")]
    assert gradcheck(lambda a, b: f(a, b, 1.0), inputs).passed
    result = gradcheck(lambda a, b: f(a, b, 1.5), inputs)
    assert not result.passed
    assert not result.rows[0].ok  # every op here depends on a; the binary ones on b too
    assert result.rows[1].ok == (op not in "+-*/")
    with pytest.raises(GradientCheckError, match="input '[ab]'"):
        result.raise_if_failed()


def test_a_kink_within_eps_is_reported_with_a_hint():
    with pytest.raises(GradientCheckError) as caught:
        assert_gradients_close(lambda a: a.relu(), [Value(0.0, "a")])
    message = str(caught.value)
    assert "backward gave 0.0, central difference gave 0.5" in message
    assert "kink" in message


def test_the_tolerance_is_atol_plus_rtol_times_the_numeric_gradient():
    def almost_triple(a):  # claims d(3a)/da = 3.0003, off by 1e-4 relative
        return Value(3.0 * a.data, op="*", parents=(a,), local_grads=(3.0003,))

    a = [Value(2.0, "a")]
    assert gradcheck(almost_triple, a, rtol=1.01e-4, atol=0.0).passed
    assert not gradcheck(almost_triple, a, rtol=0.99e-4, atol=0.0).passed
    assert gradcheck(almost_triple, a, rtol=0.0, atol=3.01e-4).passed
    assert not gradcheck(almost_triple, a, rtol=0.0, atol=2.99e-4).passed


def test_the_defaults_catch_rules_a_fixed_floor_lets_through():
    """A relative error of 5e-6 (smooth tanh), and 1e-7 on a gradient of 3e-10, both fail by default."""

    def tanh_scaled(a):
        t = math.tanh(a.data)
        return Value(t, op="tanh", parents=(a,), local_grads=((1 - t * t) * (1 + 5e-6),))

    def cube_by_forward_difference(a, h=3e-4):
        return Value(a.data**3, op="**3", parents=(a,), local_grads=(((a.data + h) ** 3 - a.data**3) / h,))

    for planted, right, at in [(tanh_scaled, Value.tanh, 0.7), (cube_by_forward_difference, lambda a: a**3, 1e-5)]:
        assert gradcheck(planted, [Value(at)], rtol=1e-5, atol=1e-7).passed  # the old defaults
        assert not gradcheck(planted, [Value(at)]).passed
        assert gradcheck(right, [Value(at)]).passed
    # A right rule on a large f: f's rounding (1e8 * 2.2e-16, over 2 eps) is in the tolerance.
    [row] = gradcheck(lambda a: a * a * 3.0 + 1e8, [Value(0.5)]).rows
    assert row.ok and row.numeric_error > 1e-3 and row.tolerance > 1e-5 * abs(row.numeric) + 1e-7


def test_the_step_scales_with_the_input_so_a_wrong_rule_fails_at_every_scale():
    """tanh(x / s) * s with its tanh rule off by 5e-6: before, a fixed step of 2**-20 passed it at x = 900 (the
    rounding of f, over so small a step, hid it) and failed it at x = 90. Right rules pass at every scale."""

    def tanh_scaled(a):
        t = math.tanh(a.data)
        return Value(t, op="tanh", parents=(a,), local_grads=((1 - t * t) * (1 + 5e-6),))

    for x in (0.9, 90.0, 900.0, 9000.0, 9e6):
        assert not gradcheck(lambda a, s=x: tanh_scaled(a * (1 / s)) * s, [Value(x)]).passed, x
        assert gradcheck(lambda a, s=x: (a * (1 / s)).tanh() * s, [Value(x)]).passed, x
        # A function on a scale of its own wherever x is: the fixed step holds it (a scaled one alone did not).
        assert not gradcheck(lambda a, c=x: tanh_scaled(a - c), [Value(x + 0.3)]).passed, x
        assert gradcheck(lambda a, c=x: (a - c).tanh(), [Value(x + 0.3)]).passed, x
    for right, x in [(lambda a: a**3, 900.0), (lambda a: (a * 1e-3).exp(), 5e5), (lambda a: a * a.log(), 1e12)]:
        assert gradcheck(right, [Value(x)]).passed, x


def test_str_is_a_table_with_one_row_per_input():
    result = gradcheck(lambda x, w: x + wrong_square(w), [Value(1.0, "x"), Value(2.0, "weight")])
    lines = str(result).splitlines()
    assert "FAILED (1 of 2 disagree)" in lines[0]
    assert lines[1].split() == ["input", "analytic", "numeric", "|diff|", "tolerance", "ok"]
    assert lines[2].split()[0] == "x" and lines[2].split()[-1] == "ok"
    assert lines[3].split()[0] == "weight" and lines[3].split()[-1] == "FAIL"
    assert len(lines) == 4
    assert "worst='weight'" in repr(result)


# --------------------------------------------------------------------------- tensor-like inputs


class ToyTensor:
    """Just enough of a tensor for gradcheck's duck typing: numpy ``.data``, ``.grad``,
    ``.label`` and ``backward()`` (for a one-element result)."""

    def __init__(self, data, label="", backward_rule=None):
        self.data = np.asarray(data, dtype=np.float64)
        self.grad = None
        self.label = label
        self._backward_rule = backward_rule

    def backward(self):
        self._backward_rule()


def _accumulate(tensor, grad):
    tensor.grad = grad if tensor.grad is None else tensor.grad + grad


def sum_tanh_of_product(W, x, forget_derivative_for_W=False):
    """L = sum(tanh(W @ x)); dL/dW = outer(g, x), dL/dx = W.T @ g with g = 1 - tanh(W @ x)**2."""
    h = np.tanh(W.data @ x.data)

    def rule():
        g = 1.0 - h**2
        _accumulate(W, np.outer(np.ones_like(g) if forget_derivative_for_W else g, x.data))
        _accumulate(x, W.data.T @ g)

    return ToyTensor(h.sum(), backward_rule=rule)


def test_every_element_of_a_tensor_is_checked():
    rng = np.random.default_rng(0)
    W, x = ToyTensor(rng.normal(size=(3, 4)), "W"), ToyTensor(rng.normal(size=4), "x")
    result = gradcheck(sum_tanh_of_product, [W, x])
    assert result.passed
    names = [row.name for row in result.rows]
    assert names[:2] == ["W[0, 0]", "W[0, 1]"] and names[11] == "W[2, 3]"
    assert names[12:] == [f"x[{i}]" for i in range(4)]
    h = np.tanh(W.data @ x.data)
    assert [row.analytic for row in result.rows[12:]] == list(W.data.T @ (1.0 - h**2))


def test_a_wrong_tensor_gradient_names_the_element():
    rng = np.random.default_rng(1)
    W, x = ToyTensor(rng.normal(size=(2, 3)), "W"), ToyTensor(rng.normal(size=3))
    result = gradcheck(lambda W, x: sum_tanh_of_product(W, x, forget_derivative_for_W=True), [W, x])
    assert [row.ok for row in result.rows] == [False] * 6 + [True] * 3
    assert [row.name for row in result.rows[6:]] == ["inputs[1][0]", "inputs[1][1]", "inputs[1][2]"]
    with pytest.raises(GradientCheckError, match=r"failed for input 'W\[\d, \d\]'") as caught:
        result.raise_if_failed()
    assert "5 more disagree" in str(caught.value)


def test_a_zero_dimensional_tensor_is_one_number():
    t = ToyTensor(2.0, "t")
    result = gradcheck(lambda t: ToyTensor(t.data**2, backward_rule=lambda: _accumulate(t, 2 * t.data)), [t])
    assert [(row.name, row.analytic) for row in result.rows] == [("t", 4.0)]


def test_a_long_table_shows_the_worst_rows():
    t = ToyTensor(np.linspace(-1, 1, 30), "t")

    def f(t):
        def rule():
            grad = 2 * t.data
            grad[7] += 1.0  # one wrong element
            _accumulate(t, grad)

        return ToyTensor((t.data**2).sum(), backward_rule=rule)

    result = gradcheck(f, [t])
    assert [row.name for row in result.failures] == ["t[7]"]
    text = str(result)
    assert "t[7]" in text and "... 10 more rows not shown" in text
    assert len(text.splitlines()) == 2 + 20 + 1
    assert len(result.table(max_rows=None).splitlines()) == 31


# --------------------------------------------------------------------------- inputs are restored


@settings(max_examples=20, deadline=None)
@given(x=st.floats(-5, 5), w=st.floats(0.1, 5))
def test_input_data_is_restored_exactly(x, w):
    inputs = [Value(x, "x"), Value(w, "w")]
    gradcheck(lambda x, w: (x * w + w.log()).tanh(), inputs)
    assert (inputs[0].data, inputs[1].data) == (x, w)


def test_tensor_data_is_restored_in_place():
    data = np.linspace(-1.0, 2.0, 6).reshape(2, 3)
    t = ToyTensor(data.copy(), "t")
    array = t.data
    gradcheck(lambda t: ToyTensor((t.data**3).sum(), backward_rule=lambda: _accumulate(t, 3 * t.data**2)), [t])
    assert t.data is array
    assert np.array_equal(t.data, data)


def test_data_is_restored_when_f_raises_during_the_check():
    x = Value(1.0 + 1e-7, "x")  # x - eps makes (x - 1).log() fail
    with pytest.raises(ValueError, match="log") as caught:
        gradcheck(lambda x: (x - 1.0).log(), [x])
    assert x.data == 1.0 + 1e-7
    # the step is eps rounded to a power of two, 2**-20, so that x ± step are exact floats
    assert any(f"x - {2**-20:g}" in note for note in getattr(caught.value, "__notes__", []))


def test_tensor_data_is_restored_when_f_raises():
    t = ToyTensor([1.0, 2.0, 3.0], "t")
    calls = []

    def f(t):
        calls.append(t.data.copy())
        if len(calls) == 4:
            raise RuntimeError("boom")
        return ToyTensor(t.data.sum(), backward_rule=lambda: _accumulate(t, np.ones(3)))

    with pytest.raises(RuntimeError, match="boom"):
        gradcheck(f, [t])
    assert np.array_equal(t.data, [1.0, 2.0, 3.0])
    assert calls[1][0] == 1.0 + 2**-20 and calls[2][0] == 1.0 - 2**-20  # it did perturb, by exact steps


# --------------------------------------------------------------------------- misuse


def test_f_returning_a_list_is_refused():
    with pytest.raises(TypeError, match="f must return a scalar Value.*list"):
        gradcheck(lambda a: [a, a], [Value(1.0)])


def test_f_returning_a_plain_number_is_refused_with_a_hint():
    with pytest.raises(TypeError, match="float 2.0.*plain number"):
        gradcheck(lambda a: a.data * 2.0, [Value(1.0)])


def test_f_returning_a_tensor_with_many_elements_is_refused():
    t = ToyTensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"shape \(3,\).*sum"):
        gradcheck(lambda t: ToyTensor(t.data * 2), [t])


def read_only_tensor():
    t = ToyTensor([1.0, 2.0], "t")
    t.data.flags.writeable = False
    return t


def float32_tensor():
    t = ToyTensor([1.0, 2.0], "t")
    t.data = t.data.astype(np.float32)
    return t


@pytest.mark.parametrize(
    "inputs, error, pattern",
    [
        ([], ValueError, "inputs is empty"),
        ([1.5], TypeError, r"inputs\[0\] is float 1.5.*Value\(1.5\)"),
        ([Value(1.0), "w"], TypeError, r"inputs\[1\] is str 'w'"),
        ([Value(1.0), np.ones(3)], TypeError, r"inputs\[1\] is ndarray"),
        (Value(1.0), TypeError, r"single Value.*\[x\]"),
        (None, TypeError, "list of Values"),
        ([float32_tensor()], TypeError, "float32.*float64"),
        ([ToyTensor(np.ones((0, 2)))], ValueError, r"no elements \(shape \(0, 2\)\)"),
        ([read_only_tensor()], TypeError, r"inputs\[0\] \(t\) has a read-only .data array"),
    ],
)
def test_bad_inputs_are_refused(inputs, error, pattern):
    with pytest.raises(error, match=pattern):
        gradcheck(lambda *xs: xs[0], inputs)


@pytest.mark.parametrize(
    "options, pattern",
    [
        ({"eps": 0.0}, "eps must be > 0"),
        ({"eps": -1e-6}, "eps must be a finite number >= 0"),
        ({"rtol": -1.0}, "rtol must be"),
        ({"atol": float("nan")}, "atol must be"),
    ],
)
def test_bad_options_are_refused(options, pattern):
    with pytest.raises(ValueError, match=pattern):
        gradcheck(lambda a: a * 2.0, [Value(1.0)], **options)


def test_f_returning_a_tensor_without_backward_is_refused():
    class NoBackward:
        data = np.array(1.0)

    with pytest.raises(TypeError, match="NoBackward that f returned has no backward"):
        gradcheck(lambda a: NoBackward(), [Value(1.0)])


def test_f_must_be_callable():
    with pytest.raises(TypeError, match="f must be a function"):
        gradcheck(Value(1.0), [Value(1.0)])


@pytest.mark.parametrize(
    "f, at",
    [
        (lambda x: (1.5 + x) ** 3, -1.5),  # hypothesis found it: numeric -2.96e-22 against a tolerance of 3e-29
        (lambda x: (x - 0.25) ** 3, 0.25),
        (lambda x: (x + 1) ** 4, -1.0),
        (lambda x: x.tanh() ** 3, 0.0),
        (lambda x: (x * x - 2) ** 2, math.sqrt(2)),
        (lambda x: x**3, 0.1),
    ],
)
def test_right_rules_pass_at_stationary_points(f, at):
    """Where every node's gradient is 0 the rounding bound at the point is 0; the moved points' rounding,
    the extrapolation's remainder and the analytic gradient's own rounding are allowed for."""
    result = gradcheck(f, [Value(at, label="x")])
    assert result.passed, str(result)

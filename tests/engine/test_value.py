"""Tests of the scalar engine, chainrule.Value.

PyTorch (CPU, float64) is the reference for every forward value and gradient, and the
central-difference check in chainrule.gradcheck is a second, independent witness.
"""

import math
import sys

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chainrule import Value, topological_order
from chainrule.gradcheck import assert_gradients_close, gradcheck
from chainrule.graph import FINISH, depth_first_events, dfs_trace

FAST = settings(max_examples=30, deadline=None)


def reals(low, high):
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


def away_from_zero(low, high, gap):
    return reals(low, high).filter(lambda x: abs(x) >= gap)


def torch_leaf(x):
    return torch.tensor(float(x), dtype=torch.float64, requires_grad=True)


def check_against_torch(fn, xs):
    """Run ``fn`` on Values and on float64 torch tensors; forward values and the
    gradient of every input must agree.  ``fn`` only uses syntax both libraries share."""
    values = [Value(x, label=f"x{i}") for i, x in enumerate(xs)]
    out = fn(*values)
    out.backward()
    tensors = [torch_leaf(x) for x in xs]
    expected = fn(*tensors)
    expected.backward()
    assert out.data == pytest.approx(expected.item(), rel=1e-12, abs=1e-300)
    for value, tensor in zip(values, tensors, strict=True):
        expected_grad = 0.0 if tensor.grad is None else tensor.grad.item()
        assert value.grad == pytest.approx(expected_grad, rel=1e-9, abs=1e-12), value.label
    return out


def check_with_gradcheck(fn, xs):
    assert_gradients_close(fn, [Value(x, label=f"x{i}") for i, x in enumerate(xs)])


# --------------------------------------------------------------------------- one op at a time

UNARY = {
    # name: (function usable on Value and torch.Tensor, domain of the input)
    "neg": (lambda a: -a, reals(-10, 10)),
    "relu": (lambda a: a.relu(), away_from_zero(-10, 10, 1e-3)),
    "tanh": (lambda a: a.tanh(), reals(-10, 10)),
    "sigmoid": (lambda a: a.sigmoid(), reals(-40, 40)),
    "exp": (lambda a: a.exp(), reals(-20, 20)),
    "log": (lambda a: a.log(), reals(1e-3, 1e3)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@FAST
@given(data=st.data())
def test_unary_op_matches_torch_and_central_differences(name, data):
    fn, domain = UNARY[name]
    x = data.draw(domain, label="x")
    check_against_torch(fn, [x])
    check_with_gradcheck(fn, [x])


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@FAST
@given(a=reals(-10, 10), b=away_from_zero(-10, 10, 0.1))
def test_binary_op_of_two_values_matches_torch(name, a, b):
    check_against_torch(BINARY[name], [a, b])
    check_with_gradcheck(BINARY[name], [a, b])


@pytest.mark.parametrize("name", sorted(BINARY))
@FAST
@given(a=away_from_zero(-10, 10, 0.1), constant=away_from_zero(-10, 10, 0.1))
def test_binary_op_with_a_float_on_either_side_matches_torch(name, a, constant):
    op = BINARY[name]
    check_against_torch(lambda x: op(x, constant), [a])  # Value op float
    check_against_torch(lambda x: op(constant, x), [a])  # float op Value: the reflected method
    check_with_gradcheck(lambda x: op(constant, x), [a])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_int_constants_work_on_either_side(name):
    op = BINARY[name]
    check_against_torch(lambda x: op(x, 3), [2.0])
    check_against_torch(lambda x: op(3, x), [2.0])


@FAST
@given(base=away_from_zero(-5, 5, 0.1), k=st.sampled_from([-3, -2, -1, 0, 1, 2, 3, 4]))
def test_power_with_int_exponent_matches_torch(base, k):
    out = check_against_torch(lambda a: a**k, [base])
    assert out.op == f"**{k}"
    check_with_gradcheck(lambda a: a**k, [base])


@FAST
@given(base=reals(0.1, 10), k=st.sampled_from([0.5, -0.5, 1.5, 2.5, 1 / 3, -2.25]))
def test_power_with_float_exponent_matches_torch(base, k):
    out = check_against_torch(lambda a: a**k, [base])
    assert out.op == f"**{k:g}"
    check_with_gradcheck(lambda a: a**k, [base])


@FAST
@given(base=reals(-5, -0.1), k=st.sampled_from([2.0, 3.0, -1.0]))
def test_negative_base_with_integral_float_exponent_is_allowed(base, k):
    check_against_torch(lambda a: a**k, [base])


def test_each_op_records_its_name_parents_and_local_gradients():
    a, b = Value(3.0, "a"), Value(-2.0, "b")
    cases = [
        (a + b, "+", (a, b), (1.0, 1.0)),
        (a - b, "-", (a, b), (1.0, -1.0)),
        (a * b, "*", (a, b), (-2.0, 3.0)),
        (a / b, "/", (a, b), (-0.5, -3.0 / 4.0)),
        (a**2, "**2", (a,), (6.0,)),
        (-a, "neg", (a,), (-1.0,)),
        (a.relu(), "relu", (a,), (1.0,)),
        (b.relu(), "relu", (b,), (0.0,)),
        (a.exp(), "exp", (a,), (math.exp(3.0),)),
        (a.log(), "log", (a,), (1.0 / 3.0,)),
    ]
    for out, op, parents, local_grads in cases:
        assert out.op == op
        assert out.parents == parents and all(p is q for p, q in zip(out.parents, parents, strict=True))
        assert out.local_grads == pytest.approx(local_grads, rel=1e-15)
    leaf = Value(1.5)
    assert (leaf.op, leaf.parents, leaf.local_grads, leaf.grad, leaf.label) == ("", (), (), 0.0, "")


def test_relu_takes_derivative_zero_at_the_kink_like_torch():
    check_against_torch(lambda a: a.relu(), [0.0])
    x = Value(0.0)
    x.relu().backward()
    assert x.grad == 0.0


def test_sigmoid_is_stable_for_large_inputs():
    for x in (-1000.0, -745.0, 745.0, 1000.0):
        check_against_torch(lambda a: a.sigmoid(), [x])
    assert Value(-1000.0).sigmoid().data == 0.0
    assert Value(1000.0).sigmoid().data == 1.0


def test_numpy_scalars_are_accepted_as_numbers():
    import numpy as np

    assert Value(np.float64(1.5)).data == 1.5
    assert type(Value(np.float32(1.5)).data) is float
    assert (Value(2.0) * np.int64(3)).data == 6.0


# --------------------------------------------------------------------------- random expressions


def _relu_away_from_kink(a, b):
    if isinstance(a, Value):
        assume(abs(a.data) > 1e-2)  # the central difference is meaningless at the kink
    return a.relu()


OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 1.0),
    "radd": lambda a, b: 1.5 + a,
    "rsub": lambda a, b: 0.5 - a,
    "rmul": lambda a, b: -2.0 * a,
    "rdiv": lambda a, b: 1.0 / (a * a + 0.5),
    "square": lambda a, b: a**2,
    "cube": lambda a, b: a**3,
    "sqrt": lambda a, b: (a * a + 1.0) ** 0.5,
    "neg": lambda a, b: -a,
    "tanh": lambda a, b: a.tanh(),
    "sigmoid": lambda a, b: a.sigmoid(),
    "exp": lambda a, b: (a * 0.5).exp(),
    "log": lambda a, b: (a * a + 0.1).log(),
    "relu": _relu_away_from_kink,
}


@st.composite
def programs(draw):
    """Inputs and a list of steps; each step applies an op to earlier nodes."""
    n_inputs = draw(st.integers(1, 3))
    xs = draw(st.lists(away_from_zero(-2, 2, 0.05), min_size=n_inputs, max_size=n_inputs))
    steps = draw(
        st.lists(
            st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 50), st.integers(0, 50)),
            min_size=1,
            max_size=12,
        )
    )
    return xs, steps


def run_program(steps, *inputs):
    nodes = list(inputs)
    for name, i, j in steps:
        out = OPS[name](nodes[i % len(nodes)], nodes[j % len(nodes)])
        if isinstance(out, Value):
            assume(abs(out.data) < 1e3)  # keep magnitudes where central differences are accurate
        nodes.append(out)
    return nodes[-1]


@settings(max_examples=60, deadline=None)
@given(program=programs())
def test_random_expressions_match_torch_and_central_differences(program):
    xs, steps = program
    check_against_torch(lambda *inputs: run_program(steps, *inputs), xs)
    check_with_gradcheck(lambda *inputs: run_program(steps, *inputs), xs)


@settings(max_examples=60, deadline=None)
@given(program=programs(), which=st.integers(0, 2))
def test_gradcheck_passes_right_rules_at_forced_stationary_points_and_fails_planted_ones(program, which):
    """The program's value taken away and squared, (P(x) - P(x0))**2, is stationary at x0 in every
    input (f = 0, gradient 0): a right rule passes there. P times (x_i - x0_i)**2 is stationary in
    x_i. And P behind an identity whose rule is off by a relative 1e-6 fails wherever that error
    stands above the check's own noise."""
    xs, steps = program
    at = run_program(steps, *[Value(x) for x in xs]).data
    assert_gradients_close(lambda *inputs: (run_program(steps, *inputs) - at) ** 2, [Value(x) for x in xs])
    i = which % len(xs)
    squared = lambda *inputs: run_program(steps, *inputs) * (inputs[i] - xs[i]) ** 2  # noqa: E731
    assert_gradients_close(squared, [Value(x) for x in xs])

    def planted(*inputs):
        out = run_program(steps, *inputs)
        return Value(out.data, op="id", parents=(out,), local_grads=(1.0 + 1e-6,))

    # Caught wherever the planted 1e-6 stands above twice the check's tolerance (rtol and the
    # rounding noise of the central difference, which at eps = 1e-6 can reach 1e-8 of a large f).
    rows = gradcheck(planted, [Value(x) for x in xs]).rows
    above = [row for row in rows if 1e-6 * abs(row.analytic) > 2 * (1e-7 * abs(row.numeric) + row.numeric_error)]
    assume(above)
    assert not any(row.ok for row in above), rows


def reachable_from(root):
    """Every node ``root`` depends on, found by a breadth-first walk (independent of graph.py)."""
    seen = {id(root): root}
    frontier = [root]
    while frontier:
        frontier = [p for node in frontier for p in node.parents if id(p) not in seen]
        for p in frontier:
            seen[id(p)] = p
    return seen


@settings(max_examples=60, deadline=None)
@given(program=programs())
def test_topological_order_puts_every_node_after_its_parents(program):
    xs, steps = program
    inputs = [Value(x) for x in xs]
    root = run_program(steps, *inputs)
    order = topological_order(root)
    position = {id(node): k for k, node in enumerate(order)}
    assert len(position) == len(order), "a node appears twice"
    assert position.keys() == reachable_from(root).keys()
    assert order[-1] is root
    for node in order:
        for parent in node.parents:
            assert position[id(parent)] < position[id(node)]


@st.composite
def named_graphs(draw):
    """A random DAG as ``{name: [parent names]}``: node k's parents are earlier nodes, repeats
    and shared parents allowed, and some nodes the root never reaches."""
    size = draw(st.integers(1, 14))
    parents = {}
    for k in range(size):
        earlier = st.integers(0, k - 1) if k else st.nothing()
        parents[k] = draw(st.lists(earlier, max_size=3)) if k else []
    return parents


@settings(max_examples=100, deadline=None)
@given(parents=named_graphs())
def test_the_lessons_search_and_the_engines_order_agree(parents):
    """graph.py walks a graph twice: depth_first_events, which the lessons' trace and figures
    step through, and topological_order, its fast loop for the engine. On every graph the
    engine's order is the lesson's finish events, and dfs_trace ends on the same order."""
    root = max(parents)
    finished = [node for event, node in depth_first_events(root, parents.__getitem__) if event == FINISH]
    assert topological_order(root, parents.__getitem__) == finished
    assert list(dfs_trace(root, parents)[-1].order) == finished


def test_topological_order_of_a_diamond():
    a = Value(1.0, "a")
    b, c = a * 2.0, a + 1.0
    d = b * c
    order = topological_order(d)
    assert order[0] is a and order[-1] is d
    assert {id(n) for n in order} == reachable_from(d).keys()
    assert len(order) == 6  # a, the constants 2.0 and 1.0, b, c, d


# --------------------------------------------------------------------------- scale


def test_a_chain_far_deeper_than_the_recursion_limit_backpropagates():
    """The topological sort and the backward pass are iterative: a chain 20 times deeper than
    Python's recursion limit works. (make bench tries 1,000,000 and measures that backward
    time grows linearly with the graph.)"""
    n = 20 * sys.getrecursionlimit()
    x, c = Value(0.5, "x"), Value(1.0, "c")
    y = x
    for _ in range(n):
        y = y + c
    y.backward()
    assert x.grad == 1.0
    assert c.grad == float(n)  # c feeds every one of the n additions
    assert y.data == 0.5 + n


# --------------------------------------------------------------------------- reuse and repeated calls


def test_a_value_used_twice_in_one_product():
    a = Value(3.0, "a")
    b = a * a
    assert b.parents == (a, a)
    b.backward()
    assert a.grad == 6.0


def test_a_value_added_to_itself_twice():
    a = Value(-1.25, "a")
    b = a + a
    c = b + b
    c.backward()
    assert a.grad == 4.0
    assert b.grad == 2.0


@FAST
@given(a=away_from_zero(-3, 3, 1e-2), b=reals(-3, 3))
def test_fan_out_sums_every_path(a, b):
    def fn(a, b):
        return a * b + a.tanh() + a + (a * a).exp() - a / (b * b + 1.0)

    check_against_torch(fn, [a, b])
    check_with_gradcheck(fn, [a, b])


def test_a_second_backward_accumulates_everywhere_and_propagates_only_its_own_gradient():
    a, b = Value(2.0, "a"), Value(3.0, "b")
    c = a * b
    e = c.tanh()
    d = e + a * c
    d.backward()
    once = {node: node.grad for node in (a, b, c, e, d)}
    assert (c.grad, d.grad) == (1.0 - math.tanh(6.0) ** 2 + 2.0, 1.0)
    d.backward()
    # every node, interior ones too, doubles (up to rounding: a leaf adds term by term)
    for node, grad in once.items():
        assert math.isclose(node.grad, 2 * grad, rel_tol=1e-14), node

    # PyTorch agrees, with retain_grad() on the interior tensors
    ta, tb = torch_leaf(2.0), torch_leaf(3.0)
    tc = ta * tb
    te = torch.tanh(tc)
    td = te + ta * tc
    for t in (tc, te, td):
        t.retain_grad()
    td.backward(retain_graph=True)
    td.backward()
    for ours, theirs in [(a, ta), (b, tb), (c, tc), (e, te), (d, td)]:
        assert math.isclose(ours.grad, theirs.grad.item(), rel_tol=1e-12)

    d.zero_grad()
    assert all(node.grad == 0.0 for node in (a, b, c, d, e))
    d.backward()
    assert {node: node.grad for node in once} == once  # the same sums, in the same order
    c.zero_grad()  # only c and what it depends on
    assert (a.grad, b.grad, c.grad, d.grad) == (0.0, 0.0, 0.0, 1.0)
    d.zero_grad()
    assert all(node.grad == 0.0 for node in topological_order(d))


def test_backward_of_a_leaf_accumulates_like_any_leaf():
    x = Value(5.0)
    x.backward()
    x.backward()
    assert x.grad == 2.0


def test_backward_from_an_interior_node_adds_its_gradients_and_leaves_the_rest():
    a, b = Value(2.0), Value(3.0)
    c = a * b
    d = c.tanh()
    d.backward()
    first = (a.grad, b.grad, c.grad, d.grad)
    c.backward()
    # c adds dc/dc = 1 to its own gradient and passes on only that: a gains b, b gains a
    assert (a.grad, b.grad, c.grad) == (first[0] + 3.0, first[1] + 2.0, first[2] + 1.0)
    assert d.grad == first[3]  # downstream of c: untouched


def test_a_failed_backward_keeps_the_gradients_of_earlier_calls():
    a = Value(2.0)
    c = a * 3.0
    c.backward()
    x = Value(1e-200)
    root = (x * 1.0).log() * 1e200 + c  # the log's gradient overflows at x * 1.0
    with pytest.raises(FloatingPointError):
        root.backward()
    # c keeps the first call's 1, plus the 1 the failed pass had sent it from root
    assert c.grad == 2.0


def test_on_node_sees_each_node_once_in_the_passs_order_with_its_gradient_complete():
    a, b = Value(2.0), Value(-3.0)
    c = a * b
    d = c * a + c.tanh()
    watched = []
    d.backward(on_node=lambda node: watched.append((node, node.grad)))
    assert [node for node, _ in watched] == list(reversed(topological_order(d)))
    # reached after every node that uses it: what it holds then is its final gradient
    assert [grad for _, grad in watched] == [node.grad for node, _ in watched]
    plain = Value(2.0), Value(-3.0)
    y = plain[0] * plain[1]
    (y * plain[0] + y.tanh()).backward()
    assert [plain[0].grad, plain[1].grad] == [a.grad, b.grad]


def test_a_hook_that_raises_stops_the_pass_and_keeps_earlier_gradients():
    a = Value(2.0)
    c = a * 3.0
    c.backward()

    def stop(node):
        if node is c:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        (c * 2.0).backward(on_node=stop)
    assert c.grad == 1.0 + 2.0 and a.grad == 3.0  # c kept its first 1 and sent nothing on


# --------------------------------------------------------------------------- bad input

BAD_INPUT = {
    # name: (code that must fail, exception type, strings its message must contain)
    "data str": (lambda: Value("1.5"), TypeError, ["Value()", "str", "'1.5'"]),
    "data None": (lambda: Value(None), TypeError, ["Value()", "None"]),
    "data complex": (lambda: Value(1 + 2j), TypeError, ["Value()", "complex", "(1+2j)"]),
    "data bool": (lambda: Value(True), TypeError, ["Value()", "bool", "True"]),
    "data list": (lambda: Value([1.0]), TypeError, ["Value()", "[1.0]"]),
    "data nan": (lambda: Value(float("nan")), (OverflowError, ValueError), ["Value()", "nan"]),
    "data inf": (lambda: Value(float("inf")), (OverflowError, ValueError), ["Value()", "inf"]),
    "data huge int": (lambda: Value(10**400), OverflowError, ["Value()", "too large"]),
    "exponent Value": (lambda: Value(2.0) ** Value(3.0), TypeError, ["**", "exponent", "data=3"]),
    "exponent str": (lambda: Value(2.0) ** "2", TypeError, ["**", "'2'"]),
    "base float, exponent Value": (lambda: 2.0 ** Value(3.0), TypeError, ["**", "exponent", "data=3"]),
    "log of zero": (lambda: Value(0.0).log(), ValueError, ["log", "0.0"]),
    "log of negative": (lambda: Value(-2.5).log(), ValueError, ["log", "-2.5"]),
    "divide by zero Value": (lambda: Value(1.5) / Value(0.0), ZeroDivisionError, ["divide", "1.5", "zero"]),
    "divide by int zero": (lambda: Value(1.5) / 0, ZeroDivisionError, ["divide", "1.5", "zero"]),
    "float divided by zero Value": (lambda: 2.5 / Value(0.0), ZeroDivisionError, ["divide", "2.5", "zero"]),
    "zero to a negative power": (lambda: Value(0.0) ** -1, ZeroDivisionError, ["**", "0.0", "-1"]),
    "zero to the power 0.5": (lambda: Value(0.0) ** 0.5, ZeroDivisionError, ["**", "0.0", "0.5"]),
    "negative to a fractional power": (lambda: Value(-2.0) ** 0.5, ValueError, ["**", "-2.0", "0.5"]),
    "Value + str": (lambda: Value(1.0) + "a", TypeError, ["add", "'a'"]),
    "str + Value": (lambda: "a" + Value(1.0), TypeError, ["add", "'a'"]),
    "str * Value": (lambda: "a" * Value(1.0), TypeError, ["multiply", "'a'"]),
    "Value * complex": (lambda: Value(1.0) * 1j, TypeError, ["multiply", "1j"]),
    "Value + list": (lambda: Value(1.0) + [1], TypeError, ["add", "[1]"]),
    "list + Value": (lambda: [1] + Value(1.0), TypeError, ["add", "[1]"]),
    "Value - None": (lambda: Value(1.0) - None, TypeError, ["subtract", "None"]),
    "None - Value": (lambda: None - Value(1.0), TypeError, ["subtract", "None"]),
    "Value / str": (lambda: Value(1.0) / "x", TypeError, ["divide", "'x'"]),
    "Value + bool": (lambda: Value(1.0) + True, TypeError, ["add", "True"]),
    "exp overflow": (lambda: Value(1000.0).exp(), OverflowError, ["exp", "1000.0"]),
    "product overflow": (lambda: Value(1e200) * Value(1e200), OverflowError, ["*", "inf", "1e+200"]),
    "sum overflow": (lambda: Value(1.7e308) + 1.7e308, OverflowError, ["+", "inf", "1.7e+308"]),
    "power overflow": (lambda: Value(10.0) ** 400, OverflowError, ["**", "10.0", "400"]),
    "square overflow": (lambda: Value(1e200) ** 2, OverflowError, ["**", "1e+200"]),
    "power derivative overflow": (lambda: Value(1e-200) ** -1.5, OverflowError, ["**", "1e-200", "-1.5"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_raises_a_clear_error(case):
    code, error_type, must_mention = BAD_INPUT[case]
    with pytest.raises(error_type) as caught:
        code()
    message = str(caught.value)
    missing = [text for text in must_mention if text not in message]
    assert not missing, f"message {message!r} does not mention {missing}"


def test_division_by_a_tiny_number_has_the_right_gradient():
    # 1e-100 / 1e-170 = 1e70 is an ordinary float, and so are both derivatives
    # (1e170 and -1e240), although b**2 = 1e-340 underflows to zero.
    check_against_torch(lambda a, b: a / b, [1e-100, 1e-170])


def test_a_gradient_that_overflows_in_backward_is_reported():
    x = Value(1e-200, "x")
    y = x.log() * 1e200  # d(y)/dx = 1e200 / 1e-200 overflows, y itself is finite
    with pytest.raises(FloatingPointError) as caught:
        y.backward()
    assert "backward" in str(caught.value) and "inf" in str(caught.value)


def test_an_interior_gradient_overflow_is_reported_at_the_node_where_it_appears():
    # Every forward value is finite: x * 1e-200 = 1e-200, its log is about -460, times
    # 1e200. The gradient at the product is 1e200 / 1e-200 = inf, and it reaches the leaf
    # x as inf * 1e-200 = inf. The message must name the product, where it first appeared.
    x = Value(1.0, "x")
    product = x * 1e-200
    y = product.log() * 1e200
    with pytest.raises(FloatingPointError, match=r"reaching Value\(data=1e-200.*op '\*'.*is inf"):
        y.backward()


def test_a_nan_or_inf_operand_is_named_not_called_an_overflow():
    with pytest.raises(ValueError, match=r"Value \+ \(add\): the operand nan is not a finite number"):
        Value(2.0) + float("nan")
    with pytest.raises(ValueError, match=r"Value \* \(multiply\): the operand inf is not a finite number"):
        float("inf") * Value(2.0)
    with pytest.raises(OverflowError, match=r"Value \*: 1e\+308 \* 10.0 gives inf, which overflows a float"):
        Value(1e308) * 10

"""Tests of chainrule.cost: flop counts by op and pass, saved bytes, peak memory.

Every expected number is computed here from the shapes (2·m·k·n for a matmul, one
flop per output element for elementwise ops, ...), never copied from a run.
"""

import re
import tracemalloc
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainrule import grad_mode
from chainrule.cost import count_flops, peak_memory, saved_bytes, saved_bytes_by_kind
from chainrule.tensor import RULES, Rule, Tensor, apply, no_grad

FAST = settings(max_examples=20, deadline=None)
sides = st.integers(1, 5)


def leaf(shape, requires_grad=False, seed=0, dtype=np.float64):
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return Tensor(data, requires_grad=requires_grad)


def make_mlp(sizes, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    weights = [
        Tensor((rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype), requires_grad=True) for m, n in pairwise(sizes)
    ]
    biases = [Tensor(np.zeros(n, dtype=dtype), requires_grad=True) for n in sizes[1:]]
    return weights, biases


def mlp_forward(h, weights, biases):
    """relu(h W + b) for every layer but the last, which is linear."""
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        h = h @ w + b
        if i < len(weights) - 1:
            h = h.relu()
    return h


# --------------------------------------------------------------------------- formulas per op


def forward_flops(op_name, *inputs, args=()):
    with no_grad(), count_flops() as counter:
        out = apply(op_name, *inputs, args=args)
    assert counter.backward == 0
    return counter.forward, out


@FAST
@given(m=sides, k=sides, n=sides, batch=st.integers(1, 3))
def test_matmul_costs_2mkn_times_the_batch(m, k, n, batch):
    flops, _ = forward_flops("@", leaf((m, k)), leaf((k, n)))
    assert flops == 2 * m * k * n
    flops, _ = forward_flops("@", leaf((batch, m, k)), leaf((batch, k, n)))
    assert flops == 2 * m * k * n * batch
    flops, _ = forward_flops("@", leaf((batch, m, k)), leaf((k, n)))  # B broadcast over the batch
    assert flops == 2 * m * k * n * batch


@FAST
@given(k=sides, n=sides)
def test_matmul_with_vectors_counts_a_vector_as_one_row_or_column(k, n):
    assert forward_flops("@", leaf((k,)), leaf((k,)))[0] == 2 * k  # a dot product
    assert forward_flops("@", leaf((k,)), leaf((k, n)))[0] == 2 * k * n
    assert forward_flops("@", leaf((n, k)), leaf((k,)))[0] == 2 * n * k


@pytest.mark.parametrize("op_name", ["+", "-", "*", "/"])
def test_binary_elementwise_ops_cost_one_flop_per_output_element(op_name):
    a, b = leaf((3, 1)), Tensor(np.abs(leaf((4,), seed=1).data) + 1)  # broadcast to (3, 4)
    flops, out = forward_flops(op_name, a, b)
    assert out.shape == (3, 4) and flops == out.size


@pytest.mark.parametrize("op_name", ["neg", "relu", "tanh", "sigmoid", "exp", "log"])
def test_unary_elementwise_ops_cost_one_flop_per_element(op_name):
    a = Tensor(np.abs(leaf((2, 3, 4)).data) + 0.5)
    assert forward_flops(op_name, a)[0] == a.size
    assert forward_flops("**", a, args=(3,))[0] == a.size


@pytest.mark.parametrize("op_name", ["sum", "mean"])
@pytest.mark.parametrize("axis", [None, 0, (1, 2)])
def test_reductions_cost_one_flop_per_input_element(op_name, axis):
    a = leaf((2, 3, 4))
    flops, out = forward_flops(op_name, a, args=(axis, False))
    assert flops == a.size and out.size < a.size


@pytest.mark.parametrize(("kernel", "stride"), [(2, 2), (3, 2), (3, 1), (2, 3)])
def test_max_pool2d_costs_a_comparison_per_entry_of_every_window(kernel, stride):
    """k² per output element: with overlapping windows (stride < k) more than the input's size."""
    a = leaf((2, 3, 7, 6))
    flops, out = forward_flops("max_pool2d", a, args=((kernel, kernel), stride, 0))
    rows, cols = (7 - kernel) // stride + 1, (6 - kernel) // stride + 1
    assert out.shape == (2, 3, rows, cols)
    assert flops == kernel * kernel * 2 * 3 * rows * cols


def test_log_softmax_costs_five_flops_per_element():
    a = leaf((3, 7))
    assert forward_flops("log_softmax", a, args=(1,))[0] == 5 * a.size


def test_nll_loss_costs_one_flop_per_row():
    a = leaf((5, 7))
    assert forward_flops("nll_loss", a, args=(np.arange(5) % 7,))[0] == 5


def test_shape_changes_cost_nothing():
    a = leaf((2, 3))
    assert forward_flops("reshape", a, args=((3, 2),))[0] == 0
    assert forward_flops("transpose", a, args=((1, 0),))[0] == 0
    assert forward_flops("broadcast_to", a, args=((4, 2, 3),))[0] == 0


def test_every_row_of_the_rule_table_counts_its_flops():
    assert [op for op, rule in RULES.items() if not callable(rule.flops)] == []


@pytest.mark.parametrize(
    "reads, said",
    [
        ((("D",),), "reads[0] names slot 'D', but a rule of 1 input(s) reads only A, C"),
        ((("B",),), "reads[0] names slot 'B', but a rule of 1 input(s) reads only A, C"),
        (("A",), "reads must hold one tuple of slot names per input"),
        ((), "reads must hold one tuple of slot names per input"),
    ],
)
def test_a_wrong_reads_fails_when_the_table_is_made_naming_the_row(reads, said):
    from chainrule.rules import _checked

    with pytest.raises((TypeError, ValueError), match=re.escape(f"RULES['twice']: {said}")):
        _checked({"twice": Rule(lambda a: 2 * a, None, reads, "twice")})


def test_an_op_without_a_formula_is_named_in_the_error(monkeypatch):
    monkeypatch.setitem(RULES, "double", Rule(lambda a: 2 * a, None, ((),), "double"))
    x = leaf((2,))
    with pytest.raises(NotImplementedError, match=r"no flop formula for op 'double'.*RULES one \(flops=\)"):
        with count_flops():
            apply("double", x)
    assert grad_mode.observers() == []  # the counter let go of the engine
    np.testing.assert_array_equal(apply("double", x).data, 2 * x.data)  # and nothing else broke


# --------------------------------------------------------------------------- phases


def test_a_linear_layer_backward_costs_one_matmul_per_input_that_needs_grad():
    m, k, n = 5, 4, 3
    x, w = leaf((m, k)), leaf((k, n), requires_grad=True, seed=1)
    with count_flops() as counter:
        (x @ w).sum().backward()
    # forward: the matmul and the sum; backward: sum's rule only broadcasts, then dW = xᵀ G
    assert counter.forward == 2 * m * k * n + m * n
    assert counter.backward == 2 * k * m * n
    x.requires_grad = True
    with count_flops() as counter:
        (x @ w).sum().backward()
    assert counter.backward == 2 * (2 * m * k * n)  # dX = G Wᵀ as well


def test_only_ops_inside_the_block_are_counted_and_counters_nest():
    a = leaf((4, 4), requires_grad=True)
    with count_flops() as outer:
        b = a * a
        with count_flops() as inner:
            c = b.tanh()
        loss = c.sum()
    loss.backward()  # outside both blocks: not counted
    assert inner.forward == 16 and inner.backward == 0
    assert outer.forward == 16 + 16 + 16 and outer.backward == 0
    assert grad_mode.observers() == []
    assert not grad_mode.in_backward()


def test_the_counter_is_released_when_the_block_raises():
    with pytest.raises(ValueError, match="matmul"):
        with count_flops():
            leaf((2, 3)) @ leaf((2, 3))
    assert grad_mode.observers() == []


def test_an_mlp_training_step_costs_about_twice_its_forward_pass_backward():
    batch, sizes = 32, [48, 64, 64, 64, 64, 64, 10]
    weights, biases = make_mlp(sizes)
    x = leaf((batch, sizes[0]), seed=7)
    with count_flops() as counter:
        loss = (mlp_forward(x, weights, biases) ** 2).mean()
        loss.backward()
    layers = list(pairwise(sizes))
    matmul = [2 * batch * m * n for m, n in layers]
    # forward: one matmul per layer; backward: dW for every layer and dH for all but the
    # first (the data x does not need a gradient)
    rows = {row["op"]: row for row in counter.rows()}
    assert rows["@"]["forward_flops"] == sum(matmul)
    assert rows["@"]["backward_flops"] == 2 * sum(matmul) - matmul[0]
    assert rows["@"]["forward_calls"] == len(layers)
    assert rows["@"]["backward_calls"] == 2 * len(layers) - 1
    assert rows["+"]["forward_flops"] == sum(batch * n for m, n in layers)
    assert rows["relu"]["forward_flops"] == sum(batch * n for m, n in layers[:-1])
    # the totals are dominated by the matmuls, so backward / forward is near 2
    matmul_ratio = (2 * sum(matmul) - matmul[0]) / sum(matmul)
    assert counter.ratio == counter.backward / counter.forward
    assert abs(counter.ratio - matmul_ratio) < 0.05
    assert 1.8 < counter.ratio < 2.1
    assert counter.total == counter.forward + counter.backward


def test_the_table_lists_each_op_once_with_the_totals():
    weights, biases = make_mlp([3, 4, 2])
    with count_flops() as counter:
        mlp_forward(leaf((5, 3)), weights, biases).sum().backward()
    rows = counter.rows()
    assert sum(r["forward_flops"] for r in rows) == counter.forward
    assert sum(r["backward_flops"] for r in rows) == counter.backward
    flops = [r["forward_flops"] + r["backward_flops"] for r in rows]
    assert flops == sorted(flops, reverse=True)
    text = counter.table()
    lines = text.splitlines()
    for row in rows:
        assert sum(line.split()[0] == row["op"] for line in lines) == 1
    assert f"{counter.forward:,}" in text and f"{counter.backward:,}" in text
    assert f"backward / forward = {counter.ratio:.2f}" in text


def test_ratio_without_forward_work_is_nan():
    with count_flops() as counter:
        pass
    assert counter.forward == counter.backward == 0 and np.isnan(counter.ratio)


# --------------------------------------------------------------------------- saved bytes


def test_saved_bytes_count_each_saved_array_once():
    n = 10
    x, w = leaf((n,), requires_grad=True), leaf((n,), seed=1, requires_grad=True)
    y = x * w  # saves x and w (leaves)
    assert saved_bytes_by_kind(y) == {"activations": 0, "leaves": 2 * n * 8}
    z = y * y  # saves y twice: counted once
    u = z * x  # saves z and x again
    assert saved_bytes_by_kind(u) == {"activations": 2 * n * 8, "leaves": 2 * n * 8}
    t = u.tanh()  # saves its own output
    s = t + u  # saves nothing
    assert saved_bytes(s) == 3 * n * 8 + 2 * n * 8
    s.sum().backward()
    assert saved_bytes(s) == 0  # freed by backward


def test_saved_views_are_counted_as_the_array_they_view():
    a = leaf((6, 4), requires_grad=True, dtype=np.float32)
    h = a.tanh()  # saves h
    v = h.reshape(4, 6).T  # views of h's memory
    loss = v * v  # saves the view twice
    assert saved_bytes_by_kind(loss) == {"activations": a.size * 4, "leaves": 0}


@pytest.mark.parametrize("leaf_first", [True, False])
def test_an_array_kept_both_as_a_leaf_and_through_a_view_counts_as_a_leaf(leaf_first):
    a = leaf((6, 4), requires_grad=True)
    b, c = leaf((4, 6), requires_grad=True), leaf((6, 4), requires_grad=True)
    through_view = (a.reshape(4, 6) * b).sum()  # dB reads a view of a's array, which is kept
    direct = (a * c).sum()  # dC reads a itself
    loss = direct + through_view if leaf_first else through_view + direct
    assert saved_bytes_by_kind(loss) == {"activations": 0, "leaves": a.data.nbytes + b.data.nbytes + c.data.nbytes}


def test_a_weight_kept_only_through_its_transpose_counts_as_a_leaf():
    # A linear layer computes x @ W.T: the matmul keeps W.T, a node of its own (it has a
    # parent) whose data is a view of W's memory. That memory is the weight's, not an
    # activation, even though no node keeps W itself.
    w = leaf((3, 5), requires_grad=True)
    x = leaf((4, 5), requires_grad=True)  # so that dx, which reads W.T, is computed
    loss = (x @ w.T).sum()
    assert saved_bytes_by_kind(loss) == {"activations": 0, "leaves": w.data.nbytes + x.data.nbytes}


def test_saved_bytes_of_an_mlp_are_its_hidden_activations_and_weights():
    batch, sizes = 8, [5, 7, 6, 3]
    weights, biases = make_mlp(sizes, dtype=np.float32)
    x = leaf((batch, sizes[0]), dtype=np.float32)
    loss = mlp_forward(x, weights, biases).sum()
    # every matmul keeps its input (for dW) and its weight (for the gradient of the input),
    # except the first: its input x needs no gradient, so its weight is not kept. relu
    # keeps its output, which is the next matmul's input; + and sum keep nothing.
    hidden = sum(batch * n for n in sizes[1:-1]) * 4
    leaves = (x.size + sum(w.size for w in weights[1:])) * 4
    assert saved_bytes_by_kind(loss) == {"activations": hidden, "leaves": leaves}


# --------------------------------------------------------------------------- peak memory


def test_peak_memory_sees_a_temporary_numpy_array():
    n = 200_000

    def make_and_drop():
        big = np.ones(n)
        return float(big.sum())

    result, peak = peak_memory(make_and_drop)
    assert result == n
    assert n * 8 <= peak < n * 8 + 100_000
    assert not tracemalloc.is_tracing()


def test_peak_memory_does_not_count_what_was_allocated_before():
    existing = np.ones(500_000)
    _, peak = peak_memory(lambda a: a.sum(), existing)
    assert peak < existing.nbytes / 10


def test_a_training_step_needs_several_times_the_memory_of_inference():
    batch, sizes = 64, [128] * 9
    weights, biases = make_mlp(sizes)
    x = leaf((batch, sizes[0]), seed=3)

    def inference():
        with no_grad():
            return mlp_forward(x, weights, biases).sum().item()

    def training_step():
        loss = mlp_forward(x, weights, biases).sum()
        kept = saved_bytes_by_kind(loss)["activations"]
        loss.backward()
        return kept

    _, inference_peak = peak_memory(inference)
    kept, training_peak = peak_memory(training_step)
    activation = batch * sizes[1] * 8
    assert inference_peak < 6 * activation  # inference holds a few activations at a time
    # All activations are alive when the forward pass ends; gradients are allocated while
    # the backward pass frees them, so the peak is at least the larger of the two.
    assert training_peak > max(kept, sum(w.data.nbytes for w in weights))
    assert training_peak > 3 * inference_peak


# --------------------------------------------------------------------------- the memory model against tracemalloc


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_memory_parts_predict_the_peak_of_a_training_step_within_ten_percent(optimizer):
    """The 16-layer network of the cost chapter: the sum of the parts against tracemalloc's peak."""
    import gc

    from chainrule.cost import memory_parts
    from chainrule.nn import SGD, Adam

    depth, width, rows = 16, 128, 512
    rng = np.random.default_rng(0)
    initial = rng.normal(size=(depth, width, width)) * np.sqrt(2 / width)
    x = Tensor(rng.normal(size=(rows, width)))
    make = {
        "sgd": lambda ws: SGD(ws, lr=1e-3),
        "momentum": lambda ws: SGD(ws, lr=1e-3, momentum=0.9),
        "adam": lambda ws: Adam(ws, lr=1e-3),
    }[optimizer]

    def train_two_steps():  # everything from the weights on is allocated inside, so tracemalloc sees it
        weights = [Tensor(w.copy(), requires_grad=True) for w in initial]
        opt = make(weights)
        for _ in range(2):
            opt.zero_grad(set_to_none=False)
            h = x
            for w in weights:
                h = (h @ w).relu()
            loss = (h * h).mean()
            parts = memory_parts(loss, opt)
            loss.backward()
            opt.step()
        assert opt.state_bytes() == parts["optimizer_state"]  # the prediction of the state is exact
        return parts

    gc.collect()
    gc.disable()  # reference counting alone must free what the model does not count
    try:
        parts, peak = peak_memory(train_two_steps)
    finally:
        gc.enable()
    activation = rows * width * 8
    assert parts["activations"] == depth * activation and parts["in_flight"] == 2 * activation
    assert parts["gradients"] == parts["weights"] == depth * width * width * 8
    assert abs(peak / parts["total"] - 1) < 0.10, (peak, parts)


def formulas_not_naming_their_ops(rules) -> list[str]:
    """The rows of ``rules`` whose flop formula's docstring in chainrule.flops does not name the op (by
    its key or its name), unless the formula is the op's own (matmul's, log_softmax's)."""
    return [
        f"{key} ({rule.flops.__name__})"
        for key, rule in rules.items()
        if rule.flops.__name__ != rule.name
        and not re.search(rf"(?<![\w*]){re.escape(key)}(?![\w*])", rule.flops.__doc__ or "")
        and rule.name not in (rule.flops.__doc__ or "")
    ]


def test_each_flop_formula_names_the_ops_it_counts():
    from chainrule.rules import RULES

    assert formulas_not_naming_their_ops(RULES) == [], "name the op in its formula's docstring in chainrule/flops.py"
    planted = {**RULES, "planted_op": RULES["exp"]._replace(name="planted_op")}
    assert formulas_not_naming_their_ops(planted) == ["planted_op (elementwise)"]

    def elementwise(inputs, args, out):
        """1 per output element (+ - * /)."""

    power = {"**": RULES["**"]._replace(flops=elementwise)}  # '*' in "+ - * /" is no mention of '**'
    assert formulas_not_naming_their_ops(power) == ["** (elementwise)"]

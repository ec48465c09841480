"""Tests of the tensor engine, chainrule.tensor.

PyTorch (CPU, float64) is the reference for every forward value and gradient;
chainrule.gradcheck's central differences are a second, independent witness; JAX checks
the Hessian-vector products.  Shapes come from hypothesis and include 0-d tensors,
size-1 dims and broadcasting of either operand.  Error messages are tested in
test_tensor_errors.py.
"""

import gc
import re
import sys
from collections.abc import Callable
from itertools import pairwise
from typing import NamedTuple

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from chainrule import checkpoint, topological_order
from chainrule.autograd import clear_grads, grad
from chainrule.cost import saved_bytes_by_kind
from chainrule.functional import (
    cat,
    conv2d,
    dropout,
    embedding,
    log_softmax,
    max_pool2d,
    maximum,
    minimum,
    nll_loss,
    stack,
    where,
)
from chainrule.gradcheck import assert_gradients_close
from chainrule.nn import SGD
from chainrule.node import vertex_of
from chainrule.rules import EVERY_INPUT, NO_INPUT
from chainrule.tensor import (
    RULES,
    Node,
    Rule,
    Tensor,
    is_grad_enabled,
    no_grad,
    recorded_graph,
    set_grad_enabled,
    unbroadcast,
)

FAST = settings(max_examples=25, deadline=None)
seeds = st.integers(0, 2**32 - 1)
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=3)


def normal(rng, shape):
    return np.asarray(rng.standard_normal(shape))


def positive(rng, shape):
    return np.asarray(rng.uniform(0.5, 2.0, shape))


def away_from_zero(rng, shape):
    return positive(rng, shape) * rng.choice([-1.0, 1.0], size=shape)


def check_against_torch(chain_fn, torch_fn, arrays, rng, rtol=1e-10):
    """Forward values and the gradient of every input must match float64 torch.

    The output's gradient (the v in vᵀJ) is random, so every element of the
    Jacobian-vector product is exercised, not only the sum.
    """
    leaves = [Tensor(a.copy(), requires_grad=True, label=f"x{i}") for i, a in enumerate(arrays)]
    out = chain_fn(*leaves)
    references = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    expected = torch_fn(*references)
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=rtol, atol=1e-12)
    upstream = normal(rng, out.shape)
    out.backward(gradient=upstream)
    expected.backward(gradient=torch.tensor(upstream))
    for leaf, reference in zip(leaves, references, strict=True):
        assert leaf.grad.shape == leaf.shape
        np.testing.assert_allclose(leaf.grad, reference.grad.numpy(), rtol=rtol, atol=1e-12, err_msg=leaf.label)
    return out, leaves


# --------------------------------------------------------------------------- the op table
#
# One case per row of RULES: a chainrule function that runs the op, the same function in
# torch, the shapes of a fixed example and how its inputs are drawn.  Every per-op check
# below (torch, central differences, dtypes, second order) runs over this table, and
# test_the_op_table_covers_every_rule fails when a rule has no case.


class OpCase(NamedTuple):
    chain: Callable
    torch: Callable
    shapes: tuple
    data: Callable = away_from_zero  # away from relu's kink and from 1/0
    kind: str = ""  # "binary": hypothesis also tries broadcast shape pairs; "unary": any shape
    second_order: bool = True


#: Rows picked by the embedding case: 0 twice and 2 three times, so their gradients must add.
PICKED = np.array([[0, 2, 0], [3, 2, 2]])
#: The labels of the nll_loss case: rows 0 and 2 pick the same class.
LABELS = np.array([1, 3, 1])
#: The mask that dropout(p=0.5) draws from default_rng(0) for shape (2, 3): kept entries scaled by 2.
KEPT = (np.random.default_rng(0).random((2, 3)) >= 0.5) / 0.5


def _scatter_add(g):
    return g.scatter_add_rows(PICKED, 4)


def _torch_scatter_add(g):
    rows = torch.zeros((4, g.shape[-1]), dtype=g.dtype)
    return rows.index_add(0, torch.tensor(PICKED.ravel()), g.reshape(-1, g.shape[-1]))


def _torch_im2col(x, kernel=(3, 2), stride=2, padding=1):
    """Tensor.im2col's layout from torch's unfold: (N, C·kh·kw, L) -> (N, rows, cols, C·kh·kw)."""
    n, _, h, w = x.shape
    rows, cols = ((size + 2 * padding - k) // stride + 1 for size, k in zip((h, w), kernel, strict=True))
    unfolded = torch.nn.functional.unfold(x, kernel, stride=stride, padding=padding)
    return unfolded.transpose(1, 2).reshape(n, rows, cols, -1)


def _torch_col2im(g, shape=(2, 2, 5, 4), kernel=(3, 2), stride=2, padding=1):
    columns = g.reshape(g.shape[0], -1, g.shape[-1]).transpose(1, 2)
    return torch.nn.functional.fold(columns, shape[2:], kernel, stride=stride, padding=padding)


#: The mask of the where case, and the key of the index and add_at cases (row 0 picked twice).
MASK = np.array([[True, False, True], [False, False, True]])
KEY = ([0, 2, 0], slice(1, None))


def _torch_add_at(g):  # G (3, 3) added at KEY of zeros (3, 4): column 0 gets nothing
    padded = torch.nn.functional.pad(g, (1, 0))
    return torch.zeros((3, 4), dtype=g.dtype).index_add(0, torch.tensor(KEY[0]), padded)


def _checkpointed(a, w):
    return checkpoint(lambda t: (t @ w).tanh(), a)


OPS = {
    "+": OpCase(lambda a, b: a + b, lambda a, b: a + b, ((2, 3), (3,)), kind="binary"),
    "-": OpCase(lambda a, b: a - b, lambda a, b: a - b, ((2, 1), (1, 3)), kind="binary"),
    "*": OpCase(lambda a, b: a * b, lambda a, b: a * b, ((), (2, 3)), kind="binary"),
    "/": OpCase(lambda a, b: a / b, lambda a, b: a / b, ((2, 3), (2, 3)), kind="binary"),
    "@": OpCase(lambda a, b: a @ b, lambda a, b: a @ b, ((2, 3), (3, 2))),
    "**": OpCase(lambda a: a**3, lambda a: a**3, ((2, 3),), kind="unary"),
    "neg": OpCase(lambda a: -a, lambda a: -a, ((2,),), kind="unary"),
    "sum": OpCase(lambda a: a.sum(axis=1, keepdims=True) * a, lambda a: a.sum(dim=1, keepdim=True) * a, ((2, 3),)),
    "mean": OpCase(lambda a: a.mean(axis=(0, 2)), lambda a: a.mean(dim=(0, 2)), ((2, 3, 2),)),
    "max": OpCase(lambda a: a.max(axis=(0, 2)), lambda a: a.amax(dim=(0, 2)), ((2, 3, 2),), normal),
    "embedding": OpCase(
        lambda t: embedding(PICKED, t),
        lambda t: torch.nn.functional.embedding(torch.tensor(PICKED), t),
        ((4, 3),),
        normal,
    ),
    "scatter_add": OpCase(_scatter_add, _torch_scatter_add, ((2, 3, 5),), normal),
    "dropout": OpCase(
        lambda a: dropout(a, 0.5, rng=np.random.default_rng(0)),
        lambda a: a * torch.tensor(KEPT),
        ((2, 3),),
        normal,
    ),
    "im2col": OpCase(lambda x: x.im2col((3, 2), stride=2, padding=1), _torch_im2col, ((2, 2, 5, 4),), normal),
    "col2im": OpCase(
        lambda g: g.col2im((2, 2, 5, 4), (3, 2), stride=2, padding=1), _torch_col2im, ((2, 3, 3, 12),), normal
    ),
    "max_pool2d": OpCase(  # overlapping windows: 3×3, stride 2
        lambda x: max_pool2d(x, 3, stride=2),
        lambda x: torch.nn.functional.max_pool2d(x, 3, stride=2),
        ((2, 2, 5, 6),),
        normal,
    ),
    "reshape": OpCase(lambda a: a.reshape(3, 2) @ a, lambda a: a.reshape(3, 2) @ a, ((2, 3),)),
    "transpose": OpCase(
        lambda a: a.transpose(1, 0, 2) * a.T.transpose(1, 0, 2),
        lambda a: a.permute(1, 0, 2) * a.permute(2, 1, 0).permute(1, 0, 2),
        ((2, 3, 2),),
    ),
    "broadcast_to": OpCase(lambda a: a.broadcast_to(2, 3) * a, lambda a: a.broadcast_to((2, 3)) * a, ((3,),)),
    "relu": OpCase(lambda a: a.relu(), lambda a: a.relu(), ((2, 3),), kind="unary"),
    "tanh": OpCase(lambda a: a.tanh(), lambda a: a.tanh(), ((2, 3),), normal, kind="unary"),
    "sigmoid": OpCase(lambda a: a.sigmoid(), lambda a: a.sigmoid(), ((2, 3),), normal, kind="unary"),
    "exp": OpCase(lambda a: a.exp(), lambda a: a.exp(), ((2, 3),), normal, kind="unary"),
    "log": OpCase(lambda a: a.log(), lambda a: a.log(), ((2, 3),), positive, kind="unary"),
    "log_softmax": OpCase(lambda a: log_softmax(a, axis=1), lambda a: torch.log_softmax(a, dim=1), ((3, 4),), normal),
    "nll_loss": OpCase(
        lambda a: nll_loss(a, LABELS),
        lambda a: torch.nn.functional.nll_loss(a, torch.tensor(LABELS)),
        ((3, 4),),
        normal,
    ),
    "abs": OpCase(lambda a: a.abs(), lambda a: a.abs(), ((2, 3),), kind="unary"),
    "clamp": OpCase(lambda a: a.clamp(-1.0, 1.2), lambda a: a.clamp(-1.0, 1.2), ((2, 3),), normal, kind="unary"),
    "maximum": OpCase(maximum, torch.maximum, ((2, 3), (3,)), normal, kind="binary"),
    "minimum": OpCase(minimum, torch.minimum, ((2, 1), (1, 3)), normal, kind="binary"),
    "where": OpCase(
        lambda a, b: where(MASK, a, b), lambda a, b: torch.where(torch.tensor(MASK), a, b), ((2, 3), (3,)), normal
    ),
    "index": OpCase(lambda a: a[KEY], lambda a: a[KEY], ((3, 4),), normal),
    "add_at": OpCase(lambda g: g.add_at(KEY, (3, 4)), _torch_add_at, ((3, 3),), normal),
    "cat": OpCase(
        lambda a, b: cat([a, b, a], axis=1), lambda a, b: torch.cat([a, b, a], dim=1), ((2, 3), (2, 2)), normal
    ),
    "stack": OpCase(
        lambda a, b: stack([a, b], axis=-1), lambda a, b: torch.stack([a, b], dim=-1), ((2, 3), (2, 3)), normal
    ),
    # gradients of gradients through a checkpoint are refused (tested in test_checkpoint.py)
    "checkpoint": OpCase(_checkpointed, lambda a, w: (a @ w).tanh(), ((2, 3), (3, 2)), normal, second_order=False),
}


def ops_run_by(case: OpCase, arrays) -> set:
    leaves = [Tensor(a, requires_grad=True) for a in arrays]
    return {node.op for node in recorded_graph(case.chain(*leaves)) if isinstance(node, Node)}


def test_the_op_table_covers_every_rule():
    assert set(OPS) == set(RULES), f"rules without a test case: {set(RULES) - set(OPS)}"
    rng = np.random.default_rng(0)
    for op, case in OPS.items():
        assert op in ops_run_by(case, [case.data(rng, shape) for shape in case.shapes]), op


def test_every_rule_declares_its_name_and_its_messages():
    names = [rule.name for rule in RULES.values()]
    assert all(name.isidentifier() for name in names) and len(set(names)) == len(names), names
    assert {op for op, rule in RULES.items() if op != rule.name} == {"+", "-", "*", "/", "@", "**", "neg"}
    hinted = {op for op, rule in RULES.items() if rule.nonfinite_hint != Rule._field_defaults["nonfinite_hint"]}
    assert hinted == {"/", "**", "log", "log_softmax"}
    # the ops numpy can refuse for their shapes (or axes) each write their own message
    shaped = {op for op, rule in RULES.items() if rule.shape_error is not None}
    reductions = {"sum", "mean", "max", "log_softmax"}
    joins = {"where", "maximum", "minimum", "cat", "stack"}
    assert shaped == {"+", "-", "*", "/", "@", "reshape", "transpose", "broadcast_to"} | reductions | joins


def case_arrays(op, rng=None):
    case = OPS[op]
    rng = rng or np.random.default_rng(sum(map(ord, op)))
    return case, [case.data(rng, shape) for shape in case.shapes]


@pytest.mark.parametrize("op", list(OPS))
def test_op_matches_torch(op):
    case, arrays = case_arrays(op)
    check_against_torch(case.chain, case.torch, arrays, np.random.default_rng(1))


@pytest.mark.parametrize("op", [op for op, case in OPS.items() if case.kind == "binary"])
@FAST
@given(pair=pairs, seed=seeds)
@example(pair=hnp.BroadcastableShapes(((3, 4), (4,)), (3, 4)), seed=0)  # right operand broadcast
@example(pair=hnp.BroadcastableShapes(((4,), (3, 4)), (3, 4)), seed=1)  # left operand broadcast
@example(pair=hnp.BroadcastableShapes(((3, 1), (1, 4)), (3, 4)), seed=2)  # both
@example(pair=hnp.BroadcastableShapes(((), (2, 3)), (2, 3)), seed=3)  # 0-d left
@example(pair=hnp.BroadcastableShapes(((2, 3), ()), (2, 3)), seed=4)  # 0-d right
def test_binary_ops_match_torch_with_broadcasting(op, pair, seed):
    rng = np.random.default_rng(seed)
    case = OPS[op]
    check_against_torch(case.chain, case.torch, [case.data(rng, shape) for shape in pair.input_shapes], rng)


@pytest.mark.parametrize("op", [op for op, case in OPS.items() if case.kind == "unary"])
@FAST
@given(shape=shapes, seed=seeds)
def test_unary_ops_match_torch_for_any_shape(op, shape, seed):
    rng = np.random.default_rng(seed)
    case = OPS[op]
    check_against_torch(case.chain, case.torch, [case.data(rng, shape)], rng)


EXPONENTS = {0: normal, 1: normal, 2: normal, 0.5: positive, -1.5: positive, -2: away_from_zero}


@pytest.mark.parametrize("k", list(EXPONENTS))
def test_powers_match_torch(k):
    rng = np.random.default_rng(4)
    check_against_torch(lambda a: a**k, lambda a: a**k, [EXPONENTS[k](rng, (2, 3))], rng)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: a + 2.5,
        lambda a: 2.5 + a,
        lambda a: a - 3,
        lambda a: 3 - a,
        lambda a: a * -1.5,
        lambda a: -1.5 * a,
        lambda a: a / 4.0,
        lambda a: 4.0 / a,
    ],
    ids=["add", "radd", "sub", "rsub", "mul", "rmul", "div", "rdiv"],
)
def test_python_numbers_on_either_side(fn):
    rng = np.random.default_rng(5)
    check_against_torch(fn, fn, [away_from_zero(rng, (2, 3))], rng)


def test_numpy_array_operand_on_either_side_is_a_constant():
    rng = np.random.default_rng(6)
    constant = normal(rng, (3,))
    x = Tensor(normal(rng, (2, 3)), requires_grad=True)
    out = (constant * x - x * constant).sum() + (constant @ x.T).sum()  # arrays on the left too
    assert isinstance(out, Tensor)
    out.backward()
    expected = torch.tensor(x.data, requires_grad=True)
    (torch.tensor(constant) @ expected.T).sum().backward()
    np.testing.assert_allclose(x.grad, expected.grad.numpy(), rtol=1e-12)


def test_sigmoid_is_stable_for_large_inputs():
    x = Tensor(np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0]), requires_grad=True)
    y = x.sigmoid()
    np.testing.assert_allclose(y.data, torch.tensor(x.data).sigmoid().numpy(), rtol=1e-12, atol=1e-300)
    y.sum().backward()
    assert np.all(np.isfinite(x.grad))


def test_relu_at_its_kink_and_at_nan_passes_gradients_as_torch_does():
    values = np.array([np.nan, 2.0, 0.0, -0.0, -3.0])
    x = Tensor(values, requires_grad=True)
    x.relu().backward(np.arange(1.0, 6.0))
    expected = torch.tensor(values, requires_grad=True)
    expected.relu().backward(torch.arange(1.0, 6.0, dtype=torch.float64))
    np.testing.assert_array_equal(x.grad, expected.grad.numpy())  # [1, 2, 0, 0, 0]


@st.composite
def shape_and_axis(draw):
    """A shape and an axis argument valid for it: None, an int (maybe negative) or a tuple."""
    shape = draw(shapes)
    ndim = len(shape)
    if ndim == 0:
        return shape, None
    axes = st.integers(-ndim, ndim - 1)
    choice = draw(st.sampled_from(["none", "int", "tuple"]))
    if choice == "none":
        return shape, None
    if choice == "int":
        return shape, draw(axes)
    picked = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return shape, tuple(ax - ndim if draw(st.booleans()) else ax for ax in picked)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@FAST
@given(case=shape_and_axis(), keepdims=st.booleans(), seed=seeds)
def test_reductions_match_torch(reduction, case, keepdims, seed):
    shape, axis = case
    rng = np.random.default_rng(seed)

    def chain_fn(a):
        return getattr(a, reduction)(axis=axis, keepdims=keepdims)

    def torch_fn(a):
        if axis is None:
            out = getattr(a, reduction)()
            return out.reshape((1,) * a.ndim) if keepdims else out
        return getattr(a, reduction)(dim=axis, keepdim=keepdims)

    check_against_torch(chain_fn, torch_fn, [normal(rng, shape)], rng)


@FAST
@given(shape=shapes, seed=seeds, data=st.data())
def test_reshape_matches_torch(shape, seed, data):
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    target = data.draw(
        st.sampled_from(
            [(size,), (-1,), (1, size), (size, 1, 1), ()]
            if size == 1
            else [(size,), (-1,), (1, size), (size, 1, 1), (-1, 1)]
        )
    )
    check_against_torch(lambda a: a.reshape(target), lambda a: a.reshape(target), [normal(rng, shape)], rng)
    check_against_torch(lambda a: a.reshape(*target), lambda a: a.reshape(target), [normal(rng, shape)], rng)


@FAST
@given(shape=shapes, seed=seeds, data=st.data())
def test_transpose_matches_torch(shape, seed, data):
    rng = np.random.default_rng(seed)
    axes = tuple(data.draw(st.permutations(range(len(shape)))))
    signed = tuple(ax - len(shape) if ax % 2 else ax for ax in axes)  # some negative axes
    check_against_torch(lambda a: a.transpose(*signed), lambda a: a.permute(axes), [normal(rng, shape)], rng)
    reverse = tuple(reversed(range(len(shape))))
    check_against_torch(lambda a: a.T, lambda a: a.permute(reverse), [normal(rng, shape)], rng)
    check_against_torch(lambda a: a.transpose(), lambda a: a.permute(reverse), [normal(rng, shape)], rng)


@FAST
@given(pair=pairs, seed=seeds)
def test_broadcast_to_matches_torch(pair, seed):
    rng = np.random.default_rng(seed)
    shape, target = pair.input_shapes[0], pair.result_shape
    check_against_torch(lambda a: a.broadcast_to(target), lambda a: a.broadcast_to(target), [normal(rng, shape)], rng)


MATMUL_SHAPES = [
    ((3, 4), (4, 2)),  # matrix @ matrix
    ((4,), (4, 2)),  # vector @ matrix: a row
    ((3, 4), (4,)),  # matrix @ vector: a column
    ((4,), (4,)),  # dot product, 0-d result
    ((1, 1), (1, 1)),
    ((5, 3, 4), (4, 2)),  # batched left, right broadcast over the batch
    ((3, 4), (5, 4, 2)),  # batched right, left broadcast
    ((4,), (5, 4, 2)),  # vector @ batch
    ((5, 3, 4), (4,)),  # batch @ vector
    ((2, 1, 3, 4), (5, 4, 2)),  # batch dims broadcast both ways
]


@pytest.mark.parametrize("left_shape, right_shape", MATMUL_SHAPES)
def test_matmul_matches_torch_including_1d_and_batched(left_shape, right_shape):
    rng = np.random.default_rng(len(left_shape) * 10 + len(right_shape))
    fn = lambda a, b: a @ b  # noqa: E731
    check_against_torch(fn, fn, [normal(rng, left_shape), normal(rng, right_shape)], rng)


@FAST
@given(m=st.integers(1, 4), k=st.integers(1, 4), n=st.integers(1, 4), seed=seeds)
def test_matmul_random_sizes_match_torch(m, k, n, seed):
    rng = np.random.default_rng(seed)
    fn = lambda a, b: a @ b  # noqa: E731
    check_against_torch(fn, fn, [normal(rng, (m, k)), normal(rng, (k, n))], rng)


def test_a_two_layer_network_matches_torch():
    rng = np.random.default_rng(7)

    def network(x, w1, b1, w2, b2):
        hidden = (x @ w1 + b1).tanh()
        return ((hidden @ w2 + b2).sigmoid() ** 2).mean() - (hidden * hidden).sum() / 7

    arrays = [normal(rng, s) for s in [(5, 3), (3, 4), (4,), (4, 2), (1, 2)]]
    check_against_torch(network, network, arrays, rng)


# --------------------------------------------------------------------------- central differences


@pytest.mark.parametrize("op", list(OPS))
def test_gradients_agree_with_central_differences(op):
    case, arrays = case_arrays(op)
    rng = np.random.default_rng(2)
    leaves = [Tensor(a, requires_grad=True, label=f"x{i}") for i, a in enumerate(arrays)]
    upstream = Tensor(normal(rng, case.chain(*leaves).shape))
    assert_gradients_close(lambda *xs: (case.chain(*xs) * upstream).sum(), leaves)


def test_gradcheck_catches_a_wrong_rule(monkeypatch):
    """The central-difference witness can fail: break tanh's rule and it objects."""
    wrong = RULES["tanh"]._replace(vjp=lambda g, node, saved: (g * 2,))
    monkeypatch.setitem(RULES, "tanh", wrong)
    x = Tensor(np.array([0.3, -0.7]), requires_grad=True, label="x")
    with pytest.raises(AssertionError, match="gradient check failed for input 'x"):
        assert_gradients_close(lambda a: a.tanh().sum(), [x])


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", list(OPS))
def test_dtype_is_kept_in_forward_and_backward(op, dtype):
    case, arrays = case_arrays(op)
    leaves = [Tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    out = case.chain(*leaves)
    assert out.dtype == dtype
    out.sum().backward()
    assert all(leaf.grad.dtype == dtype for leaf in leaves)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_python_numbers_keep_the_dtype(dtype):
    a = Tensor(np.array([0.5, -1.5], dtype=dtype), requires_grad=True)
    out = 2 * a - 1.5 / (a * a + 1) + 3 - a / 2 + a**2
    assert out.dtype == dtype
    out.sum().backward()
    assert a.grad.dtype == dtype


@pytest.mark.parametrize("op", [op for op, case in OPS.items() if case.second_order])
def test_second_order_matches_torch(op):
    """The gradient, recorded with create_graph, differentiated once more (a Hessian-vector product)."""
    case, arrays = case_arrays(op)
    rng = np.random.default_rng(3)
    leaves = [Tensor(a, requires_grad=True) for a in arrays]
    references = [torch.tensor(a, requires_grad=True) for a in arrays]
    upstream = normal(rng, case.chain(*leaves).shape)
    first = grad((case.chain(*leaves) * upstream).sum(), leaves, create_graph=True)
    torch_first = torch.autograd.grad(
        (case.torch(*references) * torch.tensor(upstream)).sum(), references, create_graph=True
    )
    directions = [normal(rng, a.shape) for a in arrays]
    total = sum(((g * v).sum() for g, v in zip(first, directions, strict=True)), Tensor(0.0))
    torch_total = sum((g * torch.tensor(v)).sum() for g, v in zip(torch_first, directions, strict=True))
    # A gradient that does not depend on the inputs (add, mean, relu away from its kink,
    # ...) has no graph in chainrule; torch may still record one, whose derivative is 0.
    second = grad(total, leaves) if total.requires_grad else [Tensor(np.zeros_like(a)) for a in arrays]
    torch_second = (
        torch.autograd.grad(torch_total, references, allow_unused=True)
        if torch_total.requires_grad
        else [None] * len(references)
    )
    for ours, theirs in zip(second, torch_second, strict=True):
        expected = (
            np.zeros_like(ours.data) if theirs is None else theirs.numpy(force=True)
        )  # force: a ZeroTensor (abs) too
        np.testing.assert_allclose(ours.data, expected, rtol=1e-9, atol=1e-12)


def test_mixed_precision_promotes_like_numpy_and_grads_keep_the_leaf_dtype():
    small = Tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    large = Tensor(np.array([3.0, 4.0]), requires_grad=True)
    out = small * large
    assert out.dtype == np.float64
    out.sum().backward()
    assert small.grad.dtype == np.float32 and large.grad.dtype == np.float64
    np.testing.assert_array_equal(small.grad, [3.0, 4.0])


def test_python_numbers_and_lists_become_float64_and_arrays_are_not_copied():
    assert Tensor(3).dtype == np.float64
    assert Tensor([1, 2]).dtype == np.float64
    assert Tensor([[1.5], [2.0]]).shape == (2, 1)
    array = np.ones(3, dtype=np.float32)
    t = Tensor(array)
    assert t.dtype == np.float32 and t.data is array


def test_float32_gradients_are_close_to_float64():
    rng = np.random.default_rng(9)
    w = normal(rng, (4, 3))
    results = []
    for dtype in (np.float32, np.float64):
        x = Tensor(w.astype(dtype), requires_grad=True)
        ((x @ x.T).tanh().sum() * 0.5).backward()
        results.append(x.grad)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- backward semantics


def test_leaf_gradients_accumulate_across_backward_calls():
    x = Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, 2 * x.data)
    (x * x).sum().backward()  # a fresh graph: adds, does not overwrite
    np.testing.assert_array_equal(x.grad, 4 * x.data)
    clear_grads(x)
    assert x.grad is None
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, 2 * x.data)


def test_accumulation_matches_torch():
    data = np.array([[0.5, -1.0], [2.0, 0.25]])
    x = Tensor(data, requires_grad=True)
    reference = torch.tensor(data, requires_grad=True)
    for leaf in (x, reference):  # the same two backward calls in both libraries
        (leaf**2).sum().backward()
        (leaf**3).sum().backward()
    np.testing.assert_allclose(x.grad, reference.grad.numpy(), rtol=1e-12)


def test_interior_nodes_keep_no_grad_unless_retain_grad():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    hidden = x * 3
    kept = hidden.tanh()
    kept.retain_grad()
    kept.sum().backward()
    assert hidden.grad is None
    np.testing.assert_array_equal(kept.grad, np.ones(2))
    reference = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (reference * 3).tanh().sum().backward()
    np.testing.assert_allclose(x.grad, reference.grad.numpy(), rtol=1e-12)


def test_backward_with_a_gradient_matches_torch():
    rng = np.random.default_rng(10)
    data, upstream = normal(rng, (2, 3)), normal(rng, (2, 3))
    x = Tensor(data, requires_grad=True)
    (x.exp() * 2).backward(gradient=upstream)
    reference = torch.tensor(data, requires_grad=True)
    (reference.exp() * 2).backward(gradient=torch.tensor(upstream))
    np.testing.assert_allclose(x.grad, reference.grad.numpy(), rtol=1e-12)


def test_one_element_outputs_need_no_gradient():
    x = Tensor(np.array([[2.0]]), requires_grad=True)
    (x * x).backward()  # shape (1, 1), like torch
    np.testing.assert_array_equal(x.grad, [[4.0]])


def test_backward_on_a_leaf_gives_ones():
    x = Tensor(5.0, requires_grad=True)
    x.backward()
    assert x.grad == 1.0 and x.grad.shape == ()


def test_retain_graph_allows_a_second_backward():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    loss = (x * x * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad, 2 * 3 * x.data**2)


def _changed_in_place(make, change):
    """The error backward raises after ``change`` on what ``make`` built (None: no error), and the gradient."""
    leaf, loss, kept = make()
    change(kept)
    try:
        loss.backward()
    except RuntimeError as error:
        return str(error), None
    return None, leaf.grad.tolist()


def test_a_saved_tensor_changed_in_place_stops_backward_as_in_pytorch():
    """W * x saves x, sigmoid saves its output, a detached copy shares the version: each change to a
    saved tensor fails backward in both engines, with an error that names the op and the slot; a
    change to what no rule saved, or a new array after backward, does not."""
    W0, x0 = np.array([1.0, 2.0]), np.array([3.0, 4.0])

    def ours_product():
        W, x = Tensor(W0.copy(), requires_grad=True), Tensor(x0.copy(), label="x")
        return W, (W * x).sum(), x

    def torch_product():
        W, x = torch.tensor(W0, requires_grad=True), torch.tensor(x0)
        return W, (W * x).sum(), x

    def ours_sigmoid():
        x = Tensor(x0.copy(), requires_grad=True)
        y = x.sigmoid()
        return x, y.sum(), y

    def torch_sigmoid():
        x = torch.tensor(x0, requires_grad=True)
        y = torch.sigmoid(x)
        return x, y.sum(), y

    def ours_add(t):
        t.data += 100

    def torch_add(t):
        with torch.no_grad():
            t += 100

    cases = [
        (ours_product, torch_product, ours_add, torch_add, "the tensor it saved as its input 1 ('x')"),
        (ours_sigmoid, torch_sigmoid, ours_add, torch_add, "the tensor it saved as its output"),
        (ours_product, torch_product, lambda t: ours_add(t.detach()), lambda t: torch_add(t.detach()), "input 1"),
    ]
    for ours, theirs, change, their_change, named in cases:
        said, _ = _changed_in_place(ours, change)
        told, _ = _changed_in_place(theirs, their_change)
        assert "modified by an inplace operation" in told, told
        assert said is not None and named in said and "changed in place after it was saved" in said, said
    # What no rule saved may change: W's own numbers are not read by W * x's gradient for W.
    said, grads = _changed_in_place(ours_product, lambda x: None)
    assert said is None and grads == x0.tolist()
    W, loss, x = ours_product()
    W.data += 100  # W is not saved (only x is, for W's gradient)
    loss.backward()
    assert W.grad.tolist() == x0.tolist()
    # After backward the graph is gone: an optimizer's update in place is fine, and the next pass sees it.
    W.data -= 0.5 * W.grad
    (W * x).sum().backward()
    assert W.version == 2 and W.grad.tolist() == (2 * x0).tolist()


def test_a_view_shares_its_version_counter_so_an_optimizer_step_between_two_passes_is_caught():
    """A linear layer saves W.T; SGD's step changes W in place. Both engines refuse the second
    backward pass of the retained graph, for a transpose, a reshape and a broadcast, and for a change
    through the view; a result with memory of its own (W * 1) keeps a counter of its own."""
    W0, x0 = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[0.5, -0.2]])
    views = {
        "transpose": (lambda W: W.T, lambda W: W.T),
        "reshape": (lambda W: W.reshape(2, 2), lambda W: W.reshape(2, 2)),
        "broadcast_to": (lambda W: W.broadcast_to(2, 2), lambda W: W.broadcast_to(2, 2)),
    }
    for name, (ours_view, torch_view) in views.items():
        W, x = Tensor(W0.copy(), requires_grad=True), Tensor(x0, requires_grad=True)
        loss = (x @ ours_view(W)).tanh().sum()
        loss.backward(retain_graph=True)
        SGD([W], lr=0.1).step()
        with pytest.raises(RuntimeError, match="through a Tensor sharing its memory as W and W.T do"):
            loss.backward()
        tW = torch.tensor(W0, requires_grad=True)
        tloss = (torch.tensor(x0, requires_grad=True) @ torch_view(tW)).tanh().sum()
        tloss.backward(retain_graph=True)
        torch.optim.SGD([tW], lr=0.1).step()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            tloss.backward()
        assert W.version == ours_view(W).version == 1, name
    # A change through the view reaches a graph that saved W itself.
    W = Tensor(W0.copy(), requires_grad=True)
    loss = (W * W).sum()
    view = W.T
    view.data *= 2
    with pytest.raises(RuntimeError, match="changed in place after it was saved"):
        loss.backward()
    # New memory is no change in place: a view of the old array keeps its numbers and its counter, as in
    # PyTorch, where assigning .data counts nothing at all.
    W, x = Tensor(W0.copy(), requires_grad=True), Tensor(x0, requires_grad=True)
    loss = (x @ W.T).tanh().sum()
    loss.backward(retain_graph=True)
    first = x.grad.copy()
    W.data = W.data - 0.1 * W.grad
    loss.backward()
    assert np.allclose(x.grad, 2 * first) and W.version == 1
    W = Tensor(W0.copy(), requires_grad=True)
    loss, view = (W * W).sum(), W.T
    view.data = np.zeros((2, 2))
    loss.backward()
    assert np.array_equal(W.grad, 2 * W0) and (W.version, view.version) == (0, 1)
    # A computed result owns its memory: changing W leaves its counter, and its graph, alone.
    W = Tensor(W0.copy(), requires_grad=True)
    copy = W * 1.0
    loss = (copy * copy).sum()
    W.data += 1
    assert copy.version == 0
    loss.backward()
    assert np.array_equal(W.grad, 2 * W0)


def test_in_place_arithmetic_refuses_a_leaf_while_recording_and_changes_numbers_under_no_grad():
    """`W -= lr * W.grad` outside no_grad used to rebind W to a new Tensor, so the optimizer kept the old
    leaf and the next step failed far away. Now it refuses at once, as PyTorch does, and shows the no_grad
    form; under no_grad the same line changes W in place, counted by its version, as in PyTorch."""
    W0 = np.array([1.0, 2.0])
    W, tW = Tensor(W0.copy(), requires_grad=True, label="W"), torch.tensor(W0, requires_grad=True)
    (W * W).sum().backward()
    (tW * tW).sum().backward()
    with pytest.raises(RuntimeError, match=r"-=: 'W' is a leaf that requires grad.*with no_grad\(\): W -="):
        W -= 0.1 * W.grad
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        tW -= 0.1 * tW.grad
    optimizer_holds = W
    with no_grad():
        W -= 0.1 * W.grad
    with torch.no_grad():
        tW -= 0.1 * tW.grad
    assert W is optimizer_holds and W.version == 1 and np.allclose(W.data, tW.detach().numpy())
    # A constant given a recorded operand is computed out of place too, so the graph keeps the operand.
    h, v = Tensor(np.ones(2)), Tensor(np.array([3.0, 4.0]), requires_grad=True)
    W.grad = None
    h += W * 2.0
    (h * v).sum().backward()
    assert np.array_equal(W.grad, [6.0, 8.0]) and h.grad_fn is not None
    # A recorded result is computed out of place; a constant changes in place; the shape must fit.
    y = W * 2
    y_before = y
    y += 1
    assert y is not y_before and y.grad_fn is not None
    c = Tensor(np.ones(2))
    c *= 3
    assert c.data.tolist() == [3.0, 3.0] and c.version == 1
    with pytest.raises(ValueError, match=r"\+=: cannot change a Tensor of shape \(2,\) in place: .* \(3, 2\)"):
        c += np.ones((3, 2))
    with pytest.raises(ZeroDivisionError, match="divide"):  # the operator's own checks, as out of place
        c /= 0.0
    assert c.data.tolist() == [3.0, 3.0] and c.version == 1


def test_a_leaf_given_data_of_another_shape_after_forward_refuses_backward_naming_both_shapes():
    """Before, W.grad came back in the old shape, beside data of the new one; torch raises too."""
    W, tW = Tensor(np.ones((2, 3)), requires_grad=True, label="W"), torch.ones(2, 3, requires_grad=True)
    loss, tloss = (W * 2.0).sum(), (tW * 2.0).sum()
    W.data, tW.data = np.ones((3, 2)), torch.ones(3, 2)
    with pytest.raises(RuntimeError, match=r"gradient of 'W' has .* forward pass, \(2, 3\), .* now has shape \(3, 2\)"):
        loss.backward()
    with pytest.raises(RuntimeError):
        tloss.backward()
    assert W.grad is None


def test_saved_tensors_follow_the_rule_table_and_are_freed_after_backward():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    w = Tensor(np.array([0.5, -1.0]), requires_grad=True)
    product = x * w
    squashed = product.tanh()
    total = squashed + x
    loss = total.sum()
    p, q, t, l = product.grad_fn, squashed.grad_fn, total.grad_fn, loss.grad_fn
    assert p.saved == (x, w, None) and RULES["*"].reads == (("B",), ("A",))
    # tanh's rule reads its own output: the node saves the output's array, never the output Tensor
    no_input, kept = q.saved
    assert RULES["tanh"].reads == (("C",),) and no_input is None
    assert kept is not squashed and kept.data is squashed.data
    assert kept.grad_fn is None and q.output() is squashed
    assert t.saved == () and l.saved == ()
    ax, aw = p.next_functions  # the leaves' AccumulateGrad vertices, one per leaf, shared by the nodes
    assert (p.op, q.next_functions, t.next_functions) == ("*", (p,), (q, ax))
    assert (ax.variable, aw.variable, ax.parents, ax.is_leaf, p.is_leaf) == (x, w, (), True, False)
    assert vertex_of(x) is ax and vertex_of(product) is p
    assert (x**3).grad_fn.args == (3,) and x.sum(axis=0).grad_fn.args == (0, False)
    assert x.reshape(2, 1).grad_fn.args == ((2, 1),) and (x**3).grad_fn.name == "**3"
    assert t.input_shapes == ((2,), (2,)) and (t.shape, t.dtype) == ((2,), np.float64)
    loss.backward()
    assert p.saved is None and q.saved is None
    assert t.saved == ()  # nothing was saved, nothing to free
    assert t.next_functions == (q, vertex_of(x))  # the structure stays, for drawing and messages


def test_a_dropped_graph_is_freed_by_reference_counting_alone():
    import gc
    import weakref

    from chainrule.functional import log_softmax

    w = Tensor(np.random.default_rng(0).normal(size=(4, 4)), requires_grad=True)
    gc.disable()
    try:
        for op in ("relu", "tanh", "sigmoid", "exp"):
            hidden = getattr(Tensor(np.ones((3, 4))) @ w, op)()
            out = log_softmax(hidden, axis=1).sum()
            interior = [weakref.ref(hidden), weakref.ref(out)]
            del hidden, out
            assert [ref() for ref in interior] == [None, None], op
        x = Tensor(np.ones((3, 4)))
        loss = (x @ w).tanh().sum()
        loss.backward()
        ref = weakref.ref(loss)
        del loss
        assert ref() is None
    finally:
        gc.enable()


def test_an_array_no_rule_saved_is_freed_at_once_and_backward_frees_the_rest():
    """The node keeps only what its rule saves: z dies with its Tensor, h and o live until backward."""
    import gc
    import weakref

    rng = np.random.default_rng(1)
    X = Tensor(rng.normal(size=(6, 4)))
    W1 = Tensor(rng.normal(size=(4, 5)), requires_grad=True)
    W2 = Tensor(rng.normal(size=(5, 3)), requires_grad=True)
    gc.disable()
    try:
        z = X @ W1  # matmul keeps X (dW1 reads it), not W1 (X needs no gradient) nor its output
        h = z.relu()  # relu saves its output's array, not z
        o = h @ W2  # saves h and W2
        loss = (o * o).mean()  # saves o (twice, one array)
        arrays = {name: weakref.ref(t.data) for name, t in zip("zho", (z, h, o), strict=True)}
        del z, h, o
        assert arrays["z"]() is None
        assert arrays["h"]() is not None and arrays["o"]() is not None
        loss.backward()
        assert [name for name, ref in arrays.items() if ref() is not None] == []
        assert W1.grad.shape == (4, 5) and W2.grad.shape == (5, 3) and loss.item() > 0
    finally:
        gc.enable()


# Z = X @ W is an activation (X data, W a parameter). Each expression below is the next op;
# only dZ is computed after it. Where dZ does not read Z, Z must be freed with its Tensor.
FREES_Z = {
    "Z * 0.5": lambda Z, C: Z * 0.5,
    "0.5 * Z": lambda Z, C: 0.5 * Z,
    "Z / 4.0": lambda Z, C: Z / 4.0,
    "Z * C": lambda Z, C: Z * C,  # C a constant Tensor
    "Z + 1.0": lambda Z, C: Z + 1.0,
    "Z.sum()": lambda Z, C: Z.sum(),
    "Z.mean()": lambda Z, C: Z.mean(),
    "Z.tanh()": lambda Z, C: Z.tanh(),  # dZ reads tanh's output, not Z
    "Z.exp()": lambda Z, C: Z.exp(),
}
KEEPS_Z = {"Z ** 2": lambda Z, C: Z**2, "Z * Z": lambda Z, C: Z * Z}


@pytest.mark.parametrize("expression", list(FREES_Z) + list(KEEPS_Z))
def test_an_activation_is_kept_only_when_a_gradient_reads_it(expression):
    import tracemalloc
    import weakref

    fn = FREES_Z.get(expression) or KEEPS_Z[expression]
    rng = np.random.default_rng(5)
    x, w, c = rng.normal(size=(300, 20)), rng.normal(size=(20, 400)), rng.normal(size=(300, 400))
    X, W, C = Tensor(x), Tensor(w, requires_grad=True), Tensor(c)
    gc.disable()
    tracemalloc.start()
    try:
        Z = X @ W
        z_array = weakref.ref(Z.data)
        loss = fn(Z, C).sum()
        del Z
        alive = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        gc.enable()
    assert (z_array() is None) == (expression in FREES_Z), "Z kept although no gradient reads it"
    # what cost counts as kept activations is what is alive: Z, tanh's or exp's output, or nothing
    activations = saved_bytes_by_kind(loss)["activations"]
    assert abs(alive - activations) < 16 * 1024, (alive, activations)
    loss.backward()
    tw = torch.tensor(w, requires_grad=True)
    fn(torch.tensor(x) @ tw, torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(W.grad, tw.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("op", [op for op, case in OPS.items() if len(case.shapes) == 2])
@pytest.mark.parametrize("needed", [0, 1])
def test_a_rule_reads_only_what_its_node_kept(op, needed):
    """With one input needing a gradient, the node keeps only what that gradient reads (the
    other slots are None, which a rule reading them would fail on), and it matches torch."""
    case, arrays = case_arrays(op)
    leaves = [Tensor(a.copy(), requires_grad=i == needed) for i, a in enumerate(arrays)]
    references = [torch.tensor(a, requires_grad=i == needed) for i, a in enumerate(arrays)]
    out, expected = case.chain(*leaves), case.torch(*references)
    node = out.grad_fn if out.grad_fn.op == op else out.grad_fn.next_functions[0]
    assert node.op == op
    kept = RULES[op].kept(node.needs_input_grad)
    assert tuple(slot is not None for slot in node.saved or (None,) * len(kept)) == kept
    upstream = normal(np.random.default_rng(2), out.shape)
    out.backward(gradient=upstream)
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(leaves[needed].grad, references[needed].grad.numpy(), rtol=1e-10, atol=1e-12)
    assert leaves[1 - needed].grad is None


def test_after_backward_only_leaves_their_grads_and_the_loss_hold_memory():
    """tracemalloc, with the cyclic collector off: what a live loss holds after backward."""
    import gc
    import tracemalloc

    rng = np.random.default_rng(2)
    sizes, batch = [64, 256, 256, 256, 10], 512
    weights = [Tensor(rng.normal(size=(m, n)) / m**0.5, requires_grad=True) for m, n in pairwise(sizes)]
    X = Tensor(rng.normal(size=(batch, sizes[0])))
    gc.disable()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        h = X
        for w in weights[:-1]:
            h = (h @ w).tanh()
        loss = log_softmax(h @ weights[-1], axis=1).mean()
        del h
        kept = tracemalloc.get_traced_memory()[0] - before
        loss.backward()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
    grads = sum(w.grad.nbytes for w in weights)
    activations = 3 * batch * 256 * 8  # the tanh outputs, which matmul and tanh share
    assert kept > activations  # before backward the activations are held
    assert held - grads < 64 * 1024, (held, grads)  # after it, a few small objects beyond the gradients


def test_every_op_in_the_table_has_a_documented_rule():
    for op, rule in RULES.items():
        names = {"A", "B", "C"} if rule.reads not in (EVERY_INPUT, NO_INPUT) and len(rule.reads) == 2 else {"A", "C"}
        assert rule.reads in (EVERY_INPUT, NO_INPUT) or all(set(reads) <= names for reads in rule.reads), op
        assert rule.vjp.__doc__ and "dA =" in rule.vjp.__doc__, op


def test_leaf_grads_are_not_aliased():
    a = Tensor(np.zeros(3), requires_grad=True)
    b = Tensor(np.zeros(3), requires_grad=True)
    upstream = np.array([1.0, 2.0, 3.0])
    (a + b).backward(gradient=upstream)
    assert a.grad is not b.grad and not np.shares_memory(a.grad, b.grad)
    assert not np.shares_memory(a.grad, upstream)
    a.grad *= 10  # the caller may modify .grad in place
    np.testing.assert_array_equal(b.grad, upstream)
    np.testing.assert_array_equal(upstream, [1.0, 2.0, 3.0])
    c = Tensor(np.ones((2, 3)), requires_grad=True)
    c.sum().backward()  # the rule returns a read-only broadcast view
    c.grad += 1
    np.testing.assert_array_equal(c.grad, 2 * np.ones((2, 3)))


def test_a_deep_chain_does_not_recurse():
    x = Tensor(np.array([0.5]), requires_grad=True)
    y = x
    for _ in range(3 * sys.getrecursionlimit()):
        y = y * 1.0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, [1.0])


def test_backward_visits_nodes_in_topological_order(monkeypatch):
    """backward uses chainrule.graph.topological_order (the order shared with Value)."""
    import chainrule.backward as backward_module

    calls = []

    def spy(root, *args, **kwargs):
        order = topological_order(root, *args, **kwargs)
        calls.append(order)
        return order

    monkeypatch.setattr(backward_module, "topological_order", spy)
    x = Tensor(np.array([1.0]), requires_grad=True)
    loss = (x.exp() * x).sum()
    loss.backward()
    assert len(calls) == 1 and calls[0][-1] is loss.grad_fn and calls[0][0].variable is x


def test_diamond_graph_adds_both_paths():
    x = Tensor(np.array([0.3, -0.2]), requires_grad=True)
    y = x.tanh()
    loss = (y * y.exp() + y).sum()
    loss.backward()
    reference = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    r = reference.tanh()
    (r * r.exp() + r).sum().backward()
    np.testing.assert_allclose(x.grad, reference.grad.numpy(), rtol=1e-12)


# --------------------------------------------------------------------------- recording on and off


def test_requires_grad_propagates_and_constants_record_nothing():
    x = Tensor(np.ones(2), requires_grad=True)
    c = Tensor(np.ones(2))
    assert (x * c).requires_grad and (x * c).grad_fn.op == "*"
    assert (x * c).grad_fn.next_functions == (vertex_of(x), None) and (x * c).grad_fn.needs_input_grad == (True, False)
    constant = c * 2 + c
    assert not constant.requires_grad
    assert constant.grad_fn is None and constant.is_leaf


def test_no_grad_records_nothing_and_restores_the_mode():
    x = Tensor(np.ones(2), requires_grad=True)
    assert is_grad_enabled()
    with no_grad():
        y = (x * 2).tanh()
        with no_grad():
            pass
        assert not is_grad_enabled()
    assert is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    with set_grad_enabled(False):
        assert not (x * 2).requires_grad
        with set_grad_enabled(True):
            assert (x * 2).requires_grad
    with pytest.raises(ZeroDivisionError):
        with no_grad():
            1 / 0
    assert is_grad_enabled()


def test_no_grad_in_one_thread_leaves_another_recording():
    """Grad mode belongs to a thread, as in PyTorch: tools/grader/assignments.py runs checks in threads."""
    import threading

    inside, done = threading.Event(), threading.Event()

    def without_grad():
        with no_grad():
            inside.set()
            done.wait(10)

    other = threading.Thread(target=without_grad)
    other.start()
    try:
        assert inside.wait(10)
        x = Tensor(np.ones(2), requires_grad=True)
        assert is_grad_enabled() and (x * 2).requires_grad
    finally:
        done.set()
        other.join()


def test_an_op_count_in_one_thread_sees_none_of_another_threads_ops():
    """Observers belong to a thread too: count_flops (and checkpoint) rely on them."""
    import threading

    from chainrule.cost import count_flops

    counting, done = threading.Event(), threading.Event()
    counted = {}

    def count():
        with count_flops() as counter:
            counting.set()
            done.wait(10)
            (Tensor(np.ones((2, 2))) @ Tensor(np.ones((2, 2)))).sum()
        counted.update({op: calls for (op, _), (calls, _) in counter.counts.items()})

    other = threading.Thread(target=count)
    other.start()
    try:
        assert counting.wait(10)
        for _ in range(3):  # this thread's work, while the other thread counts
            Tensor(np.ones(4)) * 2
    finally:
        done.set()
        other.join()
    assert counted == {"@": 1, "sum": 1}, counted


def test_detach_shares_data_but_cuts_the_graph():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x * 3
    d = y.detach()
    assert d.data is y.data and not d.requires_grad and d.grad_fn is None
    loss = (d * x).sum()
    loss.backward()
    np.testing.assert_array_equal(x.grad, y.data)  # no path through d


def test_clear_grads_clears_exactly_the_tensors_given():
    w = Tensor(np.ones(2), requires_grad=True)
    b = Tensor(np.ones(2), requires_grad=True)
    assert not hasattr(w, "zero_grad")  # a graph does not keep its Tensors, so there is no "clear upstream"
    (w * b).sum().backward()
    clear_grads([w, b])
    assert w.grad is None and b.grad is None
    hidden = w * 2
    hidden.retain_grad()
    (hidden * b).sum().backward()
    clear_grads(hidden)  # a single Tensor is a list of one: only it, not its graph
    assert hidden.grad is None and w.grad is not None and b.grad is not None
    with pytest.raises(TypeError, match="clear_grads: expected Tensors, got ndarray"):
        clear_grads([w.grad])


def test_attributes_and_repr():
    x = Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True, label="x")
    assert (x.shape, x.ndim, x.size, x.dtype, x.T.shape) == ((2, 3), 2, 6, np.float64, (3, 2))
    assert x.grad_fn is None and x.is_leaf and x.grad is None
    assert repr(x) == "Tensor([[0., 1., 2.],\n        [3., 4., 5.]], label='x', requires_grad=True)"
    y = Tensor(np.float32(2.5))
    assert repr(y) == "Tensor(2.5, dtype=float32)"
    assert repr((x * 2).sum()) == "Tensor(30., grad_fn='sum')"
    assert repr((x * 2).sum().grad_fn) == "<Node sum ()>"
    assert (x.sum()).item() == 15.0


def test_unbroadcast_sums_over_broadcast_axes():
    g = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(unbroadcast(g, (4,)), g.sum(axis=(0, 1)))
    np.testing.assert_array_equal(unbroadcast(g, (3, 1)), g.sum(axis=(0, 2)).reshape(3, 1))
    np.testing.assert_array_equal(unbroadcast(g, ()), g.sum())
    np.testing.assert_array_equal(unbroadcast(g, (2, 3, 4)), g)
    t = unbroadcast(Tensor(g), (1, 3, 1))
    assert isinstance(t, Tensor) and t.shape == (1, 3, 1)


# --------------------------------------------------------------------------- second order


def hvp_function(lib):
    """f(x) = Σ tanh(x @ W)² + Σ x³ + Σ sigmoid(x)·exp(x/4) / (1 + x²), written once for three libraries."""

    def f(x, w):
        if lib == "jax":
            import jax.numpy as jnp

            sigmoid = lambda v: 1 / (1 + jnp.exp(-v))  # noqa: E731
            return (jnp.tanh(x @ w) ** 2).sum() + (x**3).sum() + (sigmoid(x) * jnp.exp(x / 4) / (1 + x * x)).sum()
        return ((x @ w).tanh() ** 2).sum() + (x**3).sum() + (x.sigmoid() * (x / 4).exp() / (1 + x * x)).sum()

    return f


def test_hessian_vector_product_matches_torch_and_jax():
    import jax

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(11)
    x0, w0, v = normal(rng, (4,)), normal(rng, (4, 3)), normal(rng, (4,))

    x = Tensor(x0, requires_grad=True)
    f = hvp_function("chain")
    (g,) = grad(f(x, Tensor(w0)), x, create_graph=True)
    assert g.requires_grad  # the gradient has a graph of its own
    (hv,) = grad((g * v).sum(), x)

    wt = torch.tensor(w0)
    _, torch_hv = torch.autograd.functional.hvp(lambda t: f(t, wt), torch.tensor(x0), torch.tensor(v))
    np.testing.assert_allclose(hv.data, torch_hv.numpy(), rtol=1e-10, atol=1e-12)

    fj = hvp_function("jax")
    _, jax_hv = jax.jvp(jax.grad(lambda t: fj(t, w0)), (x0,), (v,))
    np.testing.assert_allclose(hv.data, np.asarray(jax_hv), rtol=1e-10, atol=1e-12)


def test_hessian_vector_product_of_an_mlp_matches_torch():
    rng = np.random.default_rng(12)
    x0, w10, w20 = normal(rng, (5, 3)), normal(rng, (3, 4)), normal(rng, (4, 2))
    v1, v2 = normal(rng, (3, 4)), normal(rng, (4, 2))

    def loss_fn(w1, w2, x):
        return ((x @ w1).tanh() @ w2).sigmoid().mean() + (w1 * w1).sum() / 10

    w1, w2 = Tensor(w10, requires_grad=True), Tensor(w20, requires_grad=True)
    g1, g2 = grad(loss_fn(w1, w2, Tensor(x0)), [w1, w2], create_graph=True)
    hv1, hv2 = grad((g1 * v1).sum() + (g2 * v2).sum(), [w1, w2])

    xt = torch.tensor(x0)
    _, (t1, t2) = torch.autograd.functional.hvp(
        lambda a, b: loss_fn(a, b, xt), (torch.tensor(w10), torch.tensor(w20)), (torch.tensor(v1), torch.tensor(v2))
    )
    np.testing.assert_allclose(hv1.data, t1.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hv2.data, t2.numpy(), rtol=1e-9, atol=1e-12)


def test_backward_of_a_gradient_fills_leaf_grads():
    x = Tensor(np.array([1.0, -2.0]), requires_grad=True)
    (g,) = grad((x**3).sum(), x, create_graph=True)  # 3x²
    np.testing.assert_allclose(g.data, 3 * x.data**2)
    assert x.grad is None  # grad() stores nothing
    g.sum().backward()  # d/dx Σ 3x² = 6x
    np.testing.assert_allclose(x.grad, 6 * x.data)
    assert isinstance(x.grad, np.ndarray)


def test_create_graph_in_backward_makes_grad_a_differentiable_tensor():
    x = Tensor(np.array([0.5, 1.5]), requires_grad=True)
    loss = (x.tanh() * x).sum()
    loss.backward(create_graph=True)
    assert isinstance(x.grad, Tensor) and x.grad.requires_grad
    first = x.grad.data.copy()
    tx = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    (tx.tanh() * tx).sum().backward(create_graph=True)
    np.testing.assert_allclose(first, tx.grad.detach().numpy(), rtol=1e-12)
    # d/dx of sum(dloss/dx): the second derivative, through the gradient's own graph
    (second,) = grad(x.grad.sum(), x, retain_graph=True)
    (tsecond,) = torch.autograd.grad(tx.grad.sum(), tx)
    np.testing.assert_allclose(second.data, tsecond.numpy(), rtol=1e-12)
    loss.backward()  # create_graph implied retain_graph; the Tensor .grad accumulates
    assert isinstance(x.grad, Tensor)
    np.testing.assert_allclose(x.grad.data, 2 * first)
    x.grad = None
    (x.tanh() * x).sum().backward()
    assert isinstance(x.grad, np.ndarray)  # without create_graph, .grad is a plain array


def test_grad_without_create_graph_returns_constants_and_frees():
    x = Tensor(np.array([0.5, 1.5]), requires_grad=True)
    y = (x * x).sum()
    (g,) = grad(y, x)
    assert not g.requires_grad and g.grad_fn is None
    np.testing.assert_allclose(g.data, 2 * x.data)
    assert x.grad is None


def test_grad_with_several_outputs_and_interior_inputs():
    x = Tensor(np.array([0.5, 1.5]), requires_grad=True)
    h = x.exp()
    a, b = h.sum(), (h * h).sum()
    gh, gx = grad([a, b], [h, x])
    np.testing.assert_allclose(gh.data, 1 + 2 * h.data)
    np.testing.assert_allclose(gx.data, np.exp(x.data) + 2 * np.exp(2 * x.data))


def test_graphs_through_ops_that_read_their_output_are_released():
    """tanh and exp read their own output; no reference cycle keeps their graphs alive."""
    x = Tensor(np.ones(3), requires_grad=True)
    gc.collect()
    gc.disable()  # only reference counting frees objects now, never the cycle collector
    try:
        before = sum(type(o) is Tensor for o in gc.get_objects())
        for _ in range(20):
            x.tanh().exp().sum().backward()
        after = sum(type(o) is Tensor for o in gc.get_objects())
    finally:
        gc.enable()
    assert after - before < 5


def test_observe_ops_reports_forward_and_backward_ops():
    from chainrule.tensor import in_backward, observe_ops

    seen = []
    x = Tensor(np.array([0.5, -1.0]), requires_grad=True)
    with observe_ops(lambda op, inputs, args, out: seen.append((op, in_backward(), out.shape))):
        loss = (x * x).tanh().sum()
        loss.backward()
    assert seen[:3] == [("*", False, (2,)), ("tanh", False, (2,)), ("sum", False, ())]
    assert {op for op, backward, _ in seen[3:]} >= {"*"} and all(backward for _, backward, _ in seen[3:])
    count = len(seen)
    (x * 2).sum()  # outside the block: nothing more is reported
    assert len(seen) == count and not in_backward()


@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (1, False), ((0, 2), True), (-1, False)])
def test_max_splits_the_gradient_among_ties_as_torch_amax(axis, keepdims):
    """Ties (here: many, from a small set of values) share the gradient evenly, in float64 as torch."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, size=(3, 4, 2)).astype(np.float64)
    dims = axis if axis is None or isinstance(axis, tuple) else (axis,)
    check_against_torch(
        lambda t: t.max(axis=axis, keepdims=keepdims),
        lambda t: t.amax(dim=dims if dims is not None else tuple(range(3)), keepdim=keepdims),
        [a],
        rng,
    )


def test_max_of_an_empty_tensor_names_the_op_and_the_shape():
    with pytest.raises(ValueError, match=r"max: the tensor of shape \(0, 3\) is empty along axis 0"):
        Tensor(np.ones((0, 3)), requires_grad=True).max(axis=0)
    with pytest.raises(ValueError, match=r"max: axis 2 is not valid for a tensor of shape \(2, 3\)"):
        Tensor(np.ones((2, 3))).max(axis=2)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 6),
    features=st.integers(1, 4),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
    seed=st.integers(0, 2**16),
)
def test_embedding_matches_torch_and_adds_repeated_rows(rows, features, shape, seed):
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, rows, size=shape)
    table = normal(rng, (rows, features))
    check_against_torch(
        lambda t: embedding(indices, t),
        lambda t: torch.nn.functional.embedding(torch.tensor(indices), t),
        [table],
        rng,
    )


def test_embedding_refuses_what_it_cannot_look_up():
    table = Tensor(np.ones((5, 2)), requires_grad=True)
    with pytest.raises(
        IndexError, match=r"embedding: index 7 at position \(1, 0\) of indices of shape \(2, 2\) is out"
    ):
        embedding([[0, 1], [7, 2]], table)
    with pytest.raises(IndexError, match=r"index -1 .* out of range for 5 rows: indices must be in \[0, 5\)"):
        embedding([-1], table)
    with pytest.raises(TypeError, match="embedding: indices must be integers, got dtype float64"):
        embedding([0.0, 1.0], table)
    with pytest.raises(ValueError, match=r"embedding: the table must have shape \(rows, features\), got shape \(5,\)"):
        embedding([0], Tensor(np.ones(5)))


def test_dropout_keeps_the_expected_value_and_is_the_identity_in_eval():
    x = Tensor(np.ones((200, 100)), requires_grad=True)
    y = dropout(x, 0.25, rng=np.random.default_rng(1))
    assert set(np.unique(y.data)) == {0.0, 1 / 0.75}
    assert abs(y.data.mean() - 1.0) < 0.02 and abs((y.data == 0).mean() - 0.25) < 0.02
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, y.data)  # dx = G * mask, and the mask is y here
    assert dropout(x, 0.9, training=False) is x
    assert np.array_equal(dropout(x, 0.0, rng=np.random.default_rng(2)).data, x.data)
    float32 = dropout(Tensor(np.ones(3, dtype=np.float32)), 0.5, rng=np.random.default_rng(0))
    assert float32.dtype == np.float32
    for p in (1.0, -0.1, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match=r"dropout: p must be a probability in \[0, 1\)"):
            dropout(x, p)


def test_scatter_add_rows_refuses_indices_that_do_not_fit():
    g = Tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(ValueError, match=r"scatter_add: indices of shape \(3,\) do not match .* shape \(2, 3\)"):
        g.scatter_add_rows(np.array([0, 1, 1]), 4)
    with pytest.raises(IndexError, match=r"scatter_add: index 4 at position \(1,\)"):
        g.scatter_add_rows(np.array([0, 4]), 4)
    with pytest.raises(ValueError, match="take_rows: a 0-d tensor has no rows"):
        Tensor(1.0).take_rows([0])


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 2),
    channels=st.integers(1, 3),
    filters=st.integers(1, 3),
    size=st.tuples(st.integers(1, 7), st.integers(1, 7)),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    stride=st.integers(1, 3),
    padding=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_conv2d_matches_torch(batch, channels, filters, size, kernel, stride, padding, seed):
    """Values and both gradients against torch's conv2d, float64, on odd shapes, strides and padding."""
    assume(all(k <= n + 2 * padding for k, n in zip(kernel, size, strict=True)))
    rng = np.random.default_rng(seed)
    x = normal(rng, (batch, channels, *size))
    w = normal(rng, (filters, channels, *kernel))
    check_against_torch(
        lambda a, b: conv2d(a, b, stride=stride, padding=padding),
        lambda a, b: torch.nn.functional.conv2d(a, b, stride=stride, padding=padding),
        [x, w],
        rng,
    )


def test_conv2d_names_what_does_not_fit():
    x, w = Tensor(np.ones((1, 2, 4, 4))), Tensor(np.ones((3, 2, 3, 3)))
    with pytest.raises(ValueError, match=r"conv2d: x has 2 channels \(shape \(1, 2, 4, 4\)\) but w expects 1"):
        conv2d(x, Tensor(np.ones((3, 1, 3, 3))))
    with pytest.raises(ValueError, match=r"conv2d: the kernel \(3, 3\) is larger than the input \(2, 2\)"):
        conv2d(Tensor(np.ones((1, 2, 2, 2))), w)
    with pytest.raises(ValueError, match=r"conv2d: expected x of shape \(N, C, H, W\) .* got \(4, 4\)"):
        conv2d(Tensor(np.ones((4, 4))), w)
    with pytest.raises(ValueError, match=r"im2col: the kernel must be an int or a pair \(kh, kw\), got \(1, 2, 3\)"):
        x.im2col((1, 2, 3))
    assert x.im2col(np.int64(2)).shape == (1, 3, 3, 8)
    for bad in ({"stride": 0}, {"padding": -1}, {"stride": 1.5}, {"stride": (1, 2)}, {"padding": "same"}):
        with pytest.raises(ValueError, match=f"conv2d: {next(iter(bad))}"):
            conv2d(x, w, **bad if "same" not in bad.values() else {"stride": 2, **bad})
    same = conv2d(x, w, padding="same")  # stride 1, an odd square kernel: H and W kept
    np.testing.assert_array_equal(same.data, conv2d(x, w, stride=(1, 1), padding=(1, 1)).data)
    assert same.shape == (1, 3, 4, 4) and conv2d(x, w, padding="valid").shape == (1, 3, 2, 2)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 8), st.integers(1, 8)),
    kernel=st.integers(1, 4),
    stride=st.one_of(st.none(), st.integers(1, 5)),
    levels=st.sampled_from([2, 3, 1000]),
    seed=st.integers(0, 2**16),
)
@example(shape=(2, 3, 7, 7), kernel=3, stride=2, levels=2, seed=0)  # AlexNet's overlapping pooling
@example(shape=(1, 1, 5, 5), kernel=3, stride=1, levels=2, seed=1)
def test_max_pool2d_routes_like_torch_ties_included(shape, kernel, stride, levels, seed):
    """Few levels make many ties in a window: the first (row by row) gets the gradient, as in torch.

    A stride below the kernel overlaps the windows, so one entry can win several; a
    stride above it leaves entries in no window."""
    assume(kernel <= min(shape[2:]))
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels, size=shape).astype(np.float64)
    check_against_torch(
        lambda t: max_pool2d(t, kernel, stride=stride),
        lambda t: torch.nn.functional.max_pool2d(t, kernel, stride=stride),
        [x],
        rng,
    )


def test_max_pool2d_adds_the_gradients_of_every_window_an_entry_wins():
    """3×3 windows, stride 2: the 9 at the centre of a 5×5 input wins all four windows."""
    x = np.zeros((1, 1, 5, 5))
    x[0, 0, 2, 2] = 9.0
    g = np.array([[1.0, 2.0], [3.0, 4.0]]).reshape(1, 1, 2, 2)
    leaf = Tensor(x, requires_grad=True)
    out = max_pool2d(leaf, 3, stride=2)
    assert out.data.tolist() == [[[[9.0, 9.0], [9.0, 9.0]]]]
    out.backward(gradient=g)
    reference = torch.tensor(x, requires_grad=True)
    torch.nn.functional.max_pool2d(reference, 3, stride=2).backward(torch.tensor(g))
    expected = np.zeros_like(x)
    expected[0, 0, 2, 2] = g.sum()
    np.testing.assert_array_equal(leaf.grad, expected)
    np.testing.assert_array_equal(reference.grad.numpy(), expected)


def test_max_pool2d_stride_defaults_to_the_kernel():
    x = Tensor(np.random.default_rng(0).standard_normal((2, 3, 7, 5)))
    np.testing.assert_array_equal(max_pool2d(x, 2).data, max_pool2d(x, 2, stride=2).data)
    assert max_pool2d(x, 2).shape == (2, 3, 3, 2)
    assert max_pool2d(x, 3, stride=2).shape == (2, 3, 3, 2)
    assert max_pool2d(x, np.int64(2), stride=np.int64(1)).shape == (2, 3, 6, 4)


def test_max_pool2d_names_what_does_not_fit():
    x = Tensor(np.ones((1, 1, 3, 5)))
    with pytest.raises(ValueError, match=r"max_pool2d: the kernel \(4, 4\) is larger than .* \(3, 5\)"):
        max_pool2d(x, 4)
    for bad in (0, 2.0, (2, 2, 2), True, (2, 0)):
        with pytest.raises(ValueError, match="max_pool2d: (the )?kernel"):
            max_pool2d(x, bad)
    with pytest.raises(ValueError, match=r"max_pool2d: expected an input of shape \(N, C, H, W\), got shape \(3, 5\)"):
        max_pool2d(Tensor(np.ones((3, 5))), 2)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=rf"max_pool2d: stride must be an int >= 1, got {re.escape(repr(bad))}"):
            max_pool2d(x, 2, stride=bad)

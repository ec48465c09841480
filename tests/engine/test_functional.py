"""Tests of chainrule.functional: values and gradients against float64 torch,
central differences, numerical stability, and the error messages for bad labels and shapes."""

import re

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from chainrule.autograd import grad
from chainrule.functional import cross_entropy, l2_penalty, log_softmax, mse_loss, nll_loss, softmax
from chainrule.gradcheck import assert_gradients_close
from chainrule.tensor import Tensor

FAST = settings(max_examples=25, deadline=None)
seeds = st.integers(0, 2**32 - 1)


def raises(exception, text):
    return pytest.raises(exception, match=re.escape(text))


def compare(chain_out, torch_out, chain_leaves, torch_leaves, rng, rtol=1e-10):
    """Same forward values, and the same gradients for a random output gradient."""
    np.testing.assert_allclose(chain_out.data, torch_out.detach().numpy(), rtol=rtol, atol=1e-12)
    upstream = np.asarray(rng.standard_normal(chain_out.shape))
    chain_out.backward(gradient=upstream)
    torch_out.backward(gradient=torch.tensor(upstream))
    for leaf, reference in zip(chain_leaves, torch_leaves, strict=True):
        np.testing.assert_allclose(leaf.grad, reference.grad.numpy(), rtol=rtol, atol=1e-12)


@st.composite
def logits_and_axis(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, axis


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@FAST
@given(case=logits_and_axis(), scale=st.sampled_from([1.0, 30.0]), seed=seeds)
def test_softmax_and_log_softmax_match_torch(name, case, scale, seed):
    shape, axis = case
    rng = np.random.default_rng(seed)
    data = scale * rng.standard_normal(shape)
    x = Tensor(data.copy(), requires_grad=True)
    reference = torch.tensor(data, requires_grad=True)
    chain_fn = {"softmax": softmax, "log_softmax": log_softmax}[name]
    torch_fn = {"softmax": F.softmax, "log_softmax": F.log_softmax}[name]
    compare(chain_fn(x, axis=axis), torch_fn(reference, dim=axis), [x], [reference], rng)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_logits_are_stable(dtype):
    data = np.array([[1000.0, 999.0, -1000.0], [-1000.0, -1001.0, -999.5]], dtype=dtype)
    x = Tensor(data, requires_grad=True)
    reference = torch.tensor(data.astype(np.float64))
    probabilities = softmax(x)
    log_probabilities = log_softmax(x)
    assert probabilities.dtype == dtype and log_probabilities.dtype == dtype
    assert np.all(np.isfinite(probabilities.data)) and np.all(np.isfinite(log_probabilities.data))
    tolerance = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(probabilities.data, F.softmax(reference, dim=1).numpy(), rtol=tolerance, atol=1e-30)
    np.testing.assert_allclose(log_probabilities.data, F.log_softmax(reference, dim=1).numpy(), rtol=tolerance)
    weights = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0]])
    (log_probabilities * weights).sum().backward()
    reference.requires_grad_()
    (F.log_softmax(reference, dim=1) * torch.tensor(weights)).sum().backward()
    assert x.grad.dtype == dtype and np.all(np.isfinite(x.grad))
    np.testing.assert_allclose(x.grad, reference.grad.numpy(), rtol=tolerance, atol=1e-6)


@FAST
@given(batch=st.integers(1, 6), classes=st.integers(1, 5), scale=st.sampled_from([1.0, 50.0]), seed=seeds)
def test_cross_entropy_matches_torch(batch, classes, scale, seed):
    rng = np.random.default_rng(seed)
    data = scale * rng.standard_normal((batch, classes))
    labels = rng.integers(0, classes, batch)
    x = Tensor(data.copy(), requires_grad=True)
    reference = torch.tensor(data, requires_grad=True)
    loss = cross_entropy(x, labels)
    expected = F.cross_entropy(reference, torch.tensor(labels))
    assert loss.shape == ()
    np.testing.assert_allclose(loss.data, expected.item(), rtol=1e-10, atol=1e-12)
    loss.backward()
    expected.backward()
    np.testing.assert_allclose(x.grad, reference.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_cross_entropy_gradient_is_softmax_minus_one_hot_over_batch():
    data = np.array([[2.0, 0.5, -1.0], [0.0, 0.0, 3.0]])
    x = Tensor(data, requires_grad=True)
    cross_entropy(x, [1, 2]).backward()
    p = np.exp(data) / np.exp(data).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(x.grad, (p - np.eye(3)[[1, 2]]) / 2, rtol=1e-12)


def test_cross_entropy_accepts_lists_and_int32_and_keeps_float32():
    data = np.array([[0.1, 0.9], [0.3, -0.2], [1.0, 1.0]], dtype=np.float32)
    expected = F.cross_entropy(torch.tensor(data, dtype=torch.float64), torch.tensor([1, 0, 1])).item()
    for labels in ([1, 0, 1], np.array([1, 0, 1], dtype=np.int32), np.array([1, 0, 1], dtype=np.uint8)):
        x = Tensor(data, requires_grad=True)
        loss = cross_entropy(x, labels)
        assert loss.dtype == np.float32
        assert loss.item() == pytest.approx(expected, rel=1e-6)
        loss.backward()
        assert x.grad.dtype == np.float32


def test_mse_loss_matches_torch():
    rng = np.random.default_rng(3)
    pred, target = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    x = Tensor(pred.copy(), requires_grad=True)
    reference = torch.tensor(pred, requires_grad=True)
    compare(mse_loss(x, target), F.mse_loss(reference, torch.tensor(target)), [x], [reference], rng)
    y = Tensor(pred.copy(), requires_grad=True)
    t = Tensor(target.copy(), requires_grad=True)
    mse_loss(y, t).backward()
    np.testing.assert_allclose(t.grad, -y.grad, rtol=1e-12)


def test_l2_penalty_value_and_gradient():
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    weights = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    penalty = l2_penalty(weights, 0.1)
    references = [torch.tensor(a, requires_grad=True) for a in arrays]
    expected = 0.1 / 2 * sum(torch.linalg.norm(r) ** 2 for r in references)
    assert penalty.item() == pytest.approx(expected.item(), rel=1e-12)
    penalty.backward()
    expected.backward()
    for w, r in zip(weights, references, strict=True):
        np.testing.assert_allclose(w.grad, r.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(w.grad, 0.1 * w.data, rtol=1e-12)  # weight decay
    single = Tensor(arrays[0], requires_grad=True)
    assert l2_penalty(single, 2.0).item() == pytest.approx((arrays[0] ** 2).sum(), rel=1e-12)


GRADCHECK_CASES = {
    "softmax": (lambda x, r: (softmax(x, axis=0) * r).sum(), (3, 2)),
    "log_softmax": (lambda x, r: (log_softmax(x) * r).sum(), (2, 4)),
    "cross_entropy": (lambda x, r: cross_entropy(x * r, [0, 3]), (2, 4)),
    "mse_loss": (lambda x, r: mse_loss(x, r), (2, 3)),
    "l2_penalty": (lambda x, r: l2_penalty([x, x * r], 0.3), (2, 3)),
}


@pytest.mark.parametrize("name", sorted(GRADCHECK_CASES))
def test_gradients_agree_with_central_differences(name):
    fn, shape = GRADCHECK_CASES[name]
    rng = np.random.default_rng(len(name))
    r = Tensor(rng.standard_normal(shape))
    assert_gradients_close(lambda x: fn(x, r), [Tensor(rng.standard_normal(shape), requires_grad=True, label="x")])


def test_hessian_vector_product_through_cross_entropy_matches_torch():
    """Second derivatives through the log_softmax rule (its rule is made of Tensor ops)."""
    rng = np.random.default_rng(5)
    x0, w0, v = rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    labels = np.array([0, 4, 2, 2])
    w = Tensor(w0, requires_grad=True)
    loss = cross_entropy(Tensor(x0) @ w, labels) + l2_penalty(w, 0.01)
    (g,) = grad(loss, w, create_graph=True)
    (hv,) = grad((g * v).sum(), w)

    def torch_loss(weights):
        return F.cross_entropy(torch.tensor(x0) @ weights, torch.tensor(labels)) + 0.005 * (weights**2).sum()

    _, expected = torch.autograd.functional.hvp(torch_loss, torch.tensor(w0), torch.tensor(v))
    np.testing.assert_allclose(hv.data, expected.numpy(), rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- errors


def test_cross_entropy_label_errors():
    logits = Tensor(np.zeros((3, 4)), requires_grad=True)
    with raises(
        ValueError,
        "cross_entropy: label 4 (at position 1) is out of range: labels must be in [0, 4) "
        "for 4 classes (1 labels out of range)",
    ):
        cross_entropy(logits, [0, 4, 1])
    with raises(ValueError, "cross_entropy: label -1 (at position 0) is out of range: labels must be in [0, 4)"):
        cross_entropy(logits, np.array([-1, 2, 9]))
    with raises(ValueError, "(2 labels out of range)"):
        cross_entropy(logits, np.array([-1, 2, 9]))
    with raises(TypeError, "cross_entropy: labels must be integer class indices, got dtype float64; convert them"):
        cross_entropy(logits, np.array([0.0, 1.0, 2.0]))
    with raises(TypeError, "cross_entropy: labels must be integer class indices, got dtype bool"):
        cross_entropy(logits, [True, False, True])
    with raises(ValueError, "cross_entropy: labels must be 1-D (one class per row), got shape (3, 1)"):
        cross_entropy(logits, np.array([[0], [1], [2]]))
    with raises(ValueError, "cross_entropy: got 2 labels for a batch of 3 rows of logits"):
        cross_entropy(logits, [0, 1])


def test_cross_entropy_needs_2d_logits():
    with raises(ValueError, "cross_entropy: logits must have shape (batch, num_classes), got shape (4,)"):
        cross_entropy(Tensor(np.zeros(4)), [1])


def test_nll_loss_names_itself_and_refuses_an_empty_batch():
    log_probs = Tensor(np.zeros((3, 4)))
    with raises(ValueError, "nll_loss: label 4 (at position 1) is out of range"):
        nll_loss(log_probs, [0, 4, 1])
    with raises(ValueError, "nll_loss: got 2 labels for a batch of 3 rows of log_probs"):
        nll_loss(log_probs, [0, 1])
    with raises(ValueError, "nll_loss: log_probs must have shape (batch, num_classes), got shape (4,)"):
        nll_loss(Tensor(np.zeros(4)), [1])
    for loss in (nll_loss, cross_entropy):
        with raises(ValueError, f"{loss.__name__}: the batch is empty (0 rows)"):
            loss(Tensor(np.zeros((0, 4))), np.zeros(0, dtype=int))


def test_cross_entropy_is_two_nodes_as_in_torch():
    """log_softmax, then nll_loss: the graph PyTorch records for F.cross_entropy."""
    logits = Tensor(np.zeros((3, 4)), requires_grad=True)
    loss = cross_entropy(logits, [0, 3, 1])
    assert loss.grad_fn.op == "nll_loss" and loss.grad_fn.parents[0].op == "log_softmax"
    tlogits = torch.zeros((3, 4), requires_grad=True)
    tloss = F.cross_entropy(tlogits, torch.tensor([0, 3, 1]))
    assert type(tloss.grad_fn).__name__ == "NllLossBackward0"
    assert type(tloss.grad_fn.next_functions[0][0]).__name__ == "LogSoftmaxBackward0"


def test_softmax_axis_errors():
    x = Tensor(np.zeros((2, 3)))
    with raises(ValueError, "softmax: axis 2 is out of range for a tensor of shape (2, 3)"):
        softmax(x, axis=2)
    with raises(ValueError, "log_softmax: axis 2 is not valid for a tensor of shape (2, 3)"):
        log_softmax(x, axis=2)


def test_mse_loss_shape_mismatch():
    with raises(ValueError, "mse_loss: pred has shape (3, 1) but target has shape (3,); they must be equal"):
        mse_loss(Tensor(np.zeros((3, 1))), np.zeros(3))


def test_l2_penalty_errors():
    w = Tensor(np.ones(2))
    with raises(ValueError, "l2_penalty: lam must be a number >= 0, got -0.1"):
        l2_penalty([w], -0.1)
    with raises(ValueError, "l2_penalty: lam must be a number >= 0, got nan"):
        l2_penalty([w], float("nan"))
    with raises(ValueError, "l2_penalty: weights is empty"):
        l2_penalty([], 0.1)
    with raises(TypeError, "l2_penalty: weights[1]: expected a Tensor, got list"):
        l2_penalty([w, [1.0]], 0.1)


def test_functions_refuse_non_tensors():
    with raises(TypeError, "softmax: expected a Tensor, got list"):
        softmax([1.0, 2.0])


@pytest.mark.parametrize("ours, theirs", [(softmax, torch.softmax), (log_softmax, torch.log_softmax)])
def test_softmax_of_one_number_and_of_an_empty_axis_are_what_torch_gives(ours, theirs):
    """Before, a 0-d input with axis 0 failed in backward ("sum: axis 0 is not valid") and an empty axis
    was refused as empty or as an invalid axis; torch gives 1.0 (or 0.0) with gradient 0, and empty results."""
    for shape, axis in [((), 0), ((), -1), ((), None), ((2, 0), 1), ((0, 3), 1)]:
        data = np.full(shape, 3.0)
        x, tx = Tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        y, ty = ours(x, axis=axis), theirs(tx, 0 if axis is None else axis)  # None: all of a 0-d x
        assert y.shape == tuple(ty.shape) and np.array_equal(y.data, ty.detach().numpy())
        y.sum().backward()
        ty.sum().backward()
        assert x.grad.shape == shape and np.array_equal(x.grad, tx.grad.numpy())
    for shape, axis in [((), 1), ((2, 0), 5)]:
        with pytest.raises(ValueError, match=rf"{ours.__name__}: axis {axis} is"):
            ours(Tensor(np.zeros(shape), requires_grad=True), axis=axis)

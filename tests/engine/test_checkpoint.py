"""Tests of chainrule.tensor.checkpoint: recomputation instead of keeping activations.

Gradients through checkpoints must equal those without (and PyTorch's); the memory kept
for backward and the peak memory of a training step must go down; the flop count must
show the recomputation.  Expected numbers are derived from the layer sizes.
"""

import gc
import subprocess
import sys
import weakref
from itertools import pairwise

import numpy as np
import pytest
import torch
import torch.utils.checkpoint
from hypothesis import given, settings
from hypothesis import strategies as st

from chainrule import checkpoint, grad_mode
from chainrule.autograd import clear_grads, grad
from chainrule.cost import count_flops, peak_memory, saved_bytes_by_kind
from chainrule.grad_mode import observe_ops
from chainrule.tensor import Tensor, apply, no_grad


def make_mlp(sizes, seed=0):
    rng = np.random.default_rng(seed)
    weights = [Tensor(rng.standard_normal((m, n)) / np.sqrt(m), requires_grad=True) for m, n in pairwise(sizes)]
    biases = [Tensor(rng.standard_normal(n) * 0.1, requires_grad=True) for n in sizes[1:]]
    return weights, biases


def layers(h, weights, biases):
    for w, b in zip(weights, biases, strict=True):
        h = (h @ w + b).tanh()
    return h


def forward(x, weights, biases, segment=None, nested=None):
    """The MLP with every ``segment`` layers checkpointed (all layers plain when None);
    with ``nested``, each segment checkpoints its own groups of ``nested`` layers too."""
    if segment is None:
        return layers(x, weights, biases)
    h = x
    for start in range(0, len(weights), segment):
        w, b = weights[start : start + segment], biases[start : start + segment]
        if nested is None:
            h = checkpoint(lambda t, w=w, b=b: layers(t, w, b), h)
        else:
            h = checkpoint(lambda t, w=w, b=b: forward(t, w, b, segment=nested), h)
    return h


def loss_of(out):
    return (out * out).mean()


def grads_of(params):
    grads = [p.grad.copy() for p in params]
    clear_grads(params)
    return grads


def assert_same_grads(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- gradients


@settings(max_examples=15, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 6), min_size=2, max_size=7),
    batch=st.integers(1, 4),
    segment=st.integers(1, 4),
    x_needs_grad=st.booleans(),
)
def test_checkpointed_gradients_equal_plain_ones(sizes, batch, segment, x_needs_grad):
    weights, biases = make_mlp(sizes)
    x = Tensor(np.random.default_rng(1).standard_normal((batch, sizes[0])), requires_grad=x_needs_grad)
    params = weights + biases + ([x] if x_needs_grad else [])
    loss_of(forward(x, weights, biases)).backward()
    plain = grads_of(params)
    loss = loss_of(forward(x, weights, biases, segment=segment))
    loss.backward()
    assert_same_grads(grads_of(params), plain)


def test_gradients_match_pytorch_with_and_without_its_checkpoint():
    sizes, batch = [5, 8, 8, 8, 3], 4
    weights, biases = make_mlp(sizes)
    x = Tensor(np.random.default_rng(2).standard_normal((batch, sizes[0])), requires_grad=True)
    loss_of(forward(x, weights, biases, segment=2)).backward()
    ours = [p.grad for p in weights + biases + [x]]

    tw = [torch.tensor(w.data, requires_grad=True) for w in weights]
    tb = [torch.tensor(b.data, requires_grad=True) for b in biases]
    tx = torch.tensor(x.data, requires_grad=True)

    def torch_layers(h, ws, bs):
        for w, b in zip(ws, bs, strict=True):
            h = torch.tanh(h @ w + b)
        return h

    for use_checkpoint in (False, True):
        h = tx
        for start in (0, 2):
            ws, bs = tw[start : start + 2], tb[start : start + 2]
            if use_checkpoint:
                h = torch.utils.checkpoint.checkpoint(torch_layers, h, ws, bs, use_reentrant=False)
            else:
                h = torch_layers(h, ws, bs)
        theirs = torch.autograd.grad((h * h).mean(), tw + tb + [tx])
        for a, e in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, e.numpy(), rtol=1e-10, atol=1e-12)


def test_parameters_read_by_fn_get_gradients_though_no_input_needs_one():
    weights, biases = make_mlp([3, 4, 2])
    x = Tensor(np.ones((2, 3)))  # data: no gradient wanted
    y = checkpoint(lambda t: layers(t, weights, biases), x)
    node = y.grad_fn
    assert y.requires_grad and node.op == "checkpoint" and node.args[1] == 1  # one input
    leaves = [None if vertex is None else vertex.variable for vertex in node.next_functions]
    assert leaves == [None, weights[0], biases[0], weights[1], biases[1]]  # inputs, then params as read
    assert node.saved == (x, weights[0], biases[0], weights[1], biases[1], None)  # fn runs again on all of them
    loss_of(y).backward()
    checkpointed = grads_of(weights + biases)
    loss_of(layers(x, weights, biases)).backward()
    assert_same_grads(checkpointed, grads_of(weights + biases))


def test_a_parameter_fn_returns_unchanged_gets_its_gradient_as_in_pytorch():
    """fn returning W itself (or after other work) read W as much as an op would: before, W.grad stayed None
    and chainrule.grad said W was not used, where torch gives the upstream gradient."""
    weights, upstream = np.array([1.0, 10.0]), np.array([1.0, 10.0])
    for fn in (lambda t, W: W, lambda t, W: (t * 2.0, W)[1]):
        W, x = Tensor(weights.copy(), requires_grad=True), Tensor(np.array([2.0, 3.0]), requires_grad=True)
        (checkpoint(lambda t: fn(t, W), x) * Tensor(upstream)).sum().backward()
        tW, tx = torch.tensor(weights, requires_grad=True), torch.tensor([2.0, 3.0], requires_grad=True)
        ty = torch.utils.checkpoint.checkpoint(lambda t: fn(t, tW), tx, use_reentrant=False)
        (ty * torch.tensor(upstream)).sum().backward()
        assert np.array_equal(W.grad, tW.grad.numpy()) and np.array_equal(W.grad, upstream)
        assert x.grad is None and tx.grad is None
        (dW,) = grad(checkpoint(lambda t: fn(t, W), x).sum(), W)
        assert np.array_equal(dW.data, np.ones(2))


def test_a_checkpoint_keeps_the_generators_state_not_dropouts_masks():
    """Four dropouts in a segment kept four masks, five activations with the output where checkpointing
    promises one; now each keeps the generator's state, and the masks are drawn again in backward."""
    import tracemalloc

    from chainrule.functional import dropout

    def step(segment):
        rng = np.random.default_rng(3)
        x = Tensor(np.ones((256, 128)), requires_grad=True)

        def fn(h):
            for _ in range(4):
                h = dropout(h * 1.5, 0.5, rng=rng)
            return h

        tracemalloc.start()
        y = checkpoint(fn, x) if segment else fn(x)
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        (y * y).sum().backward()
        return y, held, x.grad

    y, held, checkpointed = step(segment=True)
    assert held < 2 * y.data.nbytes, held / y.data.nbytes  # the output and a few numbers per draw
    assert not any(isinstance(part, np.ndarray) for draw in y.grad_fn.args[2] for part in draw)
    assert np.array_equal(checkpointed, step(segment=False)[2])


def test_a_checkpoint_that_returns_its_input_shares_its_version_and_dropout_needs_a_generator_inside():
    """fn returning its input gives the input's own array: a change to the input in place then counts,
    as torch refuses; a legacy RandomState drops out as before outside a checkpoint, and inside one,
    whose state must be kept, it is refused by name."""
    from chainrule.functional import dropout

    x, v = Tensor(np.array([5.0, 6.0])), Tensor(np.array([1.0, 1.0]), requires_grad=True)
    loss = (checkpoint(lambda t: t, x) * v).sum()
    x += 1.0
    with pytest.raises(RuntimeError, match="changed in place after it was saved"):
        loss.backward()
    legacy = np.random.RandomState(0)
    assert dropout(Tensor(np.ones(4)), 0.5, rng=legacy).shape == (4,)
    with pytest.raises(TypeError, match="dropout inside checkpoint: rng must be a numpy Generator"):
        checkpoint(lambda t: dropout(t, 0.5, rng=legacy), Tensor(np.ones(4), requires_grad=True))


def test_checkpoint_is_a_row_of_the_table_recorded_as_any_op():
    # the table is whole without importing the Tensor class: no module adds a row to it
    code = (
        "import sys; from chainrule.rules import RULES; print('checkpoint' in RULES, 'chainrule.tensor' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.stdout.split() == ["True", "False"], run.stderr[-2000:]
    # checkpoint() runs it and records it as apply records any op: the observers see one
    # "checkpoint" op whose inputs end with the parameters fn read, and the ops of fn itself
    weights, biases = make_mlp([3, 4])
    x = Tensor(np.ones((2, 3)))
    seen = []
    with observe_ops(lambda op, inputs, args, out: seen.append((op, inputs))):
        checkpoint(lambda t: layers(t, weights, biases), x)
    assert [op for op, _ in seen] == ["@", "+", "tanh", "checkpoint"]
    assert seen[-1][1] == (x, weights[0], biases[0])
    with pytest.raises(TypeError, match=r"apply\('checkpoint'\): call chainrule.checkpoint\(fn, \*inputs\)"):
        apply("checkpoint", x, args=(lambda t: t, 1))


def test_a_parameter_used_inside_and_outside_gets_both_contributions():
    weights, biases = make_mlp([3, 4, 4])
    w = weights[1]
    x = Tensor(np.random.default_rng(3).standard_normal((5, 3)))

    def total_loss(segment):
        out = forward(x, weights, biases, segment=segment)
        return loss_of(out) + (w * w).sum() + loss_of(checkpoint(lambda t: t @ w, out) if segment else out @ w)

    total_loss(None).backward()
    plain = grads_of(weights + biases)
    total_loss(1).backward()
    assert_same_grads(grads_of(weights + biases), plain)


def test_grad_function_and_input_gradients_work_through_checkpoints():
    weights, biases = make_mlp([4, 5, 5, 2])
    x = Tensor(np.random.default_rng(4).standard_normal((3, 4)), requires_grad=True)
    wanted = [x, weights[0], biases[2]]
    expected = grad(loss_of(forward(x, weights, biases)), wanted)
    actual = grad(loss_of(forward(x, weights, biases, segment=2)), wanted)
    assert_same_grads([a.data for a in actual], [e.data for e in expected])
    assert all(p.grad is None for p in weights + biases + [x])  # grad() stores nothing


def test_nested_checkpoints_give_the_same_gradients():
    weights, biases = make_mlp([3, 6, 6, 6, 6, 2])
    x = Tensor(np.random.default_rng(5).standard_normal((4, 3)))
    loss_of(forward(x, weights, biases)).backward()
    plain = grads_of(weights + biases)
    loss_of(forward(x, weights, biases, segment=4, nested=2)).backward()
    assert_same_grads(grads_of(weights + biases), plain)


def test_retain_graph_recomputes_on_every_backward():
    weights, biases = make_mlp([3, 4, 2])
    x = Tensor(np.ones((2, 3)))
    loss_of(layers(x, weights, biases)).backward()
    once = grads_of(weights + biases)
    loss = loss_of(checkpoint(lambda t: layers(t, weights, biases), x))
    loss.backward(retain_graph=True)
    loss.backward()
    assert_same_grads(grads_of(weights + biases), [2 * g for g in once])


def test_nothing_is_recorded_when_nothing_needs_grad_or_under_no_grad():
    w = Tensor(np.ones((3, 3)))
    x = Tensor(np.ones((2, 3)))
    y = checkpoint(lambda t: t @ w, x)
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(y.data, x.data @ w.data)
    w.requires_grad = True
    with no_grad():
        y = checkpoint(lambda t: t @ w, x)
    assert not y.requires_grad and y.grad_fn is None


def test_the_activations_inside_fn_are_freed_after_the_forward_pass():
    weights, biases = make_mlp([4, 8, 8, 8, 2])
    arrays = []

    def segment(t):
        out = t
        for w, b in zip(weights, biases, strict=True):
            out = (out @ w + b).tanh()
            arrays.append(weakref.ref(out.data))
        return out

    y = checkpoint(segment, Tensor(np.ones((3, 4))))
    gc.collect()
    alive = [ref() for ref in arrays if ref() is not None]
    assert len(alive) == 1 and alive[0] is y.data  # only the output is still there


def test_saved_tensors_are_freed_after_backward():
    weights, biases = make_mlp([3, 4, 2])
    y = checkpoint(lambda t: layers(t, weights, biases), Tensor(np.ones((2, 3))))
    loss_of(y).backward()
    assert y.grad_fn.saved is None
    with pytest.raises(RuntimeError, match=r"backward through checkpoint \('checkpoint'\) a second time"):
        y.backward(gradient=np.ones(y.shape))


# --------------------------------------------------------------------------- memory and flops


def deep_mlp(depth=16, width=64, batch=64):
    weights, biases = make_mlp([width] * (depth + 1))
    x = Tensor(np.random.default_rng(6).standard_normal((batch, width)))
    return weights, biases, x


def test_checkpointing_keeps_one_activation_per_segment():
    depth, width, batch, segment = 16, 64, 64, 4
    weights, biases, x = deep_mlp(depth, width, batch)
    activation = batch * width * 8
    plain = saved_bytes_by_kind(loss_of(forward(x, weights, biases)))
    kept = saved_bytes_by_kind(loss_of(forward(x, weights, biases, segment=segment)))
    # plain: every tanh keeps its output (the last one is also what the loss keeps)
    assert plain["activations"] == depth * activation
    # checkpointed: the outputs of the segments; the first segment's input is the data x
    assert kept["activations"] == depth // segment * activation
    # the leaves: x and the weights, but the first weight only with checkpointing: in x @ W0
    # only W0 needs a gradient, which reads x, so plain keeps x and not W0. The checkpoint
    # nodes keep every input and parameter of their segment (fn runs again), biases too.
    weight_bytes = sum(w.data.nbytes for w in weights)
    assert plain["leaves"] == x.data.nbytes + weight_bytes - weights[0].data.nbytes
    assert kept["leaves"] == x.data.nbytes + weight_bytes + sum(b.data.nbytes for b in biases)


def test_checkpointing_lowers_the_peak_memory_of_a_training_step():
    # A batch much larger than the width: activations (batch x width per layer) dominate
    # the weights and gradients (width x width), as in training where checkpointing pays.
    depth, segment = 16, 4
    weights, biases, x = deep_mlp(depth, width=64, batch=512)
    params = weights + biases

    def step(segment):
        loss = loss_of(forward(x, weights, biases, segment=segment))
        kept = saved_bytes_by_kind(loss)["activations"]
        loss.backward()
        return kept

    plain_kept, plain_peak = peak_memory(step, None)
    plain = grads_of(params)
    kept, peak = peak_memory(step, segment)
    assert_same_grads(grads_of(params), plain)
    # The n/k + k model: plain training holds n activations at its peak, checkpointing
    # holds the n/k segment outputs plus the k activations of the segment it recomputes.
    activation = 512 * 64 * 8
    assert plain_kept == depth * activation and kept == depth // segment * activation
    predicted_saving = (depth - depth // segment - segment) * activation
    assert plain_peak - peak > 0.75 * predicted_saving
    assert peak < 0.7 * plain_peak


def test_flop_counts_show_the_recomputed_forward_passes():
    depth, width, batch = 8, 16, 8
    weights, biases, x = deep_mlp(depth, width, batch)
    layer_forward = 2 * batch * width * width + batch * width + batch * width  # matmul, +b, tanh
    counters = {}
    for name, segment, nested in [("plain", None, None), ("checkpointed", 4, None), ("nested", 4, 2)]:
        with count_flops() as counters[name]:
            loss_of(forward(x, weights, biases, segment=segment, nested=nested)).backward()
    plain, checkpointed, nested = counters["plain"], counters["checkpointed"], counters["nested"]
    assert checkpointed.forward == nested.forward == plain.forward
    # every layer sits in a checkpoint, so backward runs each layer's forward once more...
    assert checkpointed.backward - plain.backward == depth * layer_forward
    # ...and twice when checkpoints are nested (the outer recomputation, then the inner one)
    assert nested.backward - plain.backward == 2 * depth * layer_forward
    rows = {row["op"]: row for row in checkpointed.rows()}
    assert rows["checkpoint"]["forward_calls"] == depth // 4
    assert rows["checkpoint"]["forward_flops"] == rows["checkpoint"]["backward_flops"] == 0


# --------------------------------------------------------------------------- errors


def test_fn_must_be_callable_and_inputs_tensors():
    x = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match="checkpoint: fn must be callable, got int"):
        checkpoint(3, x)
    with pytest.raises(TypeError, match=r"checkpoint: inputs\[1\] is a ndarray, not a Tensor"):
        checkpoint(lambda a, b: a, x, np.ones(3))


@pytest.mark.parametrize("result", [(1, 2), 2.0, None, np.ones(3)])
def test_fn_must_return_one_tensor(result):
    x = Tensor(np.ones(3), requires_grad=True)
    with pytest.raises(TypeError, match=f"checkpoint: fn must return one Tensor, got {type(result).__name__}"):
        checkpoint(lambda t: result, x)
    assert grad_mode.observers() == []


def test_a_tensor_computed_outside_fn_must_be_passed_as_an_input():
    x = Tensor(np.ones(3), requires_grad=True)
    h = x.tanh()
    with pytest.raises(ValueError, match=r"computed outside it \(by 'tanh'\).*pass it as an input"):
        checkpoint(lambda t: t * h, Tensor(np.ones(3)))
    y = checkpoint(lambda t, u: t * u, Tensor(np.full(3, 2.0)), h)  # the way to do it
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 2 * (1 - np.tanh(1.0) ** 2))


def test_gradients_of_gradients_through_a_checkpoint_are_refused():
    w = Tensor(np.ones((3, 2)), requires_grad=True)
    y = checkpoint(lambda t: (t @ w).tanh(), Tensor(np.ones((4, 3))))
    with pytest.raises(NotImplementedError, match=r"checkpoint: gradients of gradients \(create_graph=True\)"):
        grad(y.sum(), w, create_graph=True)
    with pytest.raises(NotImplementedError, match="checkpoint"):
        y.sum().backward(create_graph=True)


def test_fn_that_changes_between_runs_is_reported():
    calls = []

    def fickle(t):
        calls.append(1)
        return t * 2.0 if len(calls) == 1 else (t * 2.0).sum()

    y = checkpoint(fickle, Tensor(np.ones((2, 3)), requires_grad=True))
    message = r"running fn again in backward gave a Tensor of shape \(\).*shape \(2, 3\)"
    with pytest.raises(RuntimeError, match=message):
        y.sum().backward()


def test_errors_inside_fn_come_through_unchanged():
    a, b = Tensor(np.ones((2, 3)), requires_grad=True), Tensor(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(2, 3\) are not aligned"):
        checkpoint(lambda s, t: s @ t, a, b)
    assert grad_mode.observers() == []


def _dropout_grads(checkpointed, rng, nested=False):
    """x's and W's gradients through tanh(x W) with dropout, once or twice checkpointed, and the masks drawn."""
    from chainrule.functional import dropout

    data = np.random.default_rng(3)
    x = Tensor(data.normal(size=(4, 5)), requires_grad=True)
    W = Tensor(data.normal(size=(5, 5)), requires_grad=True)
    masks = []

    def keep(op, inputs, args, out):
        if op == "dropout" and not grad_mode.in_backward():
            masks.append(args[0])

    def inner(t):
        return dropout((t @ W).tanh(), 0.5, rng=rng)

    def outer(t):
        return dropout(checkpoint(inner, t) if nested else inner(t), 0.3, rng=rng)

    with observe_ops(keep):
        y = checkpoint(outer, x) if checkpointed else outer(x)
    (y * y).sum().backward()
    return x.grad, W.grad, masks


def test_dropout_inside_a_checkpoint_gets_its_forward_masks_back_as_in_pytorch():
    """The recomputation in backward gives dropout the masks of the forward pass (PyTorch's
    preserve_rng_state): the gradients equal those without checkpoint, with a generator passed,
    with the default one (checked against the masks drawn) and with checkpoints nested."""
    plain = _dropout_grads(False, np.random.default_rng(7))
    for nested in (False, True):
        checkpointed = _dropout_grads(True, np.random.default_rng(7), nested)
        assert_same_grads(checkpointed[:2], plain[:2])
    x_grad, W_grad, masks = _dropout_grads(True, None)
    assert len(masks) == 2  # the default generator: no second draw, so the same gradient as this mask gives
    data = np.random.default_rng(3)
    x0, W0 = data.normal(size=(4, 5)), data.normal(size=(5, 5))
    h = np.tanh(x0 @ W0)
    y = h * masks[0] * masks[1]
    dz = 2 * y * masks[1] * masks[0] * (1 - h * h)
    np.testing.assert_allclose(x_grad, dz @ W0.T, rtol=1e-12)
    np.testing.assert_allclose(W_grad, x0.T @ dz, rtol=1e-12)
    # PyTorch keeps the same promise: with and without its checkpoint, the same gradients.
    grads = []
    for use in (False, True):
        torch.manual_seed(0)
        tx = torch.tensor(x0, requires_grad=True)
        tW = torch.tensor(W0, requires_grad=True)
        f = lambda t: torch.nn.functional.dropout(torch.tanh(t @ tW), 0.5)  # noqa: E731
        ty = torch.utils.checkpoint.checkpoint(f, tx, use_reentrant=False) if use else f(tx)
        (ty * ty).sum().backward()
        grads.append(tx.grad)
    assert torch.equal(grads[0], grads[1])


def test_a_function_that_draws_differently_when_run_again_is_refused():
    from chainrule.functional import dropout

    calls = []

    def fn(t):
        calls.append(1)
        return dropout(t, 0.5) if len(calls) == 1 else t * 2

    x = Tensor(np.ones(3), requires_grad=True)
    y = checkpoint(fn, x)
    with pytest.raises(RuntimeError, match="made 0 random draws, the forward pass 1; fn must compute the same"):
        y.sum().backward()

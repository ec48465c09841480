"""Random programs run by chainrule and by PyTorch side by side: values and gradients must agree.

A program starts from a few random leaves and applies random ops, each to operands from
the values made so far, in both engines at once; the loss is a random weighting of the last
value, and a third of the programs compare the gradient of a gradient too. Scalar programs do
the same with :class:`~chainrule.Value` (reverse mode) and :class:`~chainrule.Dual` (forward
mode). Kinks and ties are reached on purpose, where the incoming gradient is not 0: the
leaves hold exact 0s and clamp's bounds among their random entries, maximum and minimum
are often given an operand equal to the other at some entries, and max reductions and max
pooling meet the repeated entries.
"""

import math

import numpy as np
import torch

import chainrule.functional as F
from chainrule import Dual, Tensor, Value, grad
from chainrule.tensor import recorded_graph

__all__ = ["run_tensor_programs", "run_scalar_programs"]


def _unary(rng, x, tx):
    name = rng.choice(["tanh", "sigmoid", "relu", "abs", "neg", "clamp", "square", "exp", "log"])
    if name == "clamp":
        return name, x.clamp(-0.5, 0.7), tx.clamp(-0.5, 0.7)
    if name == "square":
        return name, x**2, tx**2
    if name == "neg":
        return name, -x, -tx
    if name == "exp":  # bounded first, so that no program overflows
        return name, x.tanh().exp(), tx.tanh().exp()
    if name == "log":  # of a positive number
        return name, (x.abs() + 0.5).log(), (tx.abs() + 0.5).log()
    return name, getattr(x, name)(), getattr(tx, name)()


def _binary(rng, x, tx, y, ty):
    name = rng.choice(["+", "-", "*", "/", "maximum", "minimum", "where"])
    if name == "/":  # a divisor away from 0
        return name, x / (y.abs() + 0.5), tx / (ty.abs() + 0.5)
    if name in ("maximum", "minimum") and rng.random() < 0.5:  # y equals x at some entries: ties
        mask = rng.random(np.broadcast_shapes(x.shape, y.shape)) < 0.5
        y, ty = F.where(mask, x, y), torch.where(torch.tensor(mask), tx, ty)
    if name in ("maximum", "minimum"):
        return name, getattr(F, name)(x, y), getattr(torch, name)(tx, ty)
    if name == "where":
        mask = rng.random(np.broadcast_shapes(x.shape, y.shape)) < 0.5
        return name, F.where(mask, x, y), torch.where(torch.tensor(mask), tx, ty)
    ours = {"+": x + y, "-": x - y, "*": x * y}[name]
    return name, ours, {"+": tx + ty, "-": tx - ty, "*": tx * ty}[name]


def _reshaping(rng, x, tx):
    choices = ["sum", "mean", "max", "transpose", "flatten", "index", "cat", "stack", "broadcast"]
    if x.ndim == 2:
        choices += ["matmul", "pool"]
    name = rng.choice(choices)
    if name in ("sum", "mean", "max") and x.ndim:
        axis, keep = int(rng.integers(x.ndim)), bool(rng.integers(2))
        theirs = tx.amax(axis, keep) if name == "max" else getattr(tx, name)(axis, keep)
        return name, getattr(x, name)(axis=axis, keepdims=keep), theirs
    if name == "transpose" and x.ndim:
        axes = [int(a) for a in rng.permutation(x.ndim)]
        return name, x.transpose(*axes), tx.permute(*axes)
    if name == "flatten":
        return name, x.reshape(-1), tx.reshape(-1)
    if name == "index" and x.ndim:
        key = _random_key(rng, x.shape)
        torch_key = tuple(torch.tensor(part) if isinstance(part, np.ndarray) else part for part in key)
        return name, x[key], tx[torch_key]
    if name == "cat" and x.ndim:
        axis = int(rng.integers(-x.ndim, x.ndim))
        return name, F.cat([x, x * 2], axis=axis), torch.cat([tx, tx * 2], dim=axis)
    if name == "stack":
        return name, F.stack([x, -x]), torch.stack([tx, -tx])
    if name == "pool" and x.ndim == 2 and min(x.shape) >= 2:
        padding, image = int(rng.integers(2)), x.reshape(1, 1, *x.shape)
        pooled = F.max_pool2d(image, 2, stride=1, padding=padding)
        return name, pooled, torch.nn.functional.max_pool2d(tx.reshape(1, 1, *x.shape), 2, 1, padding)
    if name == "matmul":
        w = rng.normal(size=(x.shape[1], int(rng.integers(1, 4))))
        return name, x @ Tensor(w), tx @ torch.tensor(w)
    return "broadcast", x.broadcast_to(2, *x.shape), tx.broadcast_to((2, *x.shape))


def _random_key(rng, shape):
    """An index of one of the forms a reader writes: an int, a slice with a step, an integer array
    with repeats (on the first axis or the last), a boolean mask."""
    form = rng.choice(["int", "slice", "rows", "last", "mask"])
    if form == "int":
        return (int(rng.integers(-shape[0], shape[0])),)
    if form == "slice":
        return (slice(int(rng.integers(shape[0])), None, int(rng.integers(1, 3))),)
    if form == "rows":
        return (rng.integers(shape[0], size=int(rng.integers(1, 4))),)
    if form == "last":
        return (Ellipsis, rng.integers(shape[-1], size=3))
    mask = rng.random(shape) < 0.6
    mask.flat[int(rng.integers(mask.size))] = True  # never empty: a max over an empty axis is refused
    return (mask,)


def _leaf_array(rng, shape):
    """Random entries, a third of them replaced by an exact kink, bound or repeated value."""
    array = rng.normal(size=shape)
    special = rng.random(shape) < 0.35
    return np.where(special, rng.choice([0.0, -0.5, 0.7, 1.0], size=shape), array)


def tensor_program(seed, steps=6):
    """One random program: None when both engines agree, else a description of the difference."""
    rng = np.random.default_rng(seed)
    shapes = [(2, 3), (3,), (2, 3), (1, 3)]
    arrays = [_leaf_array(rng, shapes[int(rng.integers(len(shapes)))]) for _ in range(2)]
    leaves = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    references = [torch.tensor(a, requires_grad=True) for a in arrays]
    pool, trace = list(zip(leaves, references, strict=True)), []
    for _ in range(steps):
        x, tx = pool[int(rng.integers(len(pool)))]
        kind = rng.random()
        if kind < 0.4:
            name, out, tout = _unary(rng, x, tx)
        elif kind < 0.75:
            y, ty = pool[int(rng.integers(len(pool)))]
            if not _broadcastable(x.shape, y.shape):
                continue
            name, out, tout = _binary(rng, x, tx, y, ty)
        else:
            name, out, tout = _reshaping(rng, x, tx)
        trace.append(f"{name}{tuple(out.shape)}")
        pool.append((out, tout))
        if out.size > 200:
            break
    out, tout = pool[-1]
    return _compare(out, tout, leaves, references, rng, " → ".join(trace))


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _compare(out, tout, leaves, references, rng, trace):
    if not np.allclose(out.data, tout.detach().numpy(), rtol=1e-10, atol=1e-12, equal_nan=True):
        return f"value differs: {trace}"
    if not tout.requires_grad:
        return None
    upstream, second = rng.normal(size=out.shape), rng.random() < 1 / 3
    loss, tloss = (out * Tensor(upstream)).sum(), (tout * torch.tensor(upstream)).sum()
    if not loss.requires_grad:
        return None
    ours = _grad_or_none(loss, leaves, second)
    theirs = torch.autograd.grad(tloss, references, create_graph=second, allow_unused=True)
    problem = _same_gradients(ours, theirs, leaves, "gradient", trace)
    if problem or not second:
        return problem
    ours, theirs = _second_order(ours, theirs, leaves, references, rng)
    return _same_gradients(ours, theirs, leaves, "second-order gradient", trace)


def _second_order(ours, theirs, leaves, references, rng):
    """The gradients of Σ (first gradient · a random direction), in both engines."""
    directions = [rng.normal(size=leaf.shape) for leaf in leaves]
    total = sum((g * Tensor(d)).sum() for g, d in zip(ours, directions, strict=True) if g is not None)
    ttotal = sum((g * torch.tensor(d)).sum() for g, d in zip(theirs, directions, strict=True) if g is not None)
    second = _grad_or_none(total, leaves, False) if getattr(total, "requires_grad", False) else [None] * len(leaves)
    tsecond = (
        torch.autograd.grad(ttotal, references, allow_unused=True)
        if getattr(ttotal, "requires_grad", False)
        else [None] * len(leaves)
    )
    return second, tsecond


def _grad_or_none(output, leaves, create_graph):
    """chainrule.grad for the leaves ``output`` was computed from, None for the others (torch's allow_unused)."""
    reached = set(recorded_graph(output))
    used = [leaf for leaf in leaves if leaf.accumulator is not None and leaf.accumulator() in reached]
    found = dict(zip(map(id, used), grad(output, used, create_graph=create_graph), strict=True)) if used else {}
    return [found.get(id(leaf)) for leaf in leaves]


def _same_gradients(ours, theirs, leaves, what, trace):
    for i, (leaf, mine, reference) in enumerate(zip(leaves, ours, theirs, strict=True)):
        expected = np.zeros(leaf.shape) if reference is None else reference.detach().numpy(force=True)
        got = np.zeros(leaf.shape) if mine is None else mine.data
        if not np.allclose(got, expected, rtol=1e-9, atol=1e-12, equal_nan=True):
            return f"{what} of leaf {i} differs by {np.nanmax(np.abs(got - expected)):.3g}: {trace}"
    return None


SCALAR_OPS = ["+", "-", "*", "/", "tanh", "sigmoid", "exp", "relu", "square", "log"]


def scalar_program(seed, steps=8):
    """A random program of Values, of Duals and of torch scalars: gradients and tangents agree."""
    rng = np.random.default_rng(seed)
    start = [float(v) for v in rng.normal(size=2)]
    values = [Value(v) for v in start]
    leaves = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in start]
    duals = [Dual(start[0], 1.0), Dual(start[1], 0.0)]  # the tangent of input 0
    pool, trace = [(values[0], leaves[0], duals[0]), (values[1], leaves[1], duals[1])], []
    for _ in range(steps):
        name = SCALAR_OPS[int(rng.integers(len(SCALAR_OPS)))]
        (a, ta, da), (b, tb, db) = (pool[int(rng.integers(len(pool)))] for _ in range(2))
        if name in ("+", "-", "*"):
            make = {"+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q}[name]
            pool.append((make(a, b), make(ta, tb), make(da, db)))
        elif name == "/":
            pool.append((a / (b * b + 0.5), ta / (tb * tb + 0.5), da / (db * db + 0.5)))
        elif name == "square":
            pool.append((a**2, ta**2, da**2))
        elif name == "log":
            pool.append(((a * a + 0.5).log(), (ta * ta + 0.5).log(), (da * da + 0.5).log()))
        elif name == "exp":
            pool.append((a.tanh().exp(), ta.tanh().exp(), da.tanh().exp()))
        elif name == "relu":
            pool.append((a.relu(), ta.relu(), None if da is None else _dual_relu(da)))
        else:
            pool.append((getattr(a, name)(), getattr(ta, name)(), getattr(da, name)()))
        trace.append(name)
    out, tout, dout = pool[-1]
    if not math.isclose(out.data, tout.item(), rel_tol=1e-10, abs_tol=1e-12):
        return f"Value differs: {' → '.join(trace)}"
    out.backward()
    if not tout.requires_grad:
        return None
    theirs = torch.autograd.grad(tout, leaves, allow_unused=True)
    for value, reference in zip(values, theirs, strict=True):
        expected = 0.0 if reference is None else reference.item()
        if not math.isclose(value.grad, expected, rel_tol=1e-9, abs_tol=1e-12):
            return f"Value gradient {value.grad} vs torch {expected}: {' → '.join(trace)}"
    expected = 0.0 if theirs[0] is None else theirs[0].item()
    if dout is not None and not math.isclose(dout.tangent, expected, rel_tol=1e-9, abs_tol=1e-12):
        return f"Dual tangent {dout.tangent} vs torch {expected}: {' → '.join(trace)}"
    return None


def _dual_relu(d):
    """Dual has no relu: the chapters write one, and so does the fuzzer (0 at the kink, as torch)."""
    return Dual(max(d.primal, 0.0), d.tangent if d.primal > 0 else 0.0)


def run_tensor_programs(count, first_seed=0):
    return [problem for seed in range(first_seed, first_seed + count) if (problem := tensor_program(seed))]


def run_scalar_programs(count, first_seed=0):
    return [problem for seed in range(first_seed, first_seed + count) if (problem := scalar_program(seed))]

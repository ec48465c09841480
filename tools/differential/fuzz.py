"""Random programs run by chainrule and by PyTorch side by side: values and gradients must agree.

A program starts from a few random leaves and applies random ops, each to operands from
the values made so far, in both engines at once; the loss is a random weighting of the last
value. Scalar programs do the same with :class:`~chainrule.Value` (reverse mode) and
:class:`~chainrule.Dual` (forward mode). Kinks are reached on purpose: relu and clamp make
exact zeros and exact bounds, which abs, relu, maximum and minimum then meet as ties.
"""

import math

import numpy as np
import torch

import chainrule.functional as F
from chainrule import Dual, Tensor, Value

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
        choices.append("matmul")
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
        rows = rng.integers(x.shape[0], size=int(rng.integers(1, 4)))  # repeats on purpose
        return name, x[rows], tx[torch.tensor(rows)]
    if name == "cat" and x.ndim:
        return name, F.cat([x, x * 2], axis=-1), torch.cat([tx, tx * 2], dim=-1)
    if name == "stack":
        return name, F.stack([x, -x]), torch.stack([tx, -tx])
    if name == "matmul":
        w = rng.normal(size=(x.shape[1], int(rng.integers(1, 4))))
        return name, x @ Tensor(w), tx @ torch.tensor(w)
    return "broadcast", x.broadcast_to(2, *x.shape), tx.broadcast_to((2, *x.shape))


def tensor_program(seed, steps=6):
    """One random program: None when both engines agree, else a description of the difference."""
    rng = np.random.default_rng(seed)
    shapes = [(2, 3), (3,), (2, 3), (1, 3)]
    arrays = [rng.normal(size=shapes[int(rng.integers(len(shapes)))]) for _ in range(2)]
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
    if not np.allclose(out.data, tout.detach().numpy(), rtol=1e-10, atol=1e-12):
        return f"value differs: {trace}"
    if not tout.requires_grad:
        return None
    upstream = rng.normal(size=out.shape)
    (out * Tensor(upstream)).sum().backward()
    theirs = torch.autograd.grad((tout * torch.tensor(upstream)).sum(), references, allow_unused=True)
    for i, (leaf, reference) in enumerate(zip(leaves, theirs, strict=True)):
        expected = np.zeros(leaf.shape) if reference is None else reference.numpy()
        got = np.zeros(leaf.shape) if leaf.grad is None else leaf.grad
        if not np.allclose(got, expected, rtol=1e-9, atol=1e-12):
            return f"gradient of leaf {i} differs by {np.abs(got - expected).max():.3g}: {trace}"
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

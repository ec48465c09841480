"""PyTorch's own test samples, run through chainrule: every float64 sample of torch's OpInfo
database whose op chainrule has, compared value for value and gradient for gradient.

Each entry of :data:`ADAPTERS` says how chainrule spells one of torch's ops: it takes the
sample's input and arguments, already turned into chainrule Tensors and numpy arrays, and
calls the op a reader would call. A sample chainrule does not support must be refused
with a message that names the function called (the adapter's ``names``); anything else
it raises is an unclear error, and any other value or gradient is a mismatch.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

import chainrule.functional as F
from chainrule import Tensor

__all__ = ["ADAPTERS", "WITHOUT_ADAPTER", "run_opinfo"]


@dataclass(frozen=True)
class Adapter:
    call: Callable
    names: tuple  # the prefixes a clear refusal of this call starts with


def _reduce(method):
    def call(x, dim=None, keepdim=False, **kwargs):
        axis = None if dim is None or dim == () or dim == [] else dim  # torch: an empty dim reduces all
        return getattr(x, method)(axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdim, **kwargs)

    return call


def _transpose(x, dim0, dim1):
    if not x.ndim:  # torch lets a 0-d tensor swap its dim 0 with itself
        return x.transpose()
    axes = list(range(x.ndim))
    axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
    return x.transpose(*axes)


def _unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    if dilation not in (1, (1, 1)):
        raise NotImplementedError("unfold: dilation is not supported")
    rows = x.im2col(kernel_size, _one(stride, "unfold"), _one(padding, "unfold"))
    n, r, c, k = rows.shape
    return rows.reshape(n, r * c, k).transpose(0, 2, 1)


def _one(value, op):
    """A pair (s, s) as s, as chainrule's windows are square."""
    if isinstance(value, tuple | list):
        if len(set(value)) != 1:
            raise ValueError(f"{op}: only equal pairs are supported, got {value!r}")
        return value[0]
    return value


def _max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    stride = None if stride in (None, (), []) else stride
    return F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _nll_loss(x, target, weight=None, ignore_index=-100, reduction="mean"):
    if weight is not None or reduction != "mean" or (target == ignore_index).any():
        raise NotImplementedError("nll_loss: only the mean over rows, without weights or ignored labels")
    return F.nll_loss(x, target)


def _cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    if (
        weight is not None
        or reduction != "mean"
        or label_smoothing
        or target.dtype.kind == "f"
        or (target == ignore_index).any()
    ):
        raise NotImplementedError("cross_entropy: only the mean over rows of integer labels")
    return F.cross_entropy(x, target)


def _mse_loss(x, target, reduction="mean"):
    if reduction != "mean":
        raise NotImplementedError("mse_loss: only the mean")
    return F.mse_loss(x, target)


def _softmax(function):
    def call(x, dim, dtype=None):
        if dtype is not None:
            raise NotImplementedError(f"{function.__name__}: dtype= is not supported")
        return function(x, axis=dim)

    return call


def _inner_bounds(array):
    """Two bounds that are entries of the input, so that some entries sit exactly on them."""
    if array.size < 2:
        return -0.5, 0.5
    low, high = np.sort(array.ravel())[[array.size // 4, 3 * array.size // 4]]
    return float(low), float(high)


def _binary(operator):
    def call(x, y, alpha=None):
        return operator(x, y if alpha is None else y * alpha)

    return call


def _div(x, y, rounding_mode=None):
    if rounding_mode is not None:
        raise NotImplementedError("divide: rounding_mode is not supported")
    return x / y


TENSOR = ("Tensor", "add", "subtract", "multiply", "divide", "Tensor / (divide)", "matmul", "power", "negate")
ADAPTERS = {
    "add": Adapter(_binary(lambda x, y: x + y), TENSOR),
    "sub": Adapter(_binary(lambda x, y: x - y), TENSOR),
    "rsub": Adapter(lambda x, y, alpha=None: y - (x if alpha is None else x * alpha), TENSOR),
    "mul": Adapter(lambda x, y: x * y, TENSOR),
    "div": Adapter(_div, TENSOR),
    "true_divide": Adapter(_div, TENSOR),
    "__radd__": Adapter(lambda x, y: y + x, TENSOR),
    "__rsub__": Adapter(lambda x, y: y - x, TENSOR),
    "__rmul__": Adapter(lambda x, y: y * x, TENSOR),
    "__rdiv__": Adapter(lambda x, y: y / x, TENSOR),
    "__rpow__": Adapter(lambda x, y: y**x, TENSOR),
    "matmul": Adapter(lambda x, y: x @ y, TENSOR),
    "__rmatmul__": Adapter(lambda x, y: y @ x, TENSOR),
    "pow": Adapter(lambda x, y: x**y, TENSOR),
    "neg": Adapter(lambda x: -x, TENSOR),
    "sum": Adapter(_reduce("sum"), ("sum", "Tensor.sum")),
    "mean": Adapter(_reduce("mean"), ("mean", "Tensor.mean")),
    "amax": Adapter(_reduce("max"), ("max", "Tensor.max")),
    "nn.functional.embedding": Adapter(lambda w, i, **kw: F.embedding(i, w), ("embedding",)),
    "nn.functional.unfold": Adapter(_unfold, ("unfold", "im2col")),
    "nn.functional.max_pool2d": Adapter(_max_pool2d, ("max_pool2d",)),
    "reshape": Adapter(lambda x, shape: x.reshape(shape), ("reshape", "Tensor.reshape")),
    "permute": Adapter(lambda x, dims: x.transpose(*dims), ("transpose", "Tensor.transpose")),
    "transpose": Adapter(_transpose, ("transpose",)),
    "broadcast_to": Adapter(lambda x, shape: x.broadcast_to(shape), ("broadcast_to", "Tensor.broadcast_to")),
    "T": Adapter(lambda x: x.T, ("transpose",)),
    "nn.functional.relu": Adapter(lambda x: x.relu(), ("relu",)),
    "tanh": Adapter(lambda x: x.tanh(), ("tanh",)),
    "sigmoid": Adapter(lambda x: x.sigmoid(), ("sigmoid",)),
    "exp": Adapter(lambda x: x.exp(), ("exp",)),
    "log": Adapter(lambda x: x.log(), ("log",)),
    "abs": Adapter(lambda x: x.abs(), ("abs",)),
    "clamp": Adapter(lambda x, min=None, max=None: x.clamp(min, max), ("clamp",)),
    "clamp (bounds from the input)": Adapter(lambda x, *rest, **kw: x.clamp(*_inner_bounds(x.data)), ("clamp",)),
    "clamp_min": Adapter(lambda x, min: x.clamp(min=min), ("clamp",)),
    "clamp_max": Adapter(lambda x, max: x.clamp(max=max), ("clamp",)),
    "maximum": Adapter(F.maximum, ("maximum",)),
    "minimum": Adapter(F.minimum, ("minimum",)),
    "where": Adapter(lambda x, condition, other: F.where(condition, x, other), ("where",)),
    "cat": Adapter(lambda xs, dim=0: F.cat(xs, axis=dim), ("cat",)),
    "stack": Adapter(lambda xs, dim=0: F.stack(xs, axis=dim), ("stack",)),
    "nn.functional.conv2d": Adapter(F.conv2d, ("conv2d",)),
    "log_softmax": Adapter(_softmax(F.log_softmax), ("log_softmax",)),
    "softmax": Adapter(_softmax(F.softmax), ("softmax",)),
    "nn.functional.nll_loss": Adapter(_nll_loss, ("nll_loss",)),
    "nn.functional.cross_entropy": Adapter(_cross_entropy, ("cross_entropy",)),
    "nn.functional.mse_loss": Adapter(_mse_loss, ("mse_loss",)),
    "__getitem__": Adapter(lambda x, key: x[key], ("index",)),
}

#: The rows of chainrule's ``RULES`` that no adapter calls, each with the reason. Every other row's
#: name is among some adapter's ``names`` (tests/engine/test_differential.py holds both lists).
WITHOUT_ADAPTER = {
    "scatter_add": "embedding's VJP (rows added at row indices): the embedding samples' gradients run it",
    "add_at": "indexing's VJP: the __getitem__ samples' gradients run it",
    "col2im": "im2col's VJP: the unfold samples' gradients run it",
    "dropout": "random: torch's samples draw their own mask, so no value can agree",
    "checkpoint": "runs a function of Tensors; torch's checkpoint is not an OpInfo op",
}


def _ours(value):
    """A torch sample's argument as chainrule takes it: float tensors become Tensors (leaves that
    require grad where torch's do), integer and bool tensors numpy arrays, sizes tuples."""
    if isinstance(value, torch.Tensor):
        array = value.detach().numpy().copy()
        if value.dtype.is_floating_point:
            return Tensor(array, requires_grad=value.requires_grad)
        return array
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, list | tuple):
        return type(value)(_ours(v) for v in value)
    return value


def _leaves(values):
    """The float leaves of a nested argument, in order (torch's and chainrule's line up)."""
    if isinstance(values, torch.Tensor | Tensor):
        return [values] if values.requires_grad else []
    if isinstance(values, list | tuple):
        return [leaf for value in values for leaf in _leaves(value)]
    if isinstance(values, dict):
        return _leaves(list(values.values()))
    return []


@dataclass
class Tally:
    compared: int = 0
    refused: int = 0
    reasons: dict = field(default_factory=dict)
    torch_refuses: int = 0
    mismatches: list = field(default_factory=list)
    unclear: list = field(default_factory=list)
    unmatched: list = field(default_factory=list)  # keys of ADAPTERS that no OpInfo of the database has


def _close(ours, theirs, what):
    theirs = np.asarray(theirs)
    if ours is None:
        ours = np.zeros_like(theirs)
    if np.shape(ours) != theirs.shape:
        return f"{what}: shape {np.shape(ours)} vs torch's {theirs.shape}"
    if not np.allclose(ours, theirs, rtol=1e-9, atol=1e-12, equal_nan=True):
        worst = np.nanmax(np.abs(np.asarray(ours) - theirs)) if theirs.size else 0
        return f"{what}: differs from torch by up to {worst:.3g}"
    return None


def compare_sample(name, adapter, sample, rng):
    """None when chainrule agrees with torch on the sample, else ("refused" | "torch refuses" |
    "unclear" | "mismatch", detail)."""
    args, kwargs = list(sample.args), dict(sample.kwargs)
    try:
        expected = OPINFO_CALLS[name](sample.input, *args, **kwargs)
    except Exception:  # torch refuses it too (a sample meant for an error)
        return ("torch refuses", "")
    if not isinstance(expected, torch.Tensor) or not expected.dtype.is_floating_point:
        expected = None  # several results (return_indices=True): chainrule must refuse
    ours_in, ours_args = _ours(sample.input), _ours(args)
    ours_kwargs = {k: _ours(v) for k, v in kwargs.items()}
    try:
        out = adapter.call(ours_in, *ours_args, **ours_kwargs)
    except (ValueError, TypeError, NotImplementedError, IndexError, ZeroDivisionError, RuntimeError) as error:
        message = str(error)
        if message.split(":")[0] in adapter.names:  # "name: ...", never numpy's "index 9 is out of bounds"
            return ("refused", message)
        return ("unclear", f"{type(error).__name__}: {message}")
    except Exception as error:  # noqa: BLE001 -- any other error is Python's, not chainrule's
        return ("unclear", f"{type(error).__name__}: {error}")
    if expected is None:
        return ("mismatch", "torch returns several results, chainrule one")
    if not isinstance(out, Tensor):
        return ("mismatch", f"chainrule returned a {type(out).__name__}, not a Tensor")
    problem = _close(out.data, expected.detach().numpy(), "value")
    if problem:
        return ("mismatch", problem)
    torch_leaves, our_leaves = _leaves([sample.input, args, kwargs]), _leaves([ours_in, ours_args, ours_kwargs])
    if not torch_leaves or not expected.requires_grad:
        return None
    upstream = rng.normal(size=expected.shape)
    theirs = torch.autograd.grad(expected, torch_leaves, torch.tensor(upstream), allow_unused=True)
    try:
        if out.requires_grad:
            out.backward(gradient=upstream)
    except Exception as error:  # noqa: BLE001
        return ("unclear", f"backward: {type(error).__name__}: {error}")
    for i, (leaf, reference) in enumerate(zip(our_leaves, theirs, strict=True)):
        reference = np.zeros(leaf.shape) if reference is None else reference.numpy(force=True)
        problem = _close(leaf.grad, reference, f"gradient of input {i}")
        if problem:
            return ("mismatch", problem)
    return None


#: torch's call for each name of :data:`ADAPTERS`: the OpInfo's own op, filled in as the database
#: is read, and the variants the harness adds to it.
OPINFO_CALLS: dict = {
    "clamp (bounds from the input)": lambda x, *rest, **kw: x.clamp(*_inner_bounds(x.detach().numpy())),
}


def run_opinfo(names=None, seed=0, db=None):
    """Every float64 sample of the ops in ``names`` (all of :data:`ADAPTERS` by default): a Tally.

    ``db`` is torch's OpInfo database (read when None). An adapter whose key no OpInfo has would
    compare nothing, silently: it is listed in the tally's ``unmatched``."""
    if db is None:
        from torch.testing._internal.common_methods_invocations import op_db as db  # needs expecttest

    rng, tally = np.random.default_rng(seed), Tally()
    wanted = {name for name in ADAPTERS if not names or name in names} - {"clamp (bounds from the input)"}
    tally.unmatched = sorted(wanted - {info.name for info in db})
    for info in db:
        if info.name not in ADAPTERS or (names and info.name not in names) or info.variant_test_name == "with_dtype":
            continue
        OPINFO_CALLS[info.name] = info.op
        variants = [info.name] + (["clamp (bounds from the input)"] if info.name == "clamp" else [])
        for sample in info.sample_inputs("cpu", torch.float64, requires_grad=True):
            for name in variants:
                _count(tally, info, name, compare_sample(name, ADAPTERS[name], sample, rng), sample)
    return tally


def _count(tally, info, name, result, sample):
    """Add one sample's result (None: compared and right) to ``tally``."""
    if result is None:
        tally.compared += 1
    elif result[0] == "refused":
        tally.refused += 1
        reason = f"{name}: {result[1].split(', got')[0][:110]}"  # the values left out
        tally.reasons[reason] = tally.reasons.get(reason, 0) + 1
    elif result[0] == "torch refuses":
        tally.torch_refuses += 1
    else:
        kind = tally.mismatches if result[0] == "mismatch" else tally.unclear
        variant = f".{info.variant_test_name}" if info.variant_test_name else ""
        kind.append(f"{name}{variant}: {result[1]}  [{_describe(sample)}]")


def _describe(sample):
    def shape(v):
        if isinstance(v, torch.Tensor):
            return f"{tuple(v.shape)}{'' if v.dtype.is_floating_point else str(v.dtype)[6:]}"
        if isinstance(v, list | tuple) and v and isinstance(v[0], torch.Tensor):
            return "[" + ", ".join(shape(x) for x in v) + "]"
        return repr(v)

    args = ", ".join(
        [shape(sample.input), *map(shape, sample.args), *(f"{k}={shape(v)}" for k, v in sample.kwargs.items())]
    )
    return args[:160]

"""Layers, an optimizer, toy data and the one-hidden-layer MLP of d2l §5.3.

Parameters are plain ``Tensor(..., requires_grad=True)`` leaves; a model is an object
whose ``parameters()`` returns them in a list.  Everything is built from the Tensor
operations of :mod:`chainrule.tensor`, so every gradient comes from its rule table.

Orientation.  As in PyTorch, a weight matrix has shape (outputs, inputs) and a batch
holds one example per *row*: a layer computes ``Y = X Wᵀ + b``, which is ``y = W x + b``
for every row x of X.  The column-vector formulas of the text (``z = W₁ x``,
``∂J/∂W₂ = (∂J/∂o) hᵀ + λW₂``) thus become, for a batch, ``Z = X W₁ᵀ`` and
``∂J/∂W₂ = (∂J/∂O)ᵀ H + λW₂`` -- the sum over the rows of the per-example products.
"""

from itertools import pairwise
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from .functional import cross_entropy, l2_penalty, mse_loss
from .tensor import Tensor

__all__ = [
    "Linear",
    "MLP",
    "Optimizer",
    "SGD",
    "Adam",
    "D2LForward",
    "d2l_forward",
    "D2LMLP",
    "make_classification",
    "ACTIVATIONS",
]

ACTIVATIONS = {"relu": Tensor.relu, "tanh": Tensor.tanh, "sigmoid": Tensor.sigmoid}
_LOSSES = ("cross_entropy", "mse")


# --------------------------------------------------------------------------- checks and helpers


def _size(n, name, where):
    if isinstance(n, bool) or not isinstance(n, Integral) or n <= 0:
        raise ValueError(f"{where}: {name} must be a positive integer, got {n!r}")
    return int(n)


def _float_dtype(dtype, where):
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        resolved = None
    if resolved not in (np.float32, np.float64):
        raise TypeError(f"{where}: dtype {dtype!r} is not supported; use np.float32 or np.float64")
    return resolved


def _generator(rng, where, name="rng"):
    """``rng`` as a numpy Generator: None means seed 0 (reproducible), an int is a seed."""
    if rng is None:
        return np.random.default_rng(0)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, Integral) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"{where}: {name} must be None, an int seed or a np.random.Generator, got {type(rng).__name__}")


def _uniform(rng, shape, fan_in, dtype, label):
    """A parameter drawn from U(-1/√fan_in, 1/√fan_in), PyTorch's default for Linear."""
    bound = 1.0 / np.sqrt(fan_in)
    return Tensor(rng.uniform(-bound, bound, shape).astype(dtype), requires_grad=True, label=label)


def _as_input(x, dtype, where):
    """``x`` (a Tensor or a numpy array) as a Tensor of the parameters' dtype, or an error."""
    if not isinstance(x, (Tensor, np.ndarray)):
        raise TypeError(f"{where}: expected a Tensor or a float numpy array, got {type(x).__name__}")
    if x.dtype != dtype:
        raise TypeError(
            f"{where}: input has dtype {x.dtype} but the parameters have dtype {dtype}; "
            f"convert the input first, e.g. x.astype(np.{dtype})"
        )
    return x if isinstance(x, Tensor) else Tensor(x)


def _activation(name, where):
    if name not in ACTIVATIONS:
        raise ValueError(f"{where}: activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]


# --------------------------------------------------------------------------- layers


class Linear:
    """``y = x Wᵀ + b`` with W of shape (out_features, in_features), as ``torch.nn.Linear``.

    ``x`` has shape (..., in_features), e.g. (batch, in_features) or (in_features,).
    W and b start from U(-1/√in_features, 1/√in_features), drawn from ``rng`` (an int
    seed or a np.random.Generator; None means seed 0, so results are reproducible).
    """

    def __init__(self, in_features, out_features, bias=True, *, rng=None, dtype=np.float64, label=""):
        self.in_features = _size(in_features, "in_features", "Linear")
        self.out_features = _size(out_features, "out_features", "Linear")
        dtype, rng = _float_dtype(dtype, "Linear"), _generator(rng, "Linear")
        shape = (self.out_features, self.in_features)
        self.weight = _uniform(rng, shape, self.in_features, dtype, f"W{label}")
        self.bias = _uniform(rng, (self.out_features,), self.in_features, dtype, f"b{label}") if bias else None

    def __call__(self, x):
        x = _as_input(x, self.weight.dtype, "Linear")
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(
                f"Linear: input of shape {x.shape} does not fit the layer: its last dim must be "
                f"in_features={self.in_features} (weight shape {self.weight.shape})"
            )
        y = x @ self.weight.T
        return y if self.bias is None else y + self.bias

    def parameters(self):
        """[W, b], or [W] without bias."""
        return [self.weight] if self.bias is None else [self.weight, self.bias]

    def __repr__(self):
        return f"Linear({self.in_features}, {self.out_features}, bias={self.bias is not None})"


class MLP:
    """Linear layers of widths ``sizes`` with ``activation`` between them (none after the last).

    ``MLP([d, h, q])`` computes ``φ(X W₁ᵀ + b₁) W₂ᵀ + b₂``; φ is "relu", "tanh" or "sigmoid".
    The layers draw their initial weights, one after the other, from one ``rng``.
    """

    def __init__(self, sizes, activation="relu", bias=True, *, rng=None, dtype=np.float64):
        sizes = list(sizes)
        if len(sizes) < 2:
            raise ValueError(f"MLP: sizes needs at least two widths (inputs and outputs), got {sizes}")
        sizes = [_size(n, f"sizes[{i}]", "MLP") for i, n in enumerate(sizes)]
        self.activation = activation
        self._phi = _activation(activation, "MLP")
        rng = _generator(rng, "MLP")
        pairs = pairwise(sizes)
        self.layers = [Linear(m, n, bias, rng=rng, dtype=dtype, label=f"{i + 1}") for i, (m, n) in enumerate(pairs)]

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = self._phi(x)
        return x

    def parameters(self):
        """The parameters of all layers, first layer first: [W1, b1, W2, b2, ...]."""
        return [p for layer in self.layers for p in layer.parameters()]


# --------------------------------------------------------------------------- optimizers


def _check_number(where, name, value, ok, bound):
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(float(value)) or not ok(value):
        raise ValueError(f"{where}: {name} must be a finite number {bound}, got {value!r}")
    return float(value)


class Optimizer:
    """What every optimizer shares: its list of parameters, ``zero_grad`` and the memory of its state.

    A subclass defines ``update(i, p, g)``, the change of parameter ``p`` (the i-th) for
    its gradient ``g``, and keeps any per-parameter arrays in ``self.state``;
    ``state_per_param`` says how many arrays of a parameter's size that is.
    """

    state_per_param = 0
    weight_decay = 0.0  # a subclass's __init__ sets its own

    def __init__(self, params):
        where = type(self).__name__
        if callable(params):
            raise TypeError(
                f"{where}: params is the method {getattr(params, '__name__', params)!r}, not its "
                f"result; call it: {where}(model.parameters(), lr=...)"
            )
        if isinstance(params, Tensor) or not hasattr(params, "__iter__"):
            raise TypeError(
                f"{where}: params must be a list of Tensors, got {type(params).__name__}; "
                "pass model.parameters() or [W1, W2, ...]"
            )
        self.params = list(params)
        if not self.params:
            raise ValueError(
                f"{where}: params is empty; pass the model's parameters(): {where}(model.parameters(), lr)"
            )
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor) or not p.requires_grad:
                raise TypeError(f"{where}: params[{i}] must be a Tensor with requires_grad=True, got {p!r}")
        self.state = {}  # parameter index -> tuple of arrays the optimizer keeps between steps

    def step(self):
        """Update every parameter that has a gradient, in place; parameters without grad are skipped."""
        for i, p in enumerate(self.params):
            if p.grad is not None:
                self.update(i, p, p.grad + self.weight_decay * p.data if self.weight_decay else p.grad)

    def update(self, i, p, g):
        """Change parameter ``p`` (the i-th) for its gradient ``g``: what each subclass defines."""
        raise NotImplementedError(f"{type(self).__name__} defines no update(i, p, g)")

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's ``.grad`` (call it before each backward pass).

        As in PyTorch, ``set_to_none=True`` drops the arrays, so the next backward pass
        allocates them again; ``False`` fills them with zeros and keeps the memory.
        """
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad.fill(0)

    def state_bytes(self):
        """Bytes of the arrays the optimizer keeps between steps (its *state*)."""
        return sum(array.nbytes for arrays in self.state.values() for array in arrays)


class SGD(Optimizer):
    """Stochastic gradient descent, as ``torch.optim.SGD`` (no dampening, no Nesterov).

    ``step()`` updates every parameter W that has a gradient, in place, with
    ``g = ∂L/∂W + weight_decay · W``.  Without momentum ``W ← W - lr g``, and the
    optimizer keeps no state.  With momentum μ it keeps one array per parameter, the
    velocity ``v ← μ v + g`` (``v = g`` at the first step), and ``W ← W - lr v``.  The
    weight-decay term is the gradient of ``weight_decay/2 · ‖W‖²``, so it is the same
    as adding that penalty to the loss.
    """

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        super().__init__(params)
        self.lr = _check_number("SGD", "lr", lr, lambda v: v > 0, "> 0")
        self.momentum = _check_number("SGD", "momentum", momentum, lambda v: 0 <= v < 1, "in [0, 1)")
        self.weight_decay = _check_number("SGD", "weight_decay", weight_decay, lambda v: v >= 0, ">= 0")
        self.state_per_param = 1 if self.momentum else 0

    def update(self, i, p, g):
        if self.momentum:
            if i in self.state:
                (velocity,) = self.state[i]
                velocity *= self.momentum
                velocity += g
            else:
                velocity = np.array(g, dtype=p.data.dtype)
                self.state[i] = (velocity,)
            g = velocity
        p.data -= self.lr * g


class Adam(Optimizer):
    """Adam, as ``torch.optim.Adam``: two arrays of state per parameter.

    With ``g = ∂L/∂W + weight_decay · W`` at step t it keeps the running means
    ``m ← β₁ m + (1 - β₁) g`` and ``v ← β₂ v + (1 - β₂) g²`` and updates
    ``W ← W - lr · m̂ / (√v̂ + eps)``, where ``m̂ = m / (1 - β₁ᵗ)`` and ``v̂ = v / (1 - β₂ᵗ)``
    undo the bias of starting both at 0.
    """

    state_per_param = 2

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params)
        self.lr = _check_number("Adam", "lr", lr, lambda v: v > 0, "> 0")
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"Adam: betas must be a pair (beta1, beta2), got {betas!r}")
        self.betas = tuple(
            _check_number("Adam", f"betas[{k}]", b, lambda v: 0 <= v < 1, "in [0, 1)") for k, b in enumerate(betas)
        )
        self.eps = _check_number("Adam", "eps", eps, lambda v: v > 0, "> 0")
        self.weight_decay = _check_number("Adam", "weight_decay", weight_decay, lambda v: v >= 0, ">= 0")
        self.steps = {}

    def update(self, i, p, g):
        beta1, beta2 = self.betas
        if i not in self.state:
            self.state[i] = (np.zeros_like(p.data), np.zeros_like(p.data))
        m, v = self.state[i]
        t = self.steps[i] = self.steps.get(i, 0) + 1
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * g * g
        denominator = np.sqrt(v / (1 - beta2**t)) + self.eps
        p.data -= (self.lr / (1 - beta1**t)) * m / denominator


# --------------------------------------------------------------------------- the d2l §5.3 model


class D2LForward(NamedTuple):
    """Every intermediate of :func:`d2l_forward`, one example per row."""

    z: Tensor  # (batch, h)   Z = X W₁ᵀ (+ b₁)
    h: Tensor  # (batch, h)   H = φ(Z)
    o: Tensor  # (batch, q)   O = H W₂ᵀ
    L: Tensor  # ()           L = l(O, y), mean over the batch
    s: Tensor  # ()           s = λ/2 (‖W₁‖²_F + ‖W₂‖²_F)
    J: Tensor  # ()           J = L + s


def d2l_forward(X, y, W1, W2, *, lam=0.0, b1=None, activation="relu", loss="cross_entropy"):
    """The forward pass of d2l §5.3 for a batch, returning z, h, o, L, s and J.

    ``z = W₁x (+ b₁)``, ``h = φ(z)``, ``o = W₂h``, ``L = l(o, y)``,
    ``s = λ/2 (‖W₁‖²_F + ‖W₂‖²_F)``, ``J = L + s``.  W₁ has shape (h, d) and W₂ shape
    (q, h); X holds one example per row, shape (batch, d), so ``Z = X W₁ᵀ`` and
    ``O = H W₂ᵀ``.  The optional hidden bias b₁ (d2l exercise 2) is not penalized.
    ``loss="cross_entropy"`` takes integer labels y of shape (batch,); ``loss="mse"``
    takes targets of shape (batch, q).  Both average over the batch.

    z, h and o keep their ``.grad`` after ``J.backward()`` (``retain_grad``), so
    ∂J/∂z and ∂J/∂o can be read off and compared with the hand derivation.
    """
    where = "d2l_forward"
    phi = _activation(activation, where)
    if loss not in _LOSSES:
        raise ValueError(f"{where}: loss must be one of {list(_LOSSES)}, got {loss!r}")
    X = _as_input(X, W1.dtype, where)
    if X.ndim != 2 or W1.ndim != 2 or W2.ndim != 2 or X.shape[1] != W1.shape[1] or W2.shape[1] != W1.shape[0]:
        raise ValueError(
            f"{where}: shapes X {X.shape}, W1 {W1.shape}, W2 {W2.shape} do not fit: need X (batch, d), "
            "W1 (h, d), W2 (q, h)"
        )
    if b1 is not None and b1.shape != (W1.shape[0],):
        raise ValueError(f"{where}: b1 has shape {b1.shape} but W1 {W1.shape} needs b1 of shape ({W1.shape[0]},)")
    z = X @ W1.T if b1 is None else X @ W1.T + b1
    h = phi(z)
    o = h @ W2.T
    for t in (z, h, o):
        t.retain_grad()
    L = cross_entropy(o, y) if loss == "cross_entropy" else mse_loss(o, y)
    s = l2_penalty([W1, W2], lam)
    J = L + s
    for name, tensor in zip("zhoLsJ", (z, h, o, L, s, J), strict=True):  # d2l's names, shown in drawings
        tensor.label = name
    return D2LForward(z, h, o, L, s, J)


class D2LMLP:
    """The d2l §5.3 network as a model: parameters W1 (h, d), W2 (q, h) and optionally b1 (h,).

    ``model(X, y)`` returns :class:`D2LForward` from :func:`d2l_forward` with ``lam``.
    ``penalized()`` lists the weights in the penalty s (W1, W2; never b1).  Initial
    values are drawn from U(-1/√fan_in, 1/√fan_in) using ``rng``.
    """

    def __init__(
        self, num_inputs, num_hiddens, num_outputs, *, lam=0.0, hidden_bias=False,
        activation="relu", loss="cross_entropy", rng=None, dtype=np.float64,
    ):  # fmt: skip
        d = _size(num_inputs, "num_inputs", "D2LMLP")
        h = _size(num_hiddens, "num_hiddens", "D2LMLP")
        q = _size(num_outputs, "num_outputs", "D2LMLP")
        _activation(activation, "D2LMLP")
        if loss not in _LOSSES:
            raise ValueError(f"D2LMLP: loss must be one of {list(_LOSSES)}, got {loss!r}")
        if isinstance(lam, bool) or not isinstance(lam, Real) or not float(lam) >= 0:
            raise ValueError(f"D2LMLP: lam must be a number >= 0, got {lam!r}")
        dtype, rng = _float_dtype(dtype, "D2LMLP"), _generator(rng, "D2LMLP")
        self.lam, self.activation, self.loss = lam, activation, loss
        self.W1 = _uniform(rng, (h, d), d, dtype, "W1")
        self.W2 = _uniform(rng, (q, h), h, dtype, "W2")
        self.b1 = _uniform(rng, (h,), d, dtype, "b1") if hidden_bias else None

    def __call__(self, X, y):
        """The forward pass on a batch: a :class:`D2LForward` (z, h, o, L, s, J)."""
        return d2l_forward(X, y, self.W1, self.W2, lam=self.lam, b1=self.b1, activation=self.activation, loss=self.loss)

    def parameters(self):
        """[W1, W2], plus b1 when the hidden layer has a bias."""
        return [self.W1, self.W2] + ([] if self.b1 is None else [self.b1])

    def penalized(self):
        """The weights in the penalty s: [W1, W2] (the bias is not penalized)."""
        return [self.W1, self.W2]


# --------------------------------------------------------------------------- data


def make_classification(num_examples, num_inputs, num_classes, *, seed=0, spread=1.0, dtype=np.float64):
    """Gaussian blobs: ``(X, y)`` with X of shape (num_examples, num_inputs), y int64 labels.

    Each class c has a center μ_c ~ N(0, 2² I); each label y is uniform on
    {0, ..., num_classes - 1} and its example is ``x = μ_y + spread · ε`` with ε ~ N(0, I).
    The same ``seed`` gives the same data.  Nothing is downloaded.
    """
    where = "make_classification"
    n = _size(num_examples, "num_examples", where)
    d = _size(num_inputs, "num_inputs", where)
    k = _size(num_classes, "num_classes", where)
    if isinstance(spread, bool) or not isinstance(spread, Real) or not float(spread) >= 0:
        raise ValueError(f"{where}: spread must be a number >= 0, got {spread!r}")
    dtype, rng = _float_dtype(dtype, where), _generator(seed, where, "seed")
    centers = 2.0 * rng.standard_normal((k, d))
    y = rng.integers(0, k, size=n).astype(np.int64)
    X = centers[y] + spread * rng.standard_normal((n, d))
    return X.astype(dtype), y

"""Tests of chainrule.nn: layers, SGD, toy data and the d2l §5.3 one-hidden-layer MLP.

Float64 PyTorch is the reference for the layers and for training step by step.  The
gradients of the d2l model are checked three ways: against the hand-derived formulas
∂J/∂W₂ = (∂J/∂o) hᵀ + λW₂ and ∂J/∂W₁ = (∂J/∂z) xᵀ + λW₁ written out in numpy here,
against torch autograd and against jax.grad.
"""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from chainrule.functional import cross_entropy, l2_penalty
from chainrule.nn import D2LMLP, MLP, SGD, Adam, Linear, d2l_forward, make_classification
from chainrule.tensor import Tensor

TORCH_ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}


def raises(exception, text):
    return pytest.raises(exception, match=re.escape(text))


def to_torch(tensors):
    """Float64 torch leaves holding copies of the chainrule parameters' values."""
    return [torch.tensor(t.data.copy(), requires_grad=True) for t in tensors]


def assert_close(actual, expected, rtol=1e-10, atol=1e-12, **kwargs):
    if isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    np.testing.assert_allclose(actual, np.asarray(expected), rtol=rtol, atol=atol, **kwargs)


# --------------------------------------------------------------------------- Linear and MLP vs torch


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (3,), (2, 4, 3)])
def test_linear_matches_torch(bias, shape):
    rng = np.random.default_rng(1)
    layer = Linear(3, 4, bias, rng=rng)
    data = rng.standard_normal(shape)
    x = Tensor(data.copy(), requires_grad=True)
    out = layer(x)
    x_t = torch.tensor(data, requires_grad=True)
    params_t = to_torch(layer.parameters())
    expected = F.linear(x_t, *params_t)
    assert out.shape == tuple(expected.shape)
    assert_close(out.data, expected)
    upstream = rng.standard_normal(out.shape)
    out.backward(gradient=upstream)
    expected.backward(gradient=torch.tensor(upstream))
    assert_close(x.grad, x_t.grad)
    for p, p_t in zip(layer.parameters(), params_t, strict=True):
        assert_close(p.grad, p_t.grad, err_msg=p.label)


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid"])
def test_mlp_matches_torch(activation):
    rng = np.random.default_rng(2)
    model = MLP([3, 5, 4, 2], activation=activation, rng=rng)
    assert [p.shape for p in model.parameters()] == [(5, 3), (5,), (4, 5), (4,), (2, 4), (2,)]
    data = rng.standard_normal((6, 3))
    out = model(data)
    params_t = to_torch(model.parameters())
    h = torch.tensor(data)
    for i in range(0, len(params_t), 2):
        h = F.linear(h, params_t[i], params_t[i + 1])
        if i < len(params_t) - 2:
            h = TORCH_ACTIVATIONS[activation](h)
    assert_close(out.data, h)
    upstream = rng.standard_normal(out.shape)
    out.backward(gradient=upstream)
    h.backward(gradient=torch.tensor(upstream))
    for p, p_t in zip(model.parameters(), params_t, strict=True):
        assert_close(p.grad, p_t.grad, err_msg=p.label)


def test_initialization_is_torch_range_and_reproducible():
    layer = Linear(16, 8)
    bound = 1 / np.sqrt(16)
    for p in layer.parameters():
        assert p.requires_grad and p.dtype == np.float64
        assert np.abs(p.data).max() <= bound
        assert np.abs(p.data).max() > bound / 2  # spread over the range, not squeezed near 0
    again = Linear(16, 8)
    assert all(np.array_equal(a.data, b.data) for a, b in zip(layer.parameters(), again.parameters(), strict=True))
    other = Linear(16, 8, rng=np.random.default_rng(5))
    assert not np.array_equal(layer.weight.data, other.weight.data)
    assert np.array_equal(Linear(16, 8, rng=5).weight.data, other.weight.data)
    model = MLP([4, 4, 4])  # one generator for all layers: the layers differ
    assert not np.array_equal(model.layers[0].weight.data, model.layers[1].weight.data)


def test_float32_layer_stays_float32():
    layer = Linear(3, 2, dtype=np.float32)
    out = layer(np.ones((4, 3), dtype=np.float32))
    assert out.dtype == np.float32 and all(p.dtype == np.float32 for p in layer.parameters())


def test_linear_input_errors():
    layer = Linear(3, 2)
    with raises(
        ValueError,
        "Linear: input of shape (4, 5) does not fit the layer: "
        "its last dim must be in_features=3 (weight shape (2, 3))",
    ):
        layer(np.ones((4, 5)))
    with raises(ValueError, "Linear: input of shape ()"):
        layer(Tensor(1.0))
    with raises(TypeError, "Linear: input has dtype float32 but the parameters have dtype float64"):
        layer(np.ones((4, 3), dtype=np.float32))
    with raises(TypeError, "Linear: input has dtype int64"):
        layer(np.ones((4, 3), dtype=np.int64))
    with raises(TypeError, "Linear: expected a Tensor or a float numpy array, got list"):
        layer([[1.0, 2.0, 3.0]])
    with raises(ValueError, "Linear: input of shape (2, 4)"):  # an MLP reports the layer that failed
        MLP([3, 4, 2])(np.ones((2, 4)))


@pytest.mark.parametrize(
    "make, exception, text",
    [
        (lambda: Linear(0, 3), ValueError, "Linear: in_features must be a positive integer, got 0"),
        (lambda: Linear(3, 2.5), ValueError, "Linear: out_features must be a positive integer, got 2.5"),
        (lambda: Linear(3, True), ValueError, "Linear: out_features must be a positive integer, got True"),
        (lambda: Linear(3, 2, dtype=np.int64), TypeError, "Linear: dtype <class 'numpy.int64'> is not supported"),
        (lambda: Linear(3, 2, rng="seed"), TypeError, "Linear: rng must be None, an int seed or a np.random.Generator"),
        (
            lambda: MLP([3, 4], activation="gelu"),
            ValueError,
            "MLP: activation must be one of ['relu', 'sigmoid', 'tanh'], got 'gelu'",
        ),  # noqa: E501
        (lambda: MLP([3]), ValueError, "MLP: sizes needs at least two widths (inputs and outputs), got [3]"),
        (lambda: MLP([3, 0, 2]), ValueError, "MLP: sizes[1] must be a positive integer, got 0"),
        (lambda: MLP([3, -2]), ValueError, "MLP: sizes[1] must be a positive integer, got -2"),
    ],
)
def test_construction_errors(make, exception, text):
    with raises(exception, text):
        make()


# --------------------------------------------------------------------------- the d2l model, three ways


PHI = {  # φ(Z) and φ'(Z), written out in numpy
    "relu": (lambda z: np.maximum(z, 0), lambda z: (z > 0).astype(z.dtype)),
    "tanh": (np.tanh, lambda z: 1 - np.tanh(z) ** 2),
    "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda z: np.exp(-z) / (1 + np.exp(-z)) ** 2),
}


def hand_backprop(X, y, W1, W2, b1, lam, activation, loss):
    """The d2l derivation in numpy for a batch with examples as rows.

    Per example ∂J/∂W₂ = (∂J/∂o) hᵀ + λW₂; summing over the rows gives dOᵀ H + λW₂.
    ``with_decay=False`` versions leave out the λW terms (for the negative control).
    """
    phi, dphi = PHI[activation]
    Z = X @ W1.T + (0 if b1 is None else b1)
    H = phi(Z)
    O = H @ W2.T
    if loss == "cross_entropy":
        P = np.exp(O - O.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        dO = (P - np.eye(O.shape[1])[y]) / len(X)  # ∂J/∂o for each row (the loss is a mean)
    else:
        dO = 2 * (O - y) / O.size
    dZ = (dO @ W2) * dphi(Z)  # ∂J/∂h = W₂ᵀ ∂J/∂o, then ⊙ φ'(z)
    return {
        "Z": Z, "H": H, "O": O, "dO": dO, "dZ": dZ,
        "W2_data_term": dO.T @ H, "W1_data_term": dZ.T @ X,
        "W2": dO.T @ H + lam * W2, "W1": dZ.T @ X + lam * W1, "b1": dZ.sum(axis=0),
    }  # fmt: skip


def d2l_case(hidden_bias, activation, loss, lam=0.3, seed=3):
    X, labels = make_classification(7, 4, 3, seed=seed)
    y = labels if loss == "cross_entropy" else np.random.default_rng(seed).standard_normal((7, 3))
    model = D2LMLP(4, 5, 3, lam=lam, hidden_bias=hidden_bias, activation=activation, loss=loss, rng=seed)
    return model, X, y


CASES = [
    (bias, act, loss)
    for bias in (False, True)
    for act in ("relu", "tanh", "sigmoid")
    for loss in ("cross_entropy", "mse")
]  # noqa: E501


@pytest.mark.parametrize("hidden_bias, activation, loss", CASES)
def test_d2l_gradients_match_hand_derivation(hidden_bias, activation, loss):
    model, X, y = d2l_case(hidden_bias, activation, loss)
    assert model.W1.shape == (5, 4) and model.W2.shape == (3, 5)  # (h, d) and (q, h), as in d2l
    f = model(X, y)
    f.J.backward()
    W1, W2, b1 = model.W1.data, model.W2.data, None if model.b1 is None else model.b1.data
    hand = hand_backprop(X, y, W1, W2, b1, model.lam, activation, loss)
    for name in ("z", "h", "o"):
        assert_close(getattr(f, name).data, hand[name.upper()])
    s = model.lam / 2 * ((W1**2).sum() + (W2**2).sum())
    assert_close(f.s.data, s)
    assert_close(f.J.data, f.L.data + s)
    assert_close(f.o.grad, hand["dO"])  # ∂J/∂o and ∂J/∂z are kept on the intermediates
    assert_close(f.z.grad, hand["dZ"])
    assert_close(model.W2.grad, hand["W2"])
    assert_close(model.W1.grad, hand["W1"])
    if hidden_bias:
        assert_close(model.b1.grad, hand["b1"])  # the bias is not penalized: no λ b1 term
    # The λW terms matter: leave them out and the hand formulas no longer agree.
    assert np.abs(model.W2.grad - hand["W2_data_term"]).max() > 1e-3
    assert np.abs(model.W1.grad - hand["W1_data_term"]).max() > 1e-3
    assert_close(model.W2.grad - hand["W2_data_term"], model.lam * W2)


def torch_d2l(X, y, W1, W2, b1, lam, activation, loss):
    Z = torch.tensor(X) @ W1.T + (0 if b1 is None else b1)
    O = TORCH_ACTIVATIONS[activation](Z) @ W2.T
    L = F.cross_entropy(O, torch.tensor(y)) if loss == "cross_entropy" else F.mse_loss(O, torch.tensor(y))
    return L + lam / 2 * ((W1**2).sum() + (W2**2).sum())


@pytest.mark.parametrize("hidden_bias, activation, loss", CASES)
def test_d2l_gradients_match_torch(hidden_bias, activation, loss):
    model, X, y = d2l_case(hidden_bias, activation, loss)
    f = model(X, y)
    f.J.backward()
    params_t = to_torch(model.parameters())
    W1, W2, b1 = params_t if hidden_bias else (*params_t, None)
    J = torch_d2l(X, y, W1, W2, b1, model.lam, activation, loss)
    J.backward()
    assert_close(f.J.data, J)
    for p, p_t in zip(model.parameters(), params_t, strict=True):
        assert_close(p.grad, p_t.grad, err_msg=p.label)


@pytest.mark.parametrize("hidden_bias, activation, loss", [(False, "relu", "cross_entropy"), (True, "tanh", "mse")])
def test_d2l_gradients_match_jax(hidden_bias, activation, loss):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    model, X, y = d2l_case(hidden_bias, activation, loss)
    f = model(X, y)
    f.J.backward()
    phi = {"relu": jax.nn.relu, "tanh": jnp.tanh, "sigmoid": jax.nn.sigmoid}[activation]

    def objective(params):
        W1, W2 = params[0], params[1]
        Z = X @ W1.T + (params[2] if hidden_bias else 0)
        O = phi(Z) @ W2.T
        if loss == "cross_entropy":
            L = -jnp.mean(jax.nn.log_softmax(O, axis=1)[jnp.arange(len(X)), y])
        else:
            L = jnp.mean((O - y) ** 2)
        return L + model.lam / 2 * (jnp.sum(W1**2) + jnp.sum(W2**2))

    params = [jnp.asarray(p.data) for p in model.parameters()]
    assert params[0].dtype == jnp.float64
    J, grads = jax.value_and_grad(objective)(params)
    assert_close(f.J.data, J)
    for p, g in zip(model.parameters(), grads, strict=True):
        assert_close(p.grad, g, err_msg=p.label)


def test_d2l_forward_errors():
    model, X, y = d2l_case(True, "relu", "cross_entropy")
    with raises(ValueError, "d2l_forward: shapes X (7, 3), W1 (5, 4), W2 (3, 5) do not fit"):
        model(X[:, :3], y)
    with raises(ValueError, "d2l_forward: b1 has shape (4,) but W1 (5, 4) needs b1 of shape (5,)"):
        d2l_forward(X, y, model.W1, model.W2, b1=Tensor(np.zeros(4)))
    with raises(ValueError, "d2l_forward: loss must be one of ['cross_entropy', 'mse'], got 'hinge'"):
        d2l_forward(X, y, model.W1, model.W2, loss="hinge")
    with raises(ValueError, "D2LMLP: lam must be a number >= 0, got -0.1"):
        D2LMLP(4, 5, 3, lam=-0.1)
    with raises(ValueError, "D2LMLP: num_hiddens must be a positive integer, got 0"):
        D2LMLP(4, 0, 3)


# --------------------------------------------------------------------------- SGD and training


def test_sgd_step_matches_torch_and_skips_params_without_grad():
    rng = np.random.default_rng(4)
    a, b = Tensor(rng.standard_normal((3, 2)), requires_grad=True), Tensor(rng.standard_normal(4), requires_grad=True)
    a_t, b_t = to_torch([a, b])
    a.grad = rng.standard_normal(a.shape)
    a_t.grad = torch.tensor(a.grad.copy())
    b_before = b.data.copy()
    expected = a.data - 0.1 * (a.grad + 0.01 * a.data)
    optimizer = SGD([a, b], lr=0.1, weight_decay=0.01)
    optimizer.step()
    torch.optim.SGD([a_t, b_t], lr=0.1, weight_decay=0.01).step()
    assert_close(a.data, expected)
    assert_close(a.data, a_t)
    assert np.array_equal(b.data, b_before)  # no gradient, no update (not even decay), as in torch
    optimizer.zero_grad()
    assert a.grad is None and b.grad is None


def train_chainrule(model, X, y, optimizer, steps, lam=0.0):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = cross_entropy(model(X), y)
        objective = loss + l2_penalty(model.parameters(), lam) if lam else loss
        objective.backward()
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses)


def test_training_matches_torch_step_for_step():
    X, y = make_classification(64, 4, 3, seed=7)
    model = MLP([4, 16, 3], activation="tanh", rng=7)
    params_t = to_torch(model.parameters())
    losses = train_chainrule(model, X, y, SGD(model.parameters(), lr=0.5, weight_decay=1e-2), steps=30)

    optimizer_t = torch.optim.SGD(params_t, lr=0.5, weight_decay=1e-2)
    X_t, y_t = torch.tensor(X), torch.tensor(y)
    losses_t = []
    for _ in range(30):
        optimizer_t.zero_grad()
        W1, b1, W2, b2 = params_t
        loss = F.cross_entropy(F.linear(torch.tanh(F.linear(X_t, W1, b1)), W2, b2), y_t)
        loss.backward()
        optimizer_t.step()
        losses_t.append(loss.item())

    assert_close(losses, losses_t, rtol=1e-9)
    for p, p_t in zip(model.parameters(), params_t, strict=True):
        assert_close(p.data, p_t, rtol=1e-9, err_msg=p.label)
    assert losses[-1] < 0.5 * losses[0]  # it learns
    assert np.mean(np.diff(losses) < 0) > 0.8  # and mostly step by step


def test_weight_decay_equals_l2_penalty_in_the_loss():
    X, y = make_classification(32, 3, 2, seed=8)
    lam = 0.05
    decayed, penalized, plain = (MLP([3, 8, 2], rng=8) for _ in range(3))
    losses_decay = train_chainrule(decayed, X, y, SGD(decayed.parameters(), 0.3, weight_decay=lam), 30)
    losses_penalty = train_chainrule(penalized, X, y, SGD(penalized.parameters(), 0.3), 30, lam=lam)
    train_chainrule(plain, X, y, SGD(plain.parameters(), 0.3), 30)
    assert_close(losses_decay, losses_penalty)
    for a, b, c in zip(decayed.parameters(), penalized.parameters(), plain.parameters(), strict=True):
        assert_close(a.data, b.data)
        assert np.abs(a.data - c.data).max() > 1e-3  # the decay does change the trajectory


@pytest.mark.parametrize(
    "kwargs, exception, text",
    [
        ({"lr": 0}, ValueError, "SGD: lr must be a finite number > 0, got 0"),
        ({"lr": -0.1}, ValueError, "SGD: lr must be a finite number > 0, got -0.1"),
        ({"lr": float("nan")}, ValueError, "SGD: lr must be a finite number > 0, got nan"),
        ({"lr": "0.1"}, ValueError, "SGD: lr must be a finite number > 0, got '0.1'"),
        ({"lr": 0.1, "weight_decay": -1e-4}, ValueError, "SGD: weight_decay must be a finite number >= 0, got -0.0001"),
        ({"lr": 0.1, "params": []}, ValueError, "SGD: params is empty"),
        ({"lr": 0.1, "params": [np.ones(3)]}, TypeError, "SGD: params[0] must be a Tensor with requires_grad=True"),
        (
            {"lr": 0.1, "params": [Tensor(np.ones(3))]},
            TypeError,
            "SGD: params[0] must be a Tensor with requires_grad=True",
        ),  # noqa: E501
    ],
)
def test_sgd_validation(kwargs, exception, text):
    kwargs = {"params": Linear(2, 2).parameters(), **kwargs}
    with raises(exception, text):
        SGD(**kwargs)


@pytest.mark.parametrize(
    "name, ours, theirs",
    [
        (
            "momentum",
            lambda ps: SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3),
            lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3),
        ),
        (
            "adam",
            lambda ps: Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-3),
            lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-3),
        ),
    ],
)
def test_optimizers_with_state_match_torch_over_several_steps(name, ours, theirs):
    X, y = make_classification(40, 4, 3, seed=5)
    net = MLP([4, 6, 3], rng=2)
    tparams = [torch.tensor(p.data.copy(), requires_grad=True) for p in net.parameters()]
    opt, topt = ours(net.parameters()), theirs(tparams)
    for _ in range(4):
        opt.zero_grad()
        cross_entropy(net(X), y).backward()
        opt.step()
        topt.zero_grad()
        h = F.linear(torch.tensor(X), tparams[0], tparams[1]).relu()
        F.cross_entropy(F.linear(h, tparams[2], tparams[3]), torch.tensor(y)).backward()
        topt.step()
    for p, t in zip(net.parameters(), tparams, strict=True):
        np.testing.assert_allclose(p.data, t.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = sum(p.data.nbytes for p in net.parameters())
    assert opt.state_bytes() == {"momentum": 1, "adam": 2}[name] * weights


def test_zero_grad_can_keep_the_arrays_and_backward_then_adds_in_place():
    net = MLP([3, 4, 2], rng=0)
    X, y = make_classification(10, 3, 2, seed=1)
    opt = SGD(net.parameters(), lr=0.1)
    assert opt.state_bytes() == 0  # plain SGD keeps nothing between steps
    cross_entropy(net(X), y).backward()
    arrays = [p.grad for p in net.parameters()]
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is a and not a.any() for p, a in zip(net.parameters(), arrays, strict=True))
    cross_entropy(net(X), y).backward()
    assert all(p.grad is a and a.any() for p, a in zip(net.parameters(), arrays, strict=True))  # the same arrays
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"lr": 0.1, "momentum": 1.0}, "SGD: momentum must be a finite number in [0, 1), got 1.0"),
        ({"lr": 0.1, "betas": (0.9,)}, "Adam: betas must be a pair (beta1, beta2), got (0.9,)"),
        ({"lr": 0.1, "betas": (0.9, 1.5)}, "Adam: betas[1] must be a finite number in [0, 1), got 1.5"),
        ({"lr": 0.1, "eps": 0}, "Adam: eps must be a finite number > 0, got 0"),
    ],
)
def test_optimizer_validation_names_the_optimizer_and_the_value(kwargs, text):
    params = Linear(2, 2).parameters()
    cls = SGD if "momentum" in kwargs else Adam
    with raises(ValueError, text):
        cls(params, **kwargs)
    with raises(TypeError, "Adam: params is the method 'parameters', not its result"):
        Adam(Linear(2, 2).parameters)


# --------------------------------------------------------------------------- data


def test_make_classification_is_deterministic_and_learnable():
    X, y = make_classification(200, 5, 4, seed=11)
    X2, y2 = make_classification(200, 5, 4, seed=11)
    X3, _ = make_classification(200, 5, 4, seed=12)
    assert X.shape == (200, 5) and X.dtype == np.float64 and y.shape == (200,) and y.dtype == np.int64
    assert np.array_equal(X, X2) and np.array_equal(y, y2) and not np.array_equal(X, X3)
    assert set(np.unique(y)) == set(range(4))
    # The blobs are separated: most points are nearest their own class mean.
    means = np.stack([X[y == c].mean(axis=0) for c in range(4)])
    nearest = np.argmin(((X[:, None, :] - means) ** 2).sum(axis=2), axis=1)
    assert np.mean(nearest == y) > 0.7
    assert make_classification(10, 2, 2, dtype=np.float32)[0].dtype == np.float32
    with raises(ValueError, "make_classification: num_classes must be a positive integer, got 0"):
        make_classification(10, 2, 0)
    with raises(TypeError, "make_classification: seed must be None, an int seed or a np.random.Generator"):
        make_classification(10, 2, 2, seed=1.5)

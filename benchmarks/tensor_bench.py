"""One training step of a 784-256-10 ReLU MLP: chainrule.Tensor against numpy, torch and jax.

The step is forward, mean cross-entropy over a batch of 256, backward, and an SGD update
of W1, b1, W2, b2, all in float32.  Four implementations do the same math from the same
weights and the same batch:

* chainrule -- ``chainrule.Tensor`` ops and ``chainrule.functional.cross_entropy``,
  ``loss.backward()``, then ``W.data -= lr * W.grad`` and ``W.grad = None``.
* numpy -- the same forward and backward written out by hand: the floor, since
  chainrule runs exactly these numpy kernels plus its bookkeeping.
* torch -- CPU autograd, ``torch.nn.functional.cross_entropy``, update under no_grad.
* jax -- ``jax.jit`` of the whole step (value_and_grad and the update); compilation
  is done before timing and every step ends with ``block_until_ready``.

Before timing, two steps of each are checked against a float64 numpy reference (the
loss and the updated weights, and the updates themselves, since the weights move by
only ~1e-3 of their size); any mismatch raises.  Timing alternates the
implementations round by round (the order rotates), times single steps after a
few untimed ones at every switch, and reports the best step (and the median).
"""

import time

import numpy as np
from rows import timing_row

BATCH, N_IN, N_HIDDEN, N_OUT = 256, 784, 256, 10
LR = 0.1
NAMES = ("chainrule", "numpy", "torch", "jax")
GOALS = {"numpy": 1.15, "torch": 1.5, "jax": None}


def make_problem(seed=0):
    """A batch (x, labels) and initial float32 weights (He-initialized, small biases)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, N_IN)).astype(np.float32)
    labels = rng.integers(0, N_OUT, size=BATCH).astype(np.int64)
    params = [
        (rng.standard_normal((N_IN, N_HIDDEN)) * np.sqrt(2 / N_IN)).astype(np.float32),
        (rng.standard_normal(N_HIDDEN) * 0.1).astype(np.float32),
        (rng.standard_normal((N_HIDDEN, N_OUT)) * np.sqrt(2 / N_HIDDEN)).astype(np.float32),
        (rng.standard_normal(N_OUT) * 0.1).astype(np.float32),
    ]
    return x, labels, params


# --------------------------------------------------------------------------- implementations
#
# Each is a class built from (x, labels, params) holding its own copy of the weights;
# ``step()`` does one training step in place and returns the loss (before the update);
# ``weights()`` returns the current weights as numpy arrays.


class NumpyStep:
    """The hand-written forward and backward: the same matmuls, a stable log-softmax."""

    def __init__(self, x, labels, params, dtype=np.float32):
        self.x = x.astype(dtype)
        self.labels = labels
        self.rows = np.arange(len(labels))
        self.params = [p.astype(dtype) for p in params]  # copies

    def step(self):
        x, labels, rows = self.x, self.labels, self.rows
        w1, b1, w2, b2 = self.params
        batch = x.shape[0]
        # forward
        h = x @ w1
        h += b1
        np.maximum(h, 0, out=h)  # relu
        logits = h @ w2
        logits += b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        total = exp.sum(axis=1, keepdims=True)
        loss = np.log(total[:, 0]).mean() - shifted[rows, labels].mean()
        # backward: dlogits = (softmax - onehot) / batch
        dlogits = exp / total
        dlogits[rows, labels] -= 1
        dlogits /= batch
        dw2 = h.T @ dlogits
        db2 = dlogits.sum(axis=0)
        dh = dlogits @ w2.T
        dh *= h > 0  # relu: h > 0 exactly where its input was > 0
        dw1 = x.T @ dh
        db1 = dh.sum(axis=0)
        # SGD update
        w1 -= LR * dw1
        b1 -= LR * db1
        w2 -= LR * dw2
        b2 -= LR * db2
        return float(loss)

    def weights(self):
        return [p.copy() for p in self.params]


class ChainruleStep:
    def __init__(self, x, labels, params):
        from chainrule import Tensor
        from chainrule.functional import cross_entropy

        self.cross_entropy = cross_entropy
        self.x = Tensor(x)
        self.labels = labels
        self.params = [Tensor(p.copy(), requires_grad=True) for p in params]

    def step(self):
        w1, b1, w2, b2 = self.params
        logits = (self.x @ w1 + b1).relu() @ w2 + b2
        loss = self.cross_entropy(logits, self.labels)
        loss.backward()
        for p in self.params:
            p.data -= LR * p.grad
            p.grad = None
        return loss.item()

    def weights(self):
        return [p.data.copy() for p in self.params]


class TorchStep:
    def __init__(self, x, labels, params):
        import torch

        self.torch = torch
        self.x = torch.from_numpy(x)
        self.labels = torch.from_numpy(labels)
        self.params = [torch.tensor(p, requires_grad=True) for p in params]  # copies

    def step(self):
        torch = self.torch
        w1, b1, w2, b2 = self.params
        logits = torch.relu(self.x @ w1 + b1) @ w2 + b2
        loss = torch.nn.functional.cross_entropy(logits, self.labels)
        loss.backward()
        with torch.no_grad():
            for p in self.params:
                p.add_(p.grad, alpha=-LR)
                p.grad = None
        return loss.item()

    def weights(self):
        return [p.detach().numpy().copy() for p in self.params]


class JaxStep:
    def __init__(self, x, labels, params):
        import jax
        import jax.numpy as jnp

        def loss_fn(params, x, labels):
            w1, b1, w2, b2 = params
            logits = jnp.maximum(x @ w1 + b1, 0) @ w2 + b2
            log_probs = jax.nn.log_softmax(logits, axis=1)
            return -jnp.take_along_axis(log_probs, labels[:, None], axis=1).mean()

        def step(params, x, labels):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
            return tuple(p - LR * g for p, g in zip(params, grads, strict=True)), loss

        self.jitted = jax.jit(step)
        self.x = jnp.asarray(x)
        self.labels = jnp.asarray(labels.astype(np.int32))
        self.params = tuple(jnp.asarray(p) for p in params)
        # compile now, on a throwaway copy of the weights, so that timing excludes it
        warm, _ = self.jitted(tuple(jnp.array(p) for p in params), self.x, self.labels)
        jax.block_until_ready(warm)

    def step(self):
        self.params, loss = self.jitted(self.params, self.x, self.labels)
        self.params[0].block_until_ready()
        return float(loss)

    def weights(self):
        return [np.asarray(p).copy() for p in self.params]


CLASSES = {"chainrule": ChainruleStep, "numpy": NumpyStep, "torch": TorchStep, "jax": JaxStep}


# --------------------------------------------------------------------------- checking


def check_agreement(x, labels, params, steps=2):
    """Run ``steps`` steps of every implementation and compare with float64 numpy.

    Raises AssertionError naming the implementation and the quantity that differ.
    Returns the largest relative error of the updates seen, for the report.
    """
    reference = NumpyStep(x, labels, params, dtype=np.float64)
    ref_losses = [reference.step() for _ in range(steps)]
    ref_weights = reference.weights()
    ref_updates = [w - p for w, p in zip(ref_weights, params, strict=True)]
    worst = 0.0
    for name in NAMES:
        impl = CLASSES[name](x, labels, params)
        losses = [impl.step() for _ in range(steps)]
        weights = impl.weights()
        for i, (loss, ref) in enumerate(zip(losses, ref_losses, strict=True)):
            if not abs(loss - ref) <= 1e-5 * abs(ref) + 1e-6:
                raise AssertionError(f"tensor_bench: {name} loss at step {i + 1} is {loss!r}, expected {ref!r}")
        for label, w, ref, p, ref_update in zip(
            ("W1", "b1", "W2", "b2"), weights, ref_weights, params, ref_updates, strict=True
        ):
            if w.dtype != np.float32 or w.shape != ref.shape:
                raise AssertionError(
                    f"tensor_bench: {name} {label} is {w.dtype} {w.shape}, expected float32 {ref.shape}"
                )
            if not np.allclose(w, ref, rtol=1e-5, atol=1e-6):
                raise AssertionError(
                    f"tensor_bench: {name} {label} after {steps} steps differs from the reference by up to "
                    f"{np.abs(w - ref).max():.3g}"
                )
            # the update itself, relative to its size (float32 rounding of W limits this to ~1e-5)
            update = w.astype(np.float64) - p
            error = np.linalg.norm(update - ref_update) / np.linalg.norm(ref_update)
            if not error <= 1e-3:
                raise AssertionError(
                    f"tensor_bench: {name} update of {label} differs from the reference by {error:.3g} (relative)"
                )
            worst = max(worst, error)
    return worst


# --------------------------------------------------------------------------- timing


def time_steps(rounds, steps_per_round, x, labels, params, warmup=2, budget=None, min_rounds=10):
    """Seconds of every timed step of every implementation, the order rotating by round.

    Each implementation runs ``warmup`` untimed steps whenever its turn comes, so that
    the thread pools of the one before it (OpenBLAS, OpenMP, XLA's) have gone quiet and
    its own are awake; then ``steps_per_round`` steps are timed one by one.  After
    ``min_rounds`` rounds, timing stops early once ``budget`` seconds have passed (on a
    busy machine a step can take ten times as long).
    """
    impls = {name: CLASSES[name](x, labels, params) for name in NAMES}
    times = {name: [] for name in NAMES}
    started = time.perf_counter()
    for r in range(rounds):
        if budget is not None and r >= min_rounds and time.perf_counter() - started > budget:
            break
        order = NAMES[r % len(NAMES) :] + NAMES[: r % len(NAMES)]
        for name in order:
            step = impls[name].step
            for _ in range(warmup):
                step()
            for _ in range(steps_per_round):
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
    return times


def run(quick=False):
    x, labels, params = make_problem()
    worst = check_agreement(x, labels, params)
    rounds, steps_per_round = (4, 3) if quick else (50, 4)
    times = time_steps(rounds, steps_per_round, x, labels, params, budget=20.0)
    rounds = len(times["chainrule"]) // steps_per_round
    rows = []
    for other in ("numpy", "torch", "jax"):
        what = "jax.jit (whole step)" if other == "jax" else other
        name = f"MLP 784-256-10 train step, batch {BATCH} f32: chainrule / {what}"
        note = f"{rounds}x{steps_per_round} steps each"
        if other == "numpy":
            note += f"; all 4 agree with float64 numpy (worst update error {worst:.1e})"
        rows.append(timing_row("tensor", name, times, other, GOALS[other], note))
    return rows


if __name__ == "__main__":
    import sys

    for row in run(quick="--quick" in sys.argv):
        print(row)

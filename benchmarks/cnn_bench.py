"""One training step of a small CNN on MNIST-sized images: chainrule.Tensor against torch; and the
CNN of chapters/layers.md trained on scikit-learn's 8x8 digits, to its stated test accuracy.

The network: conv2d 1→8 (3×3, padding 1), ReLU, max_pool2d 2, a linear layer
8·14·14 → 10, mean cross-entropy over a batch of 64 images of 28×28, then an SGD
update, all in float32. chainrule's conv2d is im2col and one matmul; torch runs its own
convolution kernels on the CPU. Before timing, one step of each is checked against the
other in float64 (the loss and every gradient); a mismatch raises. Timing alternates
the two, round by round, and reports the best step (and the median).
"""

import time

import numpy as np
from rows import timing_row

BATCH, SIZE, FILTERS, CLASSES, LR = 64, 28, 8, 10, 0.05
# chainrule's step at most 8 times torch's: an epoch of 60,000 images is then about 1,000 steps of
# 10 to 20 ms here, fast enough to train a small CNN on a CPU.
GOAL = 8.0


def make_problem(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, 1, SIZE, SIZE)).astype(dtype)
    labels = rng.integers(0, CLASSES, size=BATCH)
    params = [
        (rng.standard_normal((FILTERS, 1, 3, 3)) / 3).astype(dtype),
        (rng.standard_normal((FILTERS * (SIZE // 2) ** 2, CLASSES)) * 0.02).astype(dtype),
    ]
    return x, labels, params


class ChainruleStep:
    def __init__(self, x, labels, params):
        from chainrule import Tensor

        self.x, self.labels = Tensor(x), labels
        self.params = [Tensor(p.copy(), requires_grad=True) for p in params]

    def step(self, update=True):
        from chainrule.functional import conv2d, cross_entropy, max_pool2d

        w, v = self.params
        h = max_pool2d(conv2d(self.x, w, padding=1).relu(), 2)
        loss = cross_entropy(h.reshape(BATCH, -1) @ v, self.labels)
        loss.backward()
        grads = [p.grad for p in self.params]
        if update:
            for p in self.params:
                p.data -= LR * p.grad
                p.grad = None
        return float(loss.data), grads


class TorchStep:
    def __init__(self, x, labels, params):
        import torch

        self.torch = torch
        self.x, self.labels = torch.tensor(x), torch.tensor(labels)
        self.params = [torch.tensor(p.copy(), requires_grad=True) for p in params]

    def step(self, update=True):
        functional = self.torch.nn.functional
        w, v = self.params
        h = functional.max_pool2d(functional.conv2d(self.x, w, padding=1).relu(), 2)
        loss = functional.cross_entropy(h.reshape(BATCH, -1) @ v, self.labels)
        loss.backward()
        grads = [p.grad.numpy().copy() for p in self.params]
        if update:
            with self.torch.no_grad():
                for p in self.params:
                    p -= LR * p.grad
                    p.grad = None
        return float(loss.detach()), grads


def check_agreement():
    """One float64 step of each: the losses and the gradients of both weights must agree."""
    x, labels, params = make_problem(dtype=np.float64)
    (loss, grads), (expected, references) = (
        cls(x, labels, params).step(update=False) for cls in (ChainruleStep, TorchStep)
    )
    if not abs(loss - expected) <= 1e-10 * abs(expected):
        raise AssertionError(f"cnn_bench: chainrule's loss is {loss!r}, torch's {expected!r}")
    for label, grad, reference in zip(("conv weights", "linear weights"), grads, references, strict=True):
        if not np.allclose(grad, reference, rtol=1e-8, atol=1e-12):
            raise AssertionError(
                f"cnn_bench: the gradient of the {label} differs from torch's by {np.abs(grad - reference).max():.3g}"
            )


def run(quick=False):
    check_agreement()
    x, labels, params = make_problem()
    impls = {"chainrule": ChainruleStep(x, labels, params), "torch": TorchStep(x, labels, params)}
    times = {name: [] for name in impls}
    rounds, steps = (3, 2) if quick else (20, 3)
    for r in range(rounds):
        for name in ("chainrule", "torch") if r % 2 == 0 else ("torch", "chainrule"):
            impls[name].step()  # untimed: the other's thread pools go quiet
            for _ in range(steps):
                start = time.perf_counter()
                impls[name].step()
                times[name].append(time.perf_counter() - start)
    name = f"CNN conv 1-8 3x3, pool 2, linear 1568-10; train step, batch {BATCH} of 28x28 f32: chainrule / torch"
    note = f"{rounds}x{steps} steps each; loss and gradients agree with torch in float64"
    return [timing_row("cnn", name, times, "torch", GOAL, note), digits_row()]


#: The digits CNN of chapters/layers.md: at least this test accuracy, within this many seconds.
DIGITS_ACCURACY, DIGITS_SECONDS = 0.9, 10.0


def train_digits(ops, tensor, optimizer, numbers):
    """The chapter's network and schedule (8 epochs, batches of 32, Adam 0.01), in float32:
    the seconds the training took and the test accuracy."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images, labels = (digits.images[:, None] / 16.0).astype(np.float32), digits.target
    order = np.random.default_rng(0).permutation(len(labels))
    test, train = order[:360], order[360:]
    gen = np.random.default_rng(1)
    start = [gen.standard_normal((8, 1, 3, 3)) / 3, gen.standard_normal((10, 128)) / np.sqrt(128), np.zeros(10)]
    params = [tensor(a.astype(np.float32), True) for a in start]
    step = optimizer(params, lr=0.01)

    def scores(x):
        h = ops.max_pool2d(ops.conv2d(x, params[0], padding=1).relu(), 2)
        return h.reshape(x.shape[0], -1) @ params[1].T + params[2]

    began = time.perf_counter()
    for epoch in range(8):
        for batch in np.array_split(np.random.default_rng(epoch).permutation(train), len(train) // 32):
            loss = ops.cross_entropy(scores(tensor(images[batch], False)), tensor(labels[batch], False))
            step.zero_grad()
            loss.backward()
            step.step()
    seconds = time.perf_counter() - began
    predicted = numbers(scores(tensor(images[test], False))).argmax(axis=1)
    return seconds, float((predicted == labels[test]).mean())


def chainrule_tensor(array, grad):
    """A Tensor of float data; class labels stay an integer array, as chainrule's cross_entropy takes them."""
    from chainrule import Tensor

    return Tensor(array, requires_grad=grad) if array.dtype.kind == "f" else array


def digits_row():
    """The chapter's CNN trained by chainrule: its time over the stated time, and its accuracy."""
    import torch

    import chainrule.functional
    from chainrule import nn

    seconds, accuracy = train_digits(chainrule.functional, chainrule_tensor, nn.Adam, lambda t: t.data)
    theirs = train_digits(
        torch.nn.functional,
        lambda array, grad: torch.tensor(array, requires_grad=grad),
        torch.optim.Adam,
        lambda t: t.detach().numpy(),
    )
    return {
        "section": "cnn",
        "name": f"digits CNN of the layers chapter, 8 epochs f32 by chainrule: time / the {DIGITS_SECONDS:g} s stated",
        "ratio": seconds / DIGITS_SECONDS,
        "goal": "<= 1",
        "met": bool(seconds <= DIGITS_SECONDS and accuracy >= DIGITS_ACCURACY),
        "detail": f"{seconds:.2f} s, test accuracy {accuracy:.1%} (stated: at least {DIGITS_ACCURACY:.0%}); "
        f"torch {theirs[0]:.2f} s, {theirs[1]:.1%}",
    }

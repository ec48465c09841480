"""Checkpointing a deep MLP: how much memory it saves and how much time it costs.

A 64-layer ReLU MLP (width 256, batch 1024, float32) takes training steps (forward,
mean-square loss, backward) plainly and with every 8 layers (√64) wrapped in
chainrule.checkpoint.  The batch is large next to the width, so the activations
(batch x width per layer) outweigh the weights and their gradients (width x width), as
in the training runs where checkpointing is used: since the engine frees each saved
array as soon as the backward pass has read it, a network whose gradients outweigh its
activations would peak on its gradients, and checkpointing could not help.  Both run in
the same process, alternately, and we keep the
best of several repeats of each, so that machine noise hits both alike.

Memory is measured with tracemalloc (chainrule.cost.peak_memory) in runs that are not
timed, since tracing slows Python down.  The n/k + k model of the cost chapter predicts
the peaks: n activations plainly, n/k + k + 1 checkpointed, each plus the gradients
and arrays in flight, which are the same in both.
"""

import time

import numpy as np

from chainrule import checkpoint
from chainrule.autograd import clear_grads
from chainrule.cost import count_flops, peak_memory, saved_bytes_by_kind
from chainrule.tensor import Tensor

SECTION = "checkpointing"
DEPTH, WIDTH, BATCH, SEGMENT = 64, 256, 1024, 8
DTYPE = np.float32


def make_model(seed=0):
    rng = np.random.default_rng(seed)
    weights = [
        Tensor((rng.standard_normal((WIDTH, WIDTH)) * np.sqrt(2 / WIDTH)).astype(DTYPE), requires_grad=True)
        for _ in range(DEPTH)
    ]
    biases = [Tensor(np.zeros(WIDTH, dtype=DTYPE), requires_grad=True) for _ in range(DEPTH)]
    x = Tensor(rng.standard_normal((BATCH, WIDTH)).astype(DTYPE))
    return weights, biases, x


def layers(h, weights, biases):
    for w, b in zip(weights, biases, strict=True):
        h = (h @ w + b).relu()
    return h


def segment_fn(weights, biases):
    return lambda h: layers(h, weights, biases)


def training_step(model, checkpointed, measure_saved=False):
    """Forward, loss and backward; returns the activation bytes kept for backward (or None)."""
    weights, biases, x = model
    clear_grads(weights + biases)
    if checkpointed:
        h = x
        for start in range(0, DEPTH, SEGMENT):
            h = checkpoint(segment_fn(weights[start : start + SEGMENT], biases[start : start + SEGMENT]), h)
    else:
        h = layers(x, weights, biases)
    loss = (h * h).mean()
    kept = saved_bytes_by_kind(loss)["activations"] if measure_saved else None
    loss.backward()
    return kept


def _megabytes(n):
    return f"{n / 1e6:.1f} MB"


def _row(name, ratio, goal, detail):
    met = None if not goal else bool(ratio <= float(goal.removeprefix("<=").strip()))
    return {"section": SECTION, "name": name, "ratio": float(ratio), "goal": goal, "met": met, "detail": detail}


def run(quick=False):
    """The rows of this section; ``quick`` takes fewer repeats."""
    time_repeats, memory_repeats = (3, 1) if quick else (10, 2)
    model = make_model()
    kinds = {"plain": False, "checkpointed": True}
    for checkpointed in kinds.values():  # warm up (first touches of memory, BLAS threads)
        training_step(model, checkpointed)

    kept, peak = {}, {k: float("inf") for k in kinds}
    for _ in range(memory_repeats):
        for kind, checkpointed in kinds.items():
            kept[kind], step_peak = peak_memory(training_step, model, checkpointed, True)
            peak[kind] = min(peak[kind], step_peak)
    activation = BATCH * WIDTH * np.dtype(DTYPE).itemsize

    seconds = {k: float("inf") for k in kinds}
    for _ in range(time_repeats):
        for kind, checkpointed in kinds.items():
            start = time.perf_counter()
            training_step(model, checkpointed)
            seconds[kind] = min(seconds[kind], time.perf_counter() - start)

    flops = {}
    for kind, checkpointed in kinds.items():
        with count_flops() as flops[kind]:
            training_step(model, checkpointed)

    plain, ckpt = flops["plain"], flops["checkpointed"]
    shape = f"{DEPTH} layers, width {WIDTH}, batch {BATCH}, float32, checkpoint every {SEGMENT} layers"
    return [
        _row(
            "activation bytes kept for backward (saved_bytes), checkpointed / plain",
            kept["checkpointed"] / kept["plain"],
            "<= 0.5",
            f"{_megabytes(kept['checkpointed'])} vs {_megabytes(kept['plain'])} ({shape})",
        ),
        _row(
            "whole peak memory of a training step (tracemalloc), checkpointed / plain",
            peak["checkpointed"] / peak["plain"],
            "<= 0.5",
            f"{_megabytes(peak['checkpointed'])} vs {_megabytes(peak['plain'])} (gradients included); "
            f"n/k + k model: {DEPTH // SEGMENT + SEGMENT + 1} vs {DEPTH} activations of {_megabytes(activation)}",
        ),
        _row(
            "time of a training step, checkpointed / plain",
            seconds["checkpointed"] / seconds["plain"],
            "<= 1.5",
            f"{seconds['checkpointed'] * 1e3:.0f} ms vs {seconds['plain'] * 1e3:.0f} ms "
            f"(best of {time_repeats}, alternating)",
        ),
        _row(
            "flops of a training step, checkpointed / plain",
            ckpt.total / plain.total,
            "",
            f"{ckpt.total / 1e9:.2f} vs {plain.total / 1e9:.2f} GFLOP "
            f"(backward {ckpt.backward / 1e9:.2f} vs {plain.backward / 1e9:.2f}: the recomputed forward)",
        ),
        _row(
            "backward / forward flops of a plain training step",
            plain.ratio,
            "",
            f"{plain.backward / 1e9:.2f} vs {plain.forward / 1e9:.2f} GFLOP",
        ),
    ]


if __name__ == "__main__":
    for row in run():
        status = {True: "met", False: "NOT MET", None: ""}[row["met"]]
        goal = f"goal {row['goal']} {status}" if row["goal"] else "no goal"
        print(f"[{row['section']}] {row['name']}: {row['ratio']:.2f} ({goal})\n    {row['detail']}")

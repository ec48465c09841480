"""chainrule.Value against micrograd 0.1.0: speed on an MLP of scalars, and the deepest chain.

1. Speed.  Both engines build the same network of scalar Values (sizes ``SIZES``, the
   same random weights, ReLU hidden layers, squared-error loss) and run forward +
   backward on one input.  Before timing, the loss and every weight's gradient are
   checked to agree between the two; any mismatch raises.  Timing alternates the
   engines round by round (the order swaps each round) and reports the best step.
   The garbage collector stays on for the row with the goal: micrograd's closures make
   reference cycles that only the collector frees, which is part of what a training
   loop pays.  A second row, without a goal, times both with the collector off
   (collecting between turns), to show how much of the difference that is.
2. Growth.  Backward time per node on a chain of ``GROWTH_SIZES[1]`` ``(y * w).tanh()``
   steps against one of ``GROWTH_SIZES[0]`` (8 times fewer), best of 5 measured
   alternately with the collector off.  Linear growth gives 1, quadratic growth 8; the
   goal is the midpoint on a log scale, with room for the larger graph falling out of
   the CPU caches.  (This was a timed unit test; timings belong here.)
3. Depth.  A chain ``x.relu().relu()...`` of ``depth`` ops, then ``backward()``.
   micrograd's recursive topological sort raises RecursionError near
   ``sys.getrecursionlimit()``; chainrule's is iterative, so it is tried at
   ``CHAIN_CAP`` (1,000,000) ops directly.  Both depths are found exactly (by bisection
   between a depth that works and one that fails) unless chainrule reaches the cap.
"""

import gc
import random
import sys
import time
from itertools import pairwise

from micrograd.engine import Value as MicrogradValue
from rows import timing_row

from chainrule import Value as ChainruleValue

SIZES = (16, 32, 32, 1)
GROWTH_SIZES = (20_000, 160_000)
GROWTH_GOAL = 2.75  # per-node time, large / small chain: sqrt(8) = 2.83 is the log midpoint of 1 and 8
CHAIN_CAP = 1_000_000
GOAL = 0.65  # chainrule's step time at most this fraction of micrograd's: readable code first, and still faster


def make_layers(value_class, sizes, seed=0):
    """Weights for each layer: one row per neuron, the bias last in the row."""
    rng = random.Random(seed)
    return [
        [[value_class(rng.uniform(-1, 1)) for _ in range(n_in + 1)] for _ in range(n_out)]
        for n_in, n_out in pairwise(sizes)
    ]


def mlp_loss(layers, inputs):
    """Sum of squares of the network's outputs (ReLU on every layer but the last)."""
    activations = inputs
    for depth, layer in enumerate(layers):
        outputs = []
        for row in layer:
            total = row[-1]
            for weight, activation in zip(row[:-1], activations, strict=True):  # the bias is row[-1]
                total = total + weight * activation
            outputs.append(total.relu() if depth < len(layers) - 1 else total)
        activations = outputs
    loss = activations[0] * activations[0]
    for output in activations[1:]:
        loss = loss + output * output
    return loss


def _flat(layers):
    return [w for layer in layers for row in layer for w in row]


def check_agreement(inputs):
    """Raise AssertionError unless both engines give the same loss and weight gradients."""
    ours, theirs = make_layers(ChainruleValue, SIZES), make_layers(MicrogradValue, SIZES)
    loss_ours, loss_theirs = mlp_loss(ours, inputs), mlp_loss(theirs, inputs)
    loss_ours.backward()
    loss_theirs.backward()

    def close(a, b):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b)) + 1e-12

    if not close(loss_ours.data, loss_theirs.data):
        raise AssertionError(f"value_bench: loss {loss_ours.data!r} (chainrule) != {loss_theirs.data!r} (micrograd)")
    weights = list(zip(_flat(ours), _flat(theirs), strict=True))
    for i, (a, b) in enumerate(weights):
        if not close(a.grad, b.grad):
            raise AssertionError(
                f"value_bench: gradient of weight {i}: {a.grad!r} (chainrule) != {b.grad!r} (micrograd)"
            )
    if not any(a.grad for a, _ in weights):
        raise AssertionError("value_bench: every gradient is zero; the check would prove nothing")


def time_steps(rounds, steps_per_round, inputs, collect_garbage=True):
    """Seconds per forward+backward step for each engine, alternating by round.

    With ``collect_garbage=False`` the garbage collector is off while timing, and
    collects between turns (untimed), so that micrograd's cycles do not pile up.
    """
    engines = {"chainrule": make_layers(ChainruleValue, SIZES), "micrograd": make_layers(MicrogradValue, SIZES)}
    times = {name: [] for name in engines}
    names = list(engines)
    was_enabled = gc.isenabled()
    try:
        for r in range(rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                layers = engines[name]
                if not collect_garbage:
                    gc.collect()
                    gc.disable()
                mlp_loss(layers, inputs).backward()  # warm-up after switching
                for _ in range(steps_per_round):
                    start = time.perf_counter()
                    mlp_loss(layers, inputs).backward()
                    times[name].append(time.perf_counter() - start)
                if was_enabled:
                    gc.enable()
    finally:
        if was_enabled:
            gc.enable()
        gc.collect()
    return times


def tanh_chain(n):
    x, w = ChainruleValue(0.3, "x"), ChainruleValue(0.9, "w")
    y = x
    for _ in range(n):
        y = (y * w).tanh()
    return y


def growth_row(sizes, repeats=5):
    """Backward time per node of the larger chain over the smaller, best of ``repeats`` each."""
    roots = [tanh_chain(n) for n in sizes]
    best = [float("inf")] * len(roots)
    gc.disable()
    try:
        for _ in range(repeats):  # alternately, so that a burst of load hits both sizes alike
            for index, root in enumerate(roots):
                start = time.perf_counter()
                root.backward()
                best[index] = min(best[index], time.perf_counter() - start)
    finally:
        gc.enable()
    per_node = [seconds / n for seconds, n in zip(best, sizes, strict=True)]
    ratio = per_node[1] / per_node[0]
    return {
        "section": "value",
        "name": f"backward time per node, {sizes[1]:,}-node chain / {sizes[0]:,}-node chain",
        "ratio": ratio,
        "goal": f"<= {GROWTH_GOAL}",
        "met": bool(ratio <= GROWTH_GOAL),
        "detail": f"best {best[1] * 1e3:.1f} ms vs {best[0] * 1e3:.1f} ms; linear growth gives 1, quadratic 8",
    }


def _chain_backprops(value_class, depth):
    x = value_class(0.5)
    y = x
    for _ in range(depth):
        y = y.relu()
    try:
        y.backward()
    except RecursionError:
        return False
    if x.grad != 1.0:
        raise AssertionError(f"value_bench: {value_class.__module__} chain of {depth}: d/dx = {x.grad!r}, expected 1")
    return True


def deepest_chain(value_class, cap):
    """The largest depth <= ``cap`` whose chain backprops."""
    if _chain_backprops(value_class, cap):
        return cap
    good, bad = 0, 100
    while _chain_backprops(value_class, bad):  # grow until a depth fails
        good, bad = bad, bad * 2
    while bad - good > 1:  # bisect: good backprops, bad fails
        middle = (good + bad) // 2
        if _chain_backprops(value_class, middle):
            good = middle
        else:
            bad = middle
    return good


def run(quick=False):
    inputs = [random.Random(1).uniform(-1, 1) for _ in range(SIZES[0])]
    check_agreement(inputs)
    rounds, steps_per_round = (4, 2) if quick else (20, 5)
    times = time_steps(rounds, steps_per_round, inputs)
    times_no_gc = time_steps(rounds // 2, steps_per_round, inputs, collect_garbage=False)
    sizes = "-".join(map(str, SIZES))
    cap = CHAIN_CAP // 10 if quick else CHAIN_CAP
    ours = deepest_chain(ChainruleValue, cap)
    theirs = deepest_chain(MicrogradValue, cap)
    rows = []
    for label, ts, goal in (("", times, GOAL), (" (garbage collector off)", times_no_gc, None)):
        note = f"{len(ts['chainrule'])} steps each" + ("; loss and gradients agree" if goal else "")
        name = f"MLP {sizes} of Values, forward+backward{label}: chainrule / micrograd"
        rows.append(timing_row("value", name, ts, "micrograd", goal, note))
    growth = growth_row(tuple(n // 10 for n in GROWTH_SIZES) if quick else GROWTH_SIZES)
    return rows + [
        growth,
        {
            "section": "value",
            "name": "deepest chain that backprops: chainrule / micrograd",
            "ratio": ours / theirs,
            "goal": "",
            "met": None,
            "detail": (
                f"chainrule {ours:,}{' (the cap tested)' if ours == cap else ''} vs micrograd {theirs:,} "
                f"(RecursionError beyond); sys.getrecursionlimit() = {sys.getrecursionlimit()}"
            ),
        },
    ]


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)

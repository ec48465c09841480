"""chainrule.Value against micrograd 0.1.0 on the same MLP of scalar Values.

Both engines build the same network (same sizes, same random weights, ReLU hidden
layers, squared-error loss) and run forward + backward; we report the best of several
repeats for each, measured alternately in one process so machine noise hits both.
"""

import random
import sys
import time

from micrograd.engine import Value as MicrogradValue

from chainrule import Value as ChainruleValue

SIZES = (16, 32, 32, 1)


def make_layers(value_class, sizes, seed=0):
    """Weights for each layer: one row per neuron, the bias last in the row."""
    rng = random.Random(seed)
    return [
        [[value_class(rng.uniform(-1, 1)) for _ in range(n_in + 1)] for _ in range(n_out)]
        for n_in, n_out in zip(sizes[:-1], sizes[1:])
    ]


def mlp_loss(layers, inputs):
    activations = inputs
    for depth, layer in enumerate(layers):
        outputs = []
        for row in layer:
            total = row[-1]
            for weight, activation in zip(row, activations):
                total = total + weight * activation
            outputs.append(total.relu() if depth < len(layers) - 1 else total)
        activations = outputs
    loss = activations[0] * activations[0]
    for output in activations[1:]:
        loss = loss + output * output
    return loss


def time_step(value_class, inputs, repeats):
    layers = make_layers(value_class, SIZES)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        mlp_loss(layers, inputs).backward()
        best = min(best, time.perf_counter() - start)
    return best


def deepest_chain(value_class, limit=1_100_000):
    """Largest depth in 125 * 2**k (up to ``limit``) whose chain backprops."""
    depth, deepest = 125, 0
    while depth <= limit:
        x = value_class(0.5)
        y = x
        for _ in range(depth):
            y = y * 1.0
        try:
            y.backward()
        except RecursionError:
            break
        deepest = depth
        depth *= 2
    return deepest


def run(repeats=15):
    inputs = [random.Random(1).uniform(-1, 1) for _ in range(SIZES[0])]
    mine = theirs = float("inf")
    for _ in range(3):  # alternate so that both see the same machine state
        mine = min(mine, time_step(ChainruleValue, inputs, repeats))
        theirs = min(theirs, time_step(MicrogradValue, inputs, repeats))
    return {
        "value_mlp_step_seconds": {"chainrule": mine, "micrograd": theirs},
        "value_mlp_step_ratio": mine / theirs,
        "value_mlp_step_goal": 0.6,
        "deepest_chain": {
            "chainrule": deepest_chain(ChainruleValue),
            "micrograd": deepest_chain(MicrogradValue),
            "recursion_limit": sys.getrecursionlimit(),
        },
    }


if __name__ == "__main__":
    print(run())

"""Memory of the tensor graph: what it holds after backward, at the peak of a step, and in an eval loop.

The network is an MLP of 8 layers of width 512 (ReLU) on a batch of 512, float64.
Memory is counted with tracemalloc (``chainrule.cost.peak_memory``), which sees numpy's
arrays and Python's objects. The rows, each with its goal:

- *held after backward*: the bytes still allocated after ``loss.backward()`` while
  ``loss`` is alive, beyond the weights and their gradients. PyTorch holds nothing more.
- *training-step peak*: the peak of forward + backward beyond the weights and their
  gradients, divided by the activations a framework must keep (the input of every matmul).
- *eval loop*: the peak of 20 forwards with recording on, each result dropped before the
  next forward, divided by the peak of one forward. A graph that waits for Python's cyclic
  garbage collector piles up here.
- *step peak, chainrule / PyTorch*: the peak of the same training step (same weights,
  same batch), everything allocated during the step counted, gradients included.
  PyTorch allocates in C++, out of tracemalloc's sight, so its side is read from its own
  allocator: the profiler's ``profile_memory`` records every allocation and free of the
  CPU allocator with a time stamp, and the peak is the running sum's maximum.
"""

import gc
import tracemalloc

import numpy as np

from chainrule import Tensor
from chainrule.functional import cross_entropy
from chainrule.nn import MLP

SECTION = "memory"
DEPTH, WIDTH, BATCH, CLASSES = 8, 512, 512, 10


def _row(name, ratio, goal, detail):
    met = None if not goal else bool(ratio <= float(goal.removeprefix("<=").split()[0]))
    return {"section": SECTION, "name": name, "ratio": float(ratio), "goal": goal, "met": met, "detail": detail}


def _megabytes(n):
    return f"{n / 1e6:.1f} MB"


def make_problem(depth=DEPTH, width=WIDTH, batch=BATCH):
    rng = np.random.default_rng(0)
    model = MLP([width] * depth + [CLASSES], rng=rng)
    x = Tensor(rng.normal(size=(batch, width)))
    y = rng.integers(0, CLASSES, size=batch)
    return model, x, y


def _in_use():
    return tracemalloc.get_traced_memory()[0]


def measure(depth=DEPTH, width=WIDTH, batch=BATCH, loops=20):
    """The three memory figures, in bytes, for one model (see the module docstring)."""
    model, x, y = make_problem(depth, width, batch)
    weights = sum(p.data.nbytes for p in model.parameters())
    matmul_inputs = batch * width * depth * x.data.itemsize  # the input of every matmul
    gc.collect()
    tracemalloc.start()
    try:
        start = _in_use()
        loss = cross_entropy(model(x), y)
        loss.backward()
        gradients = sum(p.grad.nbytes for p in model.parameters())
        held = _in_use() - start - gradients
        del loss
        for p in model.parameters():
            p.grad = None
        gc.collect()

        tracemalloc.reset_peak()
        start = _in_use()
        cross_entropy(model(x), y).backward()
        step_peak = tracemalloc.get_traced_memory()[1] - start - gradients
        for p in model.parameters():
            p.grad = None

        gc.collect()
        tracemalloc.reset_peak()
        start = _in_use()
        float(cross_entropy(model(x), y).data)
        one = tracemalloc.get_traced_memory()[1] - start
        gc.collect()
        tracemalloc.reset_peak()
        start = _in_use()
        for _ in range(loops):
            float(cross_entropy(model(x), y).data)  # the graph is dropped at once
        many = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return {
        "weights": weights,
        "held": held,
        "step_peak": step_peak,
        "activations": matmul_inputs,
        "one_forward": one,
        "loop": many,
        "gradients": gradients,
        "model": model,
        "x": x,
        "y": y,
    }


def torch_step_peak(model, x, y):
    """Peak bytes PyTorch's CPU allocator holds during the same training step (gradients included)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    params = [torch.tensor(p.data, requires_grad=True) for p in model.parameters()]
    inputs, labels = torch.tensor(x.data), torch.tensor(y)

    def step():
        h = inputs
        for i in range(0, len(params), 2):
            h = torch.nn.functional.linear(h, params[i], params[i + 1])
            if i + 2 < len(params):
                h = torch.relu(h)
        torch.nn.functional.cross_entropy(h, labels).backward()

    step()  # warm up, then measure a step that starts without gradients, as ours does
    for p in params:
        p.grad = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    changes = sorted(
        (e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"
    )
    running = peak = 0
    for _, nbytes in changes:
        running += nbytes
        peak = max(peak, running)
    return peak, running


def run(quick=False):
    """The rows of this section; ``quick`` uses a smaller network."""
    shape = dict(depth=4, width=128, batch=64) if quick else {}
    m = measure(**shape, loops=5 if quick else 20)
    torch_peak, torch_end = torch_step_peak(m["model"], m["x"], m["y"])
    ours_peak = m["step_peak"] + m["gradients"]
    size = "quick" if quick else f"{DEPTH}x{WIDTH} MLP, batch {BATCH}"
    return [
        _row(
            "held after backward beyond weights+grads (MB)",
            m["held"] / 1e6,
            "<= 1 MB",
            f"{_megabytes(m['held'])} held with the loss alive; weights {_megabytes(m['weights'])}; {size}",
        ),
        _row(
            "training-step peak / matmul inputs",
            m["step_peak"] / m["activations"],
            "<= 2.0",
            f"peak {_megabytes(m['step_peak'])} beyond weights and grads; matmul inputs {_megabytes(m['activations'])}",
        ),
        _row(
            "eval loop: peak of 20 dropped forwards / one forward",
            m["loop"] / m["one_forward"],
            "<= 1.5",
            f"{_megabytes(m['loop'])} vs {_megabytes(m['one_forward'])}",
        ),
        _row(
            "training-step peak, chainrule / PyTorch allocator",
            ours_peak / torch_peak,
            "<= 1.3",
            f"{_megabytes(ours_peak)} (tracemalloc) vs {_megabytes(torch_peak)} (PyTorch's CPU allocator, "
            f"profile_memory); both include the gradients, {_megabytes(m['gradients'])} here and "
            f"{_megabytes(torch_end)} left by PyTorch",
        ),
    ]

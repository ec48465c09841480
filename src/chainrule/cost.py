"""What training costs: flops per op and pass, bytes kept for backward, peak memory.

Three measurements, each small enough to print in a chapter:

* :func:`count_flops` counts the floating-point operations of every op that runs,
  split into the forward pass and the backward pass;
* :func:`saved_bytes` adds up the arrays the graph keeps for its VJP rules, the memory
  that training needs on top of inference;
* :func:`peak_memory` measures the most memory a call had allocated at any one time.

Flop conventions.  A flop is one addition or one multiplication; every op's count is a
formula in the shapes, in its row of the rule table (:data:`chainrule.rules.RULES`, column
``flops``; the formulas, each with the ops it counts, are in :mod:`chainrule.flops`). The
main ones:

* ``A @ B`` with A of shape (m, k) and B of shape (k, n): ``2·m·k·n`` (k multiplications
  and k additions per output entry); with batch axes, that times the batch size.  In
  general ``2 · k · (size of the output)``.
* elementwise ops (``+ - * / **``, relu, tanh, exp, log, ...): 1 per output
  element.  exp, log, tanh and sigmoid cost a processor several instructions, but
  counting them as 1 keeps the totals readable, and matmuls dominate anyway.
* ``sum``, ``mean`` and ``max``: 1 per input element (an add or a comparison).
* ``max_pool2d``: k² per output element, a comparison per entry of its k×k window (an
  entry in several overlapping windows counts in each).
* ``log_softmax``: 5 per input element (subtract the max, exp, sum, log, subtract).
* ``nll_loss``: 1 per row (the entry its label picks, added to the total).
* ``dropout``: 1 per element (a multiply by the mask).
* ``scatter_add`` (embedding's VJP) and ``col2im`` (im2col's): 1 per element of G added.
* ``reshape``, ``transpose``, ``broadcast_to``, ``embedding``, ``im2col``: 0; they only move numbers.
* ``checkpoint``: 0 itself; the ops of its function are counted one by one as they run,
  in the forward pass and again when the backward pass recomputes them.

Only ops that run through :func:`chainrule.tensor.apply` are counted.  A VJP rule is
written with Tensor ops, so its work is counted, as backward work.  The engine's own
numpy bookkeeping (the mask in relu's rule, the nan check, adding into ``.grad``) is not.
"""

import tracemalloc
from math import nan

import numpy as np

from . import tensor as _tensor
from .grad_mode import in_backward, observe_ops
from .rules import RULES

__all__ = ["FlopCounter", "count_flops", "saved_bytes", "saved_bytes_by_kind", "memory_parts", "peak_memory"]


# --------------------------------------------------------------------------- counting


class FlopCounter:
    """Flops and calls per op, in the forward and in the backward pass.

    Use it through :func:`count_flops`::

        with count_flops() as counter:
            loss = model(x)
            loss.backward()
        counter.forward, counter.backward, counter.ratio   # totals and backward / forward
        print(counter.table())                             # one line per op

    An op belongs to the backward pass when it runs while a backward pass is running:
    the VJP rules, the sums that undo broadcasting, the additions of gradients from
    several consumers, and the forward ops that :func:`~chainrule.tensor.checkpoint`
    recomputes.  Everything else is forward.  Counters can be nested; each counts
    everything run inside it.
    """

    def __init__(self):
        self.counts = {}  # (op, "forward" or "backward") -> [calls, flops]
        self._watching = observe_ops(self._observe)

    def __enter__(self):
        self._watching.__enter__()
        return self

    def __exit__(self, *exc_info):
        return self._watching.__exit__(*exc_info)

    def _observe(self, op, inputs, args, out):
        rule = RULES.get(op)
        formula = None if rule is None else rule.flops
        if formula is None:
            raise NotImplementedError(
                f"count_flops: no flop formula for op {op!r}; give its row of chainrule.rules.RULES one (flops=)"
            )
        phase = "backward" if in_backward() else "forward"
        entry = self.counts.setdefault((op, phase), [0, 0])
        entry[0] += 1
        entry[1] += formula(inputs, args, out)

    def _total(self, phase):
        return sum(flops for (op, p), (calls, flops) in self.counts.items() if p == phase)

    @property
    def forward(self):
        """Flops of the ops run outside backward passes."""
        return self._total("forward")

    @property
    def backward(self):
        """Flops of the ops run during backward passes."""
        return self._total("backward")

    @property
    def total(self):
        return self.forward + self.backward

    @property
    def ratio(self):
        """backward / forward (nan when nothing ran forward)."""
        forward = self.forward
        return self.backward / forward if forward else nan

    def rows(self):
        """One dict per op: op, forward_calls, forward_flops, backward_calls, backward_flops.

        Most flops first.
        """
        table: dict = {}
        for (op, phase), (calls, flops) in self.counts.items():
            row = table.setdefault(
                op, {"op": op, "forward_calls": 0, "forward_flops": 0, "backward_calls": 0, "backward_flops": 0}
            )
            row[f"{phase}_calls"] += calls
            row[f"{phase}_flops"] += flops
        return sorted(table.values(), key=lambda row: -(row["forward_flops"] + row["backward_flops"]))

    def table(self):
        """The per-op counts and the totals as a plain-text table."""
        header = f"{'op':<14}{'forward calls':>14}{'forward flops':>16}{'backward calls':>16}{'backward flops':>16}"
        lines = [header, "-" * len(header)]
        for row in self.rows():
            lines.append(
                f"{row['op']:<14}{row['forward_calls']:>14,}{row['forward_flops']:>16,}"
                f"{row['backward_calls']:>16,}{row['backward_flops']:>16,}"
            )
        lines.append("-" * len(header))
        lines.append(f"{'total':<14}{'':>14}{self.forward:>16,}{'':>16}{self.backward:>16,}")
        lines.append(f"backward / forward = {self.ratio:.2f}")
        return "\n".join(lines)

    def __repr__(self):
        return f"FlopCounter(forward={self.forward:,}, backward={self.backward:,}, ratio={self.ratio:.2f})"


def count_flops():
    """``with count_flops() as counter:`` counts the flops of every op run in the block.

    See :class:`FlopCounter` for what it reports and the module docstring for the
    conventions (matmul 2·m·k·n, elementwise 1 per element, ...).
    """
    return FlopCounter()


# --------------------------------------------------------------------------- memory


def _owner(array):
    """The array that owns the memory ``array`` looks at (``array`` itself if it owns it).

    A reshape or a transpose is a view of its input's memory, and keeping the view
    keeps that memory, so views are counted as the array they view.
    """
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _saved_arrays(root):
    """The distinct arrays the graph of ``root`` saved, as ``(activations, leaves)``: two lists of owner arrays.

    Memory is a leaf's when a leaf owns it, also when a node keeps it through a view
    (the transpose of a weight in a matmul is the weight's memory, not an activation).
    """
    vertices = _tensor.recorded_graph(root)
    leaf_memory = {id(_owner(vertex.variable.data)) for vertex in vertices if vertex.is_leaf}
    owners = {}  # id(owner array) -> owner array
    for node in vertices:
        if not node.saved:  # a leaf, or nothing (left) to keep
            continue
        output_slot = len(node.saved) - 1
        for slot, tensor in enumerate(node.saved):
            if tensor is None:
                continue
            owner = _owner(tensor.data)
            owners[id(owner)] = owner
            if slot < output_slot and tensor.grad_fn is None:  # an input that is a leaf
                leaf_memory.add(id(owner))
    activations = [owner for key, owner in owners.items() if key not in leaf_memory]
    leaves = [owner for key, owner in owners.items() if key in leaf_memory]
    return activations, leaves


def saved_bytes_by_kind(root):
    """Bytes of the arrays kept for backward in the graph of ``root``, by kind.

    Returns ``{"activations": ..., "leaves": ...}``: arrays computed in the graph that
    some node saved, and arrays of leaves (parameters, inputs, constants), which exist
    whether or not we train.  Every array is counted once, however many nodes keep it.
    After a backward pass without ``retain_graph`` nothing is kept, and both are 0.
    """
    activations, leaves = _saved_arrays(root)
    return {"activations": sum(a.nbytes for a in activations), "leaves": sum(a.nbytes for a in leaves)}


def memory_parts(loss, optimizer):
    """The peak memory of a training step, predicted in parts (bytes).  Call it between forward and backward.

    The step is: ``optimizer.zero_grad(set_to_none=False)``, forward, backward,
    ``optimizer.step()``, in a loop, so the gradient arrays and the optimizer's state
    live from one step to the next.  The peak comes at the start of the backward pass,
    when all of these are held at once:

    * ``weights``: the parameters of ``optimizer``;
    * ``gradients``: one array per parameter;
    * ``optimizer_state``: ``optimizer.state_per_param`` arrays per parameter (none for
      plain SGD, one for momentum, two for Adam);
    * ``activations``: the arrays the graph of ``loss`` saved that are not leaves;
    * ``in_flight``: the gradients the backward pass holds while it runs, the incoming
      one and the one being computed: two arrays the size of the largest activation.

    ``total`` is their sum.  Inputs the graph saved are the caller's and not counted.
    """
    weights = sum(p.data.nbytes for p in optimizer.params)
    activations, _ = _saved_arrays(loss)
    parts = {
        "weights": weights,
        "gradients": weights,
        "optimizer_state": optimizer.state_per_param * weights,
        "activations": sum(a.nbytes for a in activations),
        "in_flight": 2 * max((a.nbytes for a in activations), default=0),
    }
    parts["total"] = sum(parts.values())
    return parts


def saved_bytes(root):
    """Total bytes of the distinct arrays that the graph of ``root`` keeps in ``node.saved``.

    This is what the backward pass will read: the memory a training step holds on to
    and an inference step does not.  See :func:`saved_bytes_by_kind` for the split into
    activations and leaves.
    """
    totals = saved_bytes_by_kind(root)
    return totals["activations"] + totals["leaves"]


def peak_memory(fn, *args):
    """Call ``fn(*args)``; return ``(result, peak)``, peak being the most bytes in use at once.

    Bytes are counted by Python's tracemalloc from the start of the call, so memory that
    was already allocated is not included; numpy reports its arrays to tracemalloc, so
    arrays and Python objects (graph nodes) both count.  Tracing makes the call slower,
    so do not time a call measured this way.  If tracemalloc is already tracing, its
    recorded peak is reset.
    """
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if started:
            tracemalloc.stop()
    return result, peak - before

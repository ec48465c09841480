"""Recomputation (checkpointing): trade compute for memory by not keeping a function's activations.

Training keeps, for every op, what its VJP rule will read, so memory grows with depth.
:func:`checkpoint` runs a whole function ``fn`` as one op of the graph.  It runs fn with
recording off, so nothing inside fn is kept, and gives the result a node of its own, op
``"checkpoint"``, that saves only fn's inputs.  When the backward pass reaches that
node, the rule runs fn again with recording on and pushes G through the new graph
(:func:`checkpoint_vjp`).  The gradients are the same; the price is one more forward
pass of fn during backward.  This is also called *rematerialization*.

The op is a row of :data:`chainrule.rules.RULES` like any other; this module adds it,
because its rule needs the backward pass and the Tensor class, which the table's other
rules do not.
"""

import contextlib

from .backward import backpropagate
from .grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from .rules import OP_NAMES, RULES, Rule
from .tensor import Tensor, _vertex, observe_ops, observers, record

__all__ = ["checkpoint", "checkpoint_vjp"]


def _checkpoint_forward(*operands):
    """Run ``fn`` on new leaves holding the input arrays, recording nothing; return its array.

    The operands are the input arrays, then ``fn`` and ``reads``, a dict.  When the
    caller is recording a graph, every Tensor that requires grad and that fn reads
    from outside (its parameters) is put into ``reads``, in the order fn first reads
    them.  They are found by watching the ops fn runs: with recording off everything
    fn computes is a plain leaf, so a Tensor that requires grad can only come from outside.
    """
    *arrays, fn, reads = operands

    def note_reads(op, inputs, args, data):
        for tensor in inputs:
            if tensor.requires_grad:
                reads.setdefault(id(tensor), tensor)

    with observe_ops(note_reads) if is_grad_enabled() else contextlib.nullcontext(), no_grad():
        out = fn(*[Tensor(array) for array in arrays])
    if not isinstance(out, Tensor):
        raise TypeError(
            f"checkpoint: fn must return one Tensor, got {type(out).__name__}; "
            "for several results, checkpoint one function per result"
        )
    return out.data


def checkpoint_vjp(g, node, saved):
    """C = f(A₁, …, Aₙ), a function f run as one op by checkpoint().   dA = Jᵀ G (J = dC/dA).

    dA = Jᵀ G for each input A, where J = dC/dA is f's Jacobian, and the same for each
    Tensor P that f reads from outside (its parameters, the extra inputs of the node).

    That is exactly what backpropagation through f's own graph computes, but the graph
    was not kept.  So the rule rebuilds it: it runs f again, recording, on new leaves
    holding the inputs' values (each requiring grad as its input does), and pushes G
    back through the new graph to those leaves and to the P (which are leaves, so the
    inner pass stops there).  The outer pass then hands the results on to the inputs
    as for any other op, so a P also used outside f gets the two contributions added.
    """
    if is_grad_enabled():  # the backward pass is recording: create_graph=True
        raise NotImplementedError(
            "checkpoint: gradients of gradients (create_graph=True) through a checkpoint are not "
            "supported: the recomputed graph starts from new leaves, so it is not connected to the "
            "inputs. Compute the function without checkpoint() to differentiate twice"
        )
    fn, n_inputs = node.args
    leaves = []
    for tensor, needs_grad in zip(saved[:n_inputs], node.needs_input_grad):
        leaves.append(Tensor(tensor.data, requires_grad=needs_grad))
    with set_grad_enabled(True):
        out = fn(*leaves)
    if not isinstance(out, Tensor) or out.shape != node.shape or out.dtype != node.dtype:
        got = f"a Tensor of shape {out.shape}, dtype {out.dtype}" if isinstance(out, Tensor) else type(out).__name__
        raise RuntimeError(
            f"checkpoint: running fn again in backward gave {got}, but the forward pass gave shape "
            f"{node.shape}, dtype {node.dtype}; fn must compute the same thing every time it runs"
        )
    sources = (*leaves, *saved[n_inputs:-1])  # the parameters fn read (the output's slot is last)
    if not out.requires_grad:  # f's result does not depend on anything that needs grad
        return (None,) * len(sources)
    wanted = {id(t) for t in sources if t.requires_grad}
    found = backpropagate([_vertex(out)], [g], retain_graph=False, create_graph=False, wanted=wanted)
    return tuple(found.get(id(t)) for t in sources)


RULES["checkpoint"] = Rule(_checkpoint_forward, checkpoint_vjp, reads=("*",), checks_finite=False)


def checkpoint(fn, *inputs):
    """Return ``fn(*inputs)`` without keeping the activations inside ``fn`` for backward.

    fn runs with recording off, so nothing inside it is kept; its result gets one node,
    op ``"checkpoint"``, that keeps only the inputs.  When the backward pass reaches the
    node, fn runs once more with recording on and G is pushed through that new graph
    (:func:`checkpoint_vjp`).  The gradients are the same; the price is one more
    forward pass of fn during backward.

    ``fn`` takes the input Tensors and returns one Tensor.  As in torch.utils.checkpoint
    it may use parameters from its closure, such as the weights of the layers it runs:
    the Tensors that require grad and that fn reads are found while it runs and become
    inputs of the node too, so their gradients arrive as along any other edge (and add
    up with those from uses outside fn).  Rules for fn:

    * it must compute the same thing each time it is called (it is called twice);
    * a Tensor that requires grad and was *computed* outside fn (not a leaf) must be
      passed as an input, not read from the closure;
    * gradients of gradients (``create_graph=True``) through it are not supported.

    Checkpoints may be nested; each level adds one more recomputation of the inner part.
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: fn must be callable, got {type(fn).__name__}; call checkpoint(fn, *inputs)")
    for i, tensor in enumerate(inputs):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"checkpoint: inputs[{i}] is a {type(tensor).__name__}, not a Tensor; "
                "pass Tensors (wrap arrays with Tensor(...), or put constants inside fn)"
            )
    rule = RULES["checkpoint"]
    reads = {}  # filled by the forward function
    data = rule.forward(*[t.data for t in inputs], fn, reads)
    reads = tuple(reads.values())
    for tensor in reads:
        if tensor.grad_fn is not None:
            raise ValueError(
                f"checkpoint: fn reads a Tensor of shape {tensor.shape} that was computed outside it "
                f"(by {OP_NAMES.get(tensor.grad_fn.op, tensor.grad_fn.name)!r}) and requires grad; pass it "
                "as an input instead, e.g. checkpoint(fn, x, h) with fn taking (x, h)"
            )
    out = Tensor(data)
    args = (fn, len(inputs))
    for observer in observers:
        observer("checkpoint", inputs, args, data)
    if is_grad_enabled() and (reads or any(t.requires_grad for t in inputs)):
        # The node's inputs: fn's inputs, then the parameters fn read (known only now that
        # it has run).  The rule finds fn's inputs as the first n_inputs.
        record(out, "checkpoint", inputs + reads, args)
    return out

"""checkpointing: a function of Tensors run as one op, and run again in the backward pass.

Training keeps, for every op, what its rule will read, so memory grows with depth.
:func:`chainrule.checkpoint` runs a function ``fn`` with recording off, so nothing inside
it is kept, and gives the result one node that keeps only fn's inputs. Its rule runs fn
again, recording, and pushes G through the new graph. The gradients are the same; the
price is one more forward pass of fn during backward ("recomputation",
"rematerialization"). Before each random draw fn's ops make (dropout's masks) the
generator's state is kept, a few numbers, and the same draws are made again from it when
fn runs again, so both runs compute the same function, as PyTorch's ``preserve_rng_state``
makes them without keeping a mask.

Its forward is not an array function, as the other ops' are: fn takes Tensors, and the
parameters it reads from its closure become inputs of the node too. So
:func:`chainrule.tensor.checkpoint` runs it here (:func:`run_once`) and records the op
as :func:`~chainrule.tensor.apply` records any other; the row of the rule table names
:func:`checkpoint_vjp` like any other. This module has no Tensor class to import (the
array engine imports it), so it takes the class of the Tensors it is given.
"""

from .backward import backpropagate
from .grad_mode import draws_kept, draws_replayed, is_grad_enabled, no_grad, observe_ops, set_grad_enabled
from .node import vertex_of

__all__ = ["run_once", "checkpoint_vjp", "refuse_apply"]


def refuse_apply(*arrays_and_args):
    """The row's forward: checkpoint is run by :func:`chainrule.checkpoint`, never by ``apply``."""
    raise TypeError("apply('checkpoint'): call chainrule.checkpoint(fn, *inputs), which runs fn and records it")


def run_once(fn, inputs):
    """Run ``fn`` on new leaves holding the inputs' arrays, recording nothing.

    Returns fn's result, the generator states of the random draws its ops made (dropout's
    masks: the backward pass draws them again from those states) and, when recording is on,
    the Tensors that
    require grad and that fn read from outside (its parameters), in the order fn first read
    them.  They are found by watching the ops fn runs, and fn's result: with recording off
    everything fn computes is a plain leaf, so a Tensor that requires grad can only come from
    outside, and one that fn returns unchanged is read by the checkpoint.
    """
    found: dict = {}

    def note_reads(op, op_inputs, args, data):
        for tensor in op_inputs:
            if tensor.requires_grad:
                found.setdefault(id(tensor), tensor)

    with observe_ops(note_reads), no_grad(), draws_kept() as draws:
        out = fn(*[tensor.detach() for tensor in inputs])
    if getattr(out, "requires_grad", False):  # a parameter returned as it is: read as much as an op's input
        found.setdefault(id(out), out)
    if not is_grad_enabled():
        return out, draws, ()
    for tensor in found.values():
        if tensor.grad_fn is not None:
            raise ValueError(
                f"checkpoint: fn reads a Tensor of shape {tensor.shape} that was computed outside it "
                f"(by {tensor.grad_fn.rule.name!r}) and requires grad; pass it "
                "as an input instead, e.g. checkpoint(fn, x, h) with fn taking (x, h)"
            )
    return out, draws, tuple(found.values())


def checkpoint_vjp(g, node, saved):
    """C = f(A₁, …, Aₙ), a function f run as one op by checkpoint().   dA = Jᵀ G (J = dC/dA).

    dA = Jᵀ G for each input A, where J = dC/dA is f's Jacobian, and the same for each
    Tensor P that f reads from outside (its parameters, the node's inputs after the
    first n).

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
    fn, n_inputs, draws = node.args
    tensor_class = type(g)  # rules have no Tensor class to import (tensor.py imports them)
    leaves = []
    for tensor, needs_grad in zip(saved[:n_inputs], node.needs_input_grad[:n_inputs], strict=True):
        leaf = tensor.detach()
        leaf.requires_grad = needs_grad
        leaves.append(leaf)
    replay = draws_replayed(draws)  # the forward pass's random draws, so that fn computes the same
    with set_grad_enabled(True), replay:
        out = fn(*leaves)
    if replay.draws:
        raise RuntimeError(
            f"checkpoint: running fn again in backward made {len(draws) - len(replay.draws)} random draws, "
            f"the forward pass {len(draws)}; fn must compute the same thing every time it runs"
        )
    is_tensor = isinstance(out, tensor_class)
    if not is_tensor or out.shape != node.shape or out.dtype != node.dtype:
        got = f"a Tensor of shape {out.shape}, dtype {out.dtype}" if is_tensor else type(out).__name__
        raise RuntimeError(
            f"checkpoint: running fn again in backward gave {got}, but the forward pass gave shape "
            f"{node.shape}, dtype {node.dtype}; fn must compute the same thing every time it runs"
        )
    sources = (*leaves, *saved[n_inputs:-1])  # the parameters fn read (the output's slot is last)
    if not out.requires_grad:  # f's result does not depend on anything that needs grad
        return (None,) * len(sources)
    vertices = [vertex_of(t) if t.requires_grad else None for t in sources]
    wanted = {id(vertex) for vertex in vertices if vertex is not None}
    found = backpropagate([vertex_of(out)], [g], retain_graph=False, create_graph=False, wanted=wanted)
    return tuple(None if vertex is None else found.get(id(vertex)) for vertex in vertices)

"""The engine's modes: is an op recorded (grad mode), who watches it, and is it part of a backward pass.

:class:`no_grad` and :class:`set_grad_enabled` turn recording off and on for a block, as
in PyTorch; :func:`is_grad_enabled` reads the switch.  :class:`observe_ops` lets a
callback see every op that :func:`~chainrule.tensor.apply` runs.  The backward pass runs
inside :class:`backward_phase`, so that :mod:`chainrule.cost` can book the ops it runs
(and those that checkpoint recomputes) as backward work.  Pure Python, like the scalar
engine.

Grad mode and the backward phase belong to a thread, as PyTorch's grad mode does: a
``no_grad`` block in one thread (a grader may run checks in a pool of threads) does not stop
another thread from recording its graph.
"""

import threading

__all__ = [
    "no_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "observe_ops",
    "observers",
    "in_backward",
    "backward_phase",
    "random_draw",
    "draws_kept",
    "draws_replayed",
]


class _Modes(threading.local):
    """Each thread's modes; a new thread starts recording, outside any backward pass, unobserved."""

    grad_enabled = True
    in_backward = False
    kept_draws: list | None = None  # a list, while checkpoint runs its function: the random draws made
    replayed_draws: list | None = None  # a list, while checkpoint runs it again: the draws to give back, in order

    def __init__(self):
        self.observers = []  # this thread's: another thread's ops are not theirs to see


_state = _Modes()


def is_grad_enabled():
    """True when operations record a graph (the default); False inside :class:`no_grad`."""
    return _state.grad_enabled


class set_grad_enabled:
    """``with set_grad_enabled(mode):`` turns graph recording on or off for a block."""

    def __init__(self, mode):
        self.mode = bool(mode)

    def __enter__(self):
        self.previous = _state.grad_enabled
        _state.grad_enabled = self.mode
        return self

    def __exit__(self, *exc_info):
        _state.grad_enabled = self.previous
        return False


class no_grad(set_grad_enabled):
    """``with no_grad():`` computes without recording a graph (inference, parameter updates)."""

    def __init__(self):
        super().__init__(False)


def thread_modes():
    """This thread's modes, all at once (``grad_enabled``, ``observers``, ...): ``apply`` reads two per op."""
    return _state


def observers():
    """This thread's observers: each is called by ``apply`` as ``observer(op, inputs, args, output_array)``
    after every op this thread runs (``inputs`` are the Tensors).  chainrule.cost counts flops
    this way, and checkpoint's forward notes which Tensors its function reads.  Another
    thread's ops are not reported: a count in one thread is not spoilt by another's work."""
    return _state.observers


class observe_ops:
    """``with observe_ops(callback):`` calls ``callback(op, inputs, args, output_array)`` after every op.

    ``inputs`` are the op's input Tensors and ``args`` its constant arguments.  Ops of
    the backward pass are reported too; :func:`in_backward` tells them apart.  Only the ops
    of the thread that entered the block are reported.
    :mod:`chainrule.cost` counts flops this way.  Blocks can be nested.
    """

    def __init__(self, callback):
        self.callback = callback

    def __enter__(self):
        _state.observers.append(self.callback)
        return self

    def __exit__(self, *exc_info):
        _state.observers.remove(self.callback)
        return False


def in_backward():
    """True while a backward pass runs (its VJP rules, and what checkpoint recomputes)."""
    return _state.in_backward


class backward_phase:
    """``with backward_phase():`` marks the ops run inside as backward work (see :func:`in_backward`).

    It restores the previous value on exit, so a backward pass started inside another
    one (by checkpoint's rule) leaves the outer pass still marked.
    """

    def __enter__(self):
        self.previous, _state.in_backward = _state.in_backward, True

    def __exit__(self, *exc_info):
        _state.in_backward = self.previous
        return False


# --------------------------------------------------------------------------- random draws


def random_draw(draw, rng, shape, op):
    """``draw(rng)``, an array of ``shape`` drawn at random with the numpy Generator ``rng`` (dropout's
    mask). Inside a checkpoint, the generator's state before the draw is kept, not the array: two
    integers for numpy's default PCG64, where the mask is the size of the activation (the classes are
    kept with it, as this module imports no numpy: Value needs none). While checkpoint runs its function again,
    the same draw is made again from a copy of that state (``rng`` itself is left where it is), so
    that both runs compute the same function, as PyTorch's ``preserve_rng_state`` does."""
    replayed = _state.replayed_draws
    if replayed is not None:
        if not replayed or replayed[0][-1] != tuple(shape):
            got = "no draw" if not replayed else f"one of shape {replayed[0][-1]}"
            raise RuntimeError(
                f"checkpoint: running fn again in backward, {op} wants a random draw of shape {tuple(shape)}, "
                f"but the forward pass made {got} at this point; fn must compute the same thing every time it runs"
            )
        kept = replayed.pop(0)
        generator, bit_generator, state, _ = kept
        again = generator(bit_generator())
        again.bit_generator.state = state
        array = draw(again)
    elif _state.kept_draws is not None:  # inside a checkpoint: the state before the draw, a copy
        if not hasattr(rng, "bit_generator"):
            raise TypeError(
                f"{op} inside checkpoint: rng must be a numpy Generator (np.random.default_rng(seed)), "
                f"whose state can be kept and drawn from again, got {type(rng).__name__}"
            )
        kept = (type(rng), type(rng.bit_generator), rng.bit_generator.state, tuple(shape))
        array = draw(rng)
    else:
        return draw(rng)
    if _state.kept_draws is not None:  # a checkpoint inside the one replayed keeps its own draws too
        _state.kept_draws.append(kept)
    return array


class draws_kept:
    """``with draws_kept() as draws:`` keeps, in ``draws``, the random draws made in the block."""

    def __enter__(self):
        self.previous, _state.kept_draws = _state.kept_draws, []
        return _state.kept_draws

    def __exit__(self, *exc_info):
        kept, _state.kept_draws = _state.kept_draws, self.previous
        if self.previous is not None and kept is not None:  # an enclosing checkpoint replays these draws too
            self.previous.extend(kept)
        return False


class draws_replayed:
    """``with draws_replayed(draws):`` gives ``draws`` back, in order, to the random ops of the block."""

    def __init__(self, draws):
        self.draws = list(draws)

    def __enter__(self):
        self.previous, _state.replayed_draws = _state.replayed_draws, self.draws
        self.kept, _state.kept_draws = _state.kept_draws, None  # a nested checkpoint keeps its own
        return self

    def __exit__(self, *exc_info):
        _state.replayed_draws, _state.kept_draws = self.previous, self.kept
        return False

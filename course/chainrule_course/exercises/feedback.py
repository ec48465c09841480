"""Feedback on exercise answers: which quantity is wrong, where, and which known mistake it is.

A check computes the right answer with ``chainrule`` itself, and the answers that common
mistakes give (a missing ``λW``, a transposed gradient, a bias gradient not summed over the
batch, a lost fan-out contribution, ...). A wrong answer raises :class:`AnswerError`, whose
message says, before anything else, the quantity, the first entry that differs, the expected
and the received value, and the mistake the answer matches when it matches one::

    dJ/dW1 is wrong at entry (0, 2): expected 0.0414, received 0.0372 (24 of 32 entries
    differ). It matches a known mistake: the weight-decay term λ·W1 is missing.

The checks never raise anything but :class:`AnswerError` for a bad answer: ``None``, a
string, a wrong shape, nan, or a function that raises are all explained, not crashed on.

This is the module a check cell imports (``from chainrule_course.exercises import feedback``), and
it loads without numpy: with it come the helpers every check cell uses (``exercise``,
``Summary``, ``call``, ...) and the checks whose answers need no numpy (:mod:`chainrule_course.exercises.scalar_checks`,
:mod:`chainrule_course.exercises.tape_checks`, :mod:`chainrule_course.exercises.count_checks`), so that
those exercises are checked where there is no numpy (the page's Python).
The array chapters' checks (:mod:`chainrule_course.exercises.array_checks`,
:mod:`chainrule_course.exercises.gradient_checks`, :mod:`chainrule_course.exercises.layer_checks`,
:mod:`chainrule_course.exercises.row_checks` and :mod:`chainrule_course.exercises.capstone_checks`)
load, with numpy, the first time one is asked for (``feedback.check_matmul_vjp``).
"""

from __future__ import annotations

# Re-exported (`X as X`): check cells use them as feedback.*.
from .answers import RTOL as RTOL
from .answers import AnswerError as AnswerError
from .answers import NotAnswered as NotAnswered
from .answers import check_scalars as check_scalars
from .calling import TIME_LIMIT as TIME_LIMIT
from .calling import call as call
from .count_checks import MEMORY_SIZES as MEMORY_SIZES
from .count_checks import check_longest_chain as check_longest_chain
from .count_checks import check_memory_count as check_memory_count
from .count_checks import check_memory_count_function as check_memory_count_function
from .count_checks import d2l_memory as d2l_memory
from .count_checks import memory_mistakes as memory_mistakes
from .scalar_checks import check_cube_grads as check_cube_grads
from .scalar_checks import check_cube_grads_function as check_cube_grads_function
from .scalar_checks import check_dfs_order_function as check_dfs_order_function
from .scalar_checks import check_hypot_jvp as check_hypot_jvp
from .scalar_checks import check_tanh_neuron_grads as check_tanh_neuron_grads
from .scalar_checks import check_tanh_neuron_grads_function as check_tanh_neuron_grads_function
from .scalar_checks import check_topological_order as check_topological_order
from .tape_checks import check_first_bad_entry as check_first_bad_entry
from .tape_checks import check_first_bad_entry_function as check_first_bad_entry_function
from .tape_checks import check_tape_grads as check_tape_grads
from .tape_checks import check_tape_grads_function as check_tape_grads_function
from .verdicts import Summary as Summary
from .verdicts import exercise as exercise
from .verdicts import fresh as fresh


def array_modules() -> tuple:
    """The array chapters' check modules, in the order :func:`__getattr__` looks in them: imported (with numpy)
    the first time a name of theirs is asked for. Here, not at the top: the page's Python has no numpy."""
    from . import array_checks, capstone_checks, gradient_checks, layer_checks, row_checks

    return (array_checks, gradient_checks, layer_checks, row_checks, capstone_checks)


def __getattr__(name: str):
    """An array chapters' check or helper (``feedback.check_matmul_vjp``), from the first of
    :func:`array_modules` that has it."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    for module in array_modules():
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    found = {name for module in array_modules() for name in dir(module) if not name.startswith("__")}
    return sorted(set(globals()) | found)

"""The check of the layers chapter's new row: softplus, added to the tensor engine as a row of its rule table.

The answer is three functions: ``softplus_forward(a)`` on numpy arrays, the VJP rule
``softplus_vjp(g, node, saved)`` called as the engine calls a rule (Tensors in, a tuple of
gradients out), and ``softplus_row()``, the :class:`chainrule.rules.Rule` that joins them
with what the rule reads. Each runs apart, like every answer: the rule gets Tensors and a
stand-in for its node (the fields a rule may read), and its gradients come back as Tensors.
The check tries the forward and the rule on two sizes, with the node's slots filled as the
row's ``reads`` says, then puts a row of the answer's forward, rule and ``reads`` into the
engine's table and runs the engine's own gradient check through it.
:mod:`chainrule_course.exercises.feedback` loads this module the first time a check cell asks for it.
"""

from __future__ import annotations

import types
from collections.abc import Callable

import numpy as np

from chainrule.gradcheck import GradientCheckError, gradcheck
from chainrule.rules import RULES, Rule
from chainrule.tensor import Tensor, apply

from ..grading.contract import allowed, seeded
from .answers import AnswerError, Mistake, NotAnswered, check_array
from .calling import call

OP = "softplus"
#: What a one-input rule can read: its input A and its output C.
SLOTS = ("A", "C")
EXTREMES = np.array([-800.0, -30.0, -2.0, -0.5, 0.0, 0.7, 3.0, 30.0, 800.0])


def softplus(a):
    """log(1 + exp(a)), finite for every float64 ``a``."""
    return np.logaddexp(0.0, a)


def sigmoid(a):
    """1 / (1 + exp(-a)), the derivative of softplus, without overflow."""
    return np.exp(-np.logaddexp(0.0, -a))


def _problem(seed: int, index: int):
    """A and G of one call: a vector with entries out to ±800, then a matrix."""
    rng = np.random.default_rng(seeded(seed) * 2 + index)
    if seed == 0:
        a = EXTREMES if index == 0 else rng.normal(scale=4.0, size=(3, 4))
    else:
        shape = (int(rng.integers(5, 12)),) if index == 0 else tuple(int(n) for n in rng.integers(2, 6, size=2))
        a = rng.normal(scale=4.0, size=shape)
        a.flat[0] = float(rng.choice([-800.0, 800.0]))
    return a, rng.normal(size=a.shape)


def _reads(name: str, row) -> tuple[str, ...]:
    """The names the row's ``reads`` lists for softplus's one input, after checking the row's form."""
    if not isinstance(row, (tuple, list)) or len(row) < 4:
        got = f"{len(row)} values" if isinstance(row, (tuple, list)) else f"one {type(row).__name__}"
        raise AnswerError(name, f"{name} should return the row Rule(forward, vjp, reads, name), not {got}.")
    for index, role, function in ((0, "forward", "softplus_forward"), (1, "VJP rule", "softplus_vjp")):
        if type(row[index]).__name__ != "function":
            kind = type(row[index]).__name__
            raise AnswerError(name, f"the row's {role} should be the function {function}, not {kind}.")
    if row[3] != OP:
        raise AnswerError(name, f"the row's name, which the engine's messages use, should be {OP!r}, not {row[3]!r}.")
    reads = row[2]
    if isinstance(reads, (tuple, list)) and reads and all(isinstance(r, str) for r in reads):
        raise AnswerError(
            name,
            f"reads has one entry per input, each a tuple of names: softplus has one input, so "
            f"({tuple(reads)!r},), not {tuple(reads)!r}.",
            "reads not per input",
        )
    if not isinstance(reads, (tuple, list)) or len(reads) != 1 or not isinstance(reads[0], (tuple, list)):
        raise AnswerError(name, f"reads should hold one tuple of names, for softplus's one input, not {reads!r}.")
    unknown = [r for r in reads[0] if r not in SLOTS]
    if unknown:
        raise AnswerError(
            name,
            f"reads names {unknown[0]!r}: softplus has one input, A, and one output, C, so its rule "
            "can read only those.",
        )
    return tuple(reads[0])


def _node(shape) -> types.SimpleNamespace:
    """What a rule may read of its node, for softplus on an input of ``shape``."""
    return types.SimpleNamespace(args=(), input_shapes=(tuple(shape),), needs_input_grad=(True,))


def _saved(a, names) -> tuple:
    """The node's slots (A, then C) with only what ``names`` lists kept, as the engine keeps them."""
    return (Tensor(a) if "A" in names else None, Tensor(softplus(a)) if "C" in names else None)


#: Every choice of slots a row can keep: the rule is called with each, whatever the row says,
#: so that the grader records the same calls for every answer and replays each of them.
CHOICES = ((), ("A",), ("C",), ("A", "C"))


def _rule_results(softplus_vjp, a, g) -> dict:
    """What the student's rule returns, or the error it raises, for each choice of kept slots."""
    found = {}
    for kept in CHOICES:
        try:
            found[kept] = call(
                "softplus_vjp", softplus_vjp, Tensor(g), _node(a.shape), _saved(a, kept), names=("g", "node", "saved")
            )
        except NotAnswered:
            raise
        except AnswerError as error:
            found[kept] = error
    return found


def _gradient(results: dict, kept) -> Tensor:
    """dA from the rule's results with the slots ``kept``; it must have returned a tuple."""
    name, kept = "softplus_vjp", tuple(s for s in SLOTS if s in kept)
    result = results[kept]
    if isinstance(result, AnswerError):
        if kept != SLOTS and not isinstance(results[SLOTS], AnswerError):
            empty = " and ".join(s for s in SLOTS if s not in kept)
            raise AnswerError(
                name,
                f"softplus_vjp reads what the row does not keep: its reads lists {kept or 'nothing'}, so the "
                f"node's slot for {empty} is None. List in reads every value the rule reads.",
                "a slot the row does not keep",
            )
        raise result
    if isinstance(result, (tuple, list)) and len(result) == 1:
        if not isinstance(result[0], Tensor):
            raise AnswerError(
                name,
                f"a rule returns Tensors, and softplus_vjp returned a {type(result[0]).__name__}: the backward "
                "pass adds and checks gradients as Tensors. Use Tensor operations, or wrap the array in Tensor(...).",
                "not a Tensor",
            )
        return result[0]
    got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
    raise AnswerError(name, f"a rule returns one gradient per input, in a tuple: (dA,), not {got}.", "not a tuple")


def _vjp_mistakes(a, g, c) -> list[Mistake]:
    with np.errstate(over="ignore"):
        exp = np.exp(a)
    return [
        Mistake("the incoming gradient G is missing: dA = G * sigmoid(A)", sigmoid(a)),
        Mistake(
            "1 / (1 + exp(A)) is sigmoid(-A); softplus's slope is exp(A) / (1 + exp(A)) = sigmoid(A)",
            g * sigmoid(-a),
        ),
        Mistake("G * C is exp's rule; softplus's slope is sigmoid(A) = 1 - exp(-C)", g * c),
        Mistake("G * exp(A) is exp's rule; softplus's slope is exp(A) / (1 + exp(A))", g * exp),
    ]


@allowed("numpy", "chainrule")
def check_softplus_row(
    softplus_forward: Callable, softplus_vjp: Callable, softplus_row: Callable, seed: int = 0
) -> None:
    """softplus as a row of the rule table: the forward on two sizes (entries out to ±800), the rule
    with only the slots its row keeps, no slot kept that the rule does not read, then the engine's
    gradient check of the row, put into the table."""
    kept = _reads("softplus_row", call("softplus_row", softplus_row))
    for index in (0, 1):
        a, g = _problem(seed, index)
        with np.errstate(over="ignore"):
            naive = np.log(1 + np.exp(a))
        forward = call("softplus_forward", softplus_forward, a, names=("a",))
        overflow = "log(1 + exp(a)) overflows to inf above a = 709: write it as max(a, 0) + log1p(exp(-|a|))"
        check_array(f"softplus_forward(a) for a of shape {a.shape}", forward, softplus(a), [Mistake(overflow, naive)])
        results = _rule_results(softplus_vjp, a, g)
        da = _gradient(results, kept)
        check_array(f"dA for A of shape {a.shape}", da, g * sigmoid(a), _vjp_mistakes(a, g, softplus(a)))
    for unread in kept if len(kept) > 1 else ():
        try:
            less = _gradient(results, [s for s in kept if s != unread])
        except AnswerError:
            continue
        if np.allclose(less.data, g * sigmoid(a)):  # _gradient returns a Tensor
            raise AnswerError(
                "softplus_row",
                f"the row keeps {unread}, which softplus_vjp never reads: a saved tensor held in memory from "
                "the forward pass to the backward pass for nothing. Leave it out of reads.",
                "a slot kept that the rule does not read",
            )
    _engine_check(softplus_forward, softplus_vjp, kept, seed)


def _engine_check(softplus_forward: Callable, softplus_vjp: Callable, kept, seed: int) -> None:
    """The student's row (forward, rule and reads) in the engine's table, under the engine's gradient check.

    The rule is called on the slots the row keeps, filled with the check's own A and C, so that what it
    is called with does not depend on the answer's forward (the grader replays the calls it recorded)."""
    rng = np.random.default_rng(seeded(seed) * 2 + 2)
    x = Tensor(rng.normal(size=(2, 3)), requires_grad=True)
    weights = Tensor(rng.normal(size=(2, 3)))

    def forward(a):
        return np.asarray(call("softplus_forward", softplus_forward, a, names=("a",)), dtype=float)

    def vjp(g, node, saved):  # the student's rule, run apart, on the slots the row keeps
        return (_gradient(_rule_results(softplus_vjp, x.data, g.data), kept),)

    before = RULES.get(OP)
    RULES[OP] = Rule(forward, vjp, (tuple(kept),), OP)
    try:
        gradcheck(lambda t: (apply(OP, t) * weights).sum(), [x]).raise_if_failed()
    except GradientCheckError as error:
        raise AnswerError("softplus_vjp", f"the engine's gradient check fails with this row: {error}") from None
    finally:
        if before is None:
            del RULES[OP]
        else:
            RULES[OP] = before

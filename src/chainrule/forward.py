"""Forward mode: dual numbers, and the evaluation trace of a Value graph.

Reverse mode (:meth:`chainrule.Value.backward`) records the forward pass and walks it
back.  Forward mode records nothing: it carries, next to every number, the derivative
of that number along one chosen direction of the inputs, its *tangent*.  A
:class:`Dual` is such a pair, written ``a + ȧδ`` with ``δ² = 0``: then

    f(a + ȧδ) = f(a) + f'(a) ȧ δ

so evaluating ``f`` on a Dual gives the value and the directional derivative in one
pass.  Every operation below states its *JVP rule* (how the output's tangent follows
from the inputs' tangents) in its docstring; for ``c = f(a, b)`` it is

    ċ = ∂c/∂a · ȧ + ∂c/∂b · ḃ

with the same local derivatives that :class:`~chainrule.value.Value` records for the
backward pass.

A Dual's two parts may be floats, or Values, or Duals themselves: the rules use only
arithmetic and the parts' own ``tanh``/``exp``/... methods.  With Values as parts,
``backward()`` on the tangent differentiates a directional derivative (reverse over
forward); a reverse pass written in plain arithmetic and run on Duals gives forward
over reverse.  Duals carry no tag that tells two perturbations apart, so a ``jvp``
nested inside another through a closure mixes them up (perturbation confusion); JAX
tags them by level.

:func:`evaluation_trace` writes a Value graph as its *evaluation trace* (a Wengert
list): one line per operation, in an order in which it can be run, each line naming
the earlier lines it reads.  :func:`run_trace` runs such a list again on any numbers.
"""

import math
from numbers import Real
from typing import NamedTuple

from .graph import topological_order
from .value import Value, stable_sigmoid

__all__ = ["Dual", "jvp", "Step", "evaluation_trace", "format_trace", "run_trace"]


def _check_part(x, operation):
    """``x`` if it can be part of a Dual (a real number, a Value or a Dual), else a TypeError naming ``operation``."""
    if isinstance(x, (Dual, Value)) or (isinstance(x, Real) and not isinstance(x, bool)):
        return x
    raise TypeError(f"{operation}: expected a real number, a Value or a Dual, got {type(x).__name__} {x!r}")


def _real(x):
    """The float inside ``x``: a Value's data, a Dual's primal, all the way down."""
    while not isinstance(x, Real):
        x = x.primal if isinstance(x, Dual) else x.data
    return float(x)


_FLOAT_FUNCTIONS = {
    "tanh": math.tanh,
    "exp": math.exp,
    "log": math.log,
    "sigmoid": stable_sigmoid,
    "relu": lambda a: max(a, 0.0),
}


def call(name, x):
    """``x.name()`` for a Value or a Dual, the math function of that name for a plain number."""
    if isinstance(x, (Dual, Value)):
        return getattr(x, name)()
    if name == "log" and x <= 0:
        raise ValueError(f"log: the input must be positive, got {x!r}")
    return _FLOAT_FUNCTIONS[name](float(x))


class Dual:
    """A number with its tangent, ``primal + tangent·δ`` where ``δ² = 0``.

    ``Dual(2.0, 1.0)`` is x = 2 moving at speed 1: any function of it computed with
    Dual arithmetic carries, as its ``tangent``, its derivative with respect to x.  A
    plain number in an operation is a constant: its tangent is 0.
    """

    __slots__ = ("primal", "tangent")

    def __init__(self, primal, tangent=0.0):
        self.primal = _check_part(primal, "Dual() primal")
        self.tangent = _check_part(tangent, "Dual() tangent")

    @staticmethod
    def _make(primal, tangent):
        """The Dual an operation produces, without the checks of ``Dual()`` (its parts are numbers already)."""
        out = object.__new__(Dual)
        out.primal, out.tangent = primal, tangent
        return out

    def __repr__(self):
        return f"Dual({self.primal!r}, {self.tangent!r})"

    @staticmethod
    def _operand(other, operation):
        if isinstance(other, Dual):
            return other
        return Dual(_check_part(other, f"Dual {operation}"), 0.0)

    def __add__(self, other):
        """``c = a + b``;  ċ = ȧ + ḃ."""
        other = self._operand(other, "+ (add)")
        return Dual._make(self.primal + other.primal, self.tangent + other.tangent)

    def __sub__(self, other):
        """``c = a - b``;  ċ = ȧ - ḃ."""
        other = self._operand(other, "- (subtract)")
        return Dual._make(self.primal - other.primal, self.tangent - other.tangent)

    def __mul__(self, other):
        """``c = a * b``;  ċ = b ȧ + a ḃ."""
        other = self._operand(other, "* (multiply)")
        a, b = self.primal, other.primal
        return Dual._make(a * b, self.tangent * b + a * other.tangent)

    def __truediv__(self, other):
        """``c = a / b``;  ċ = (ȧ - c ḃ) / b.  Raises for b == 0."""
        other = self._operand(other, "/ (divide)")
        if _real(other.primal) == 0.0:
            raise ZeroDivisionError(f"Dual / (divide): division of {_real(self.primal)!r} by zero")
        quotient = self.primal / other.primal
        return Dual._make(quotient, (self.tangent - quotient * other.tangent) / other.primal)

    def __pow__(self, exponent):
        """``c = a ** k`` for a constant k;  ċ = k a^(k-1) ȧ."""
        if not isinstance(exponent, Real) or isinstance(exponent, bool):
            raise TypeError(f"Dual ** (power): the exponent must be a constant int or float, got {exponent!r}")
        k, a = float(exponent), self.primal
        if _real(a) == 0.0 and k < 1.0 and k != 0.0:
            raise ZeroDivisionError(f"Dual ** (power): 0 ** {k!r} has no finite derivative")
        if _real(a) < 0.0 and not k.is_integer():
            raise ValueError(f"Dual ** (power): {_real(a)!r} ** {k!r} is not a real number")
        local = k * a ** (k - 1.0) if k != 0.0 else 0.0
        return Dual._make(a**k, local * self.tangent)

    def __neg__(self):
        """``c = -a``;  ċ = -ȧ."""
        return Dual._make(-self.primal, -self.tangent)

    def __radd__(self, other):
        return self._operand(other, "+ (add)") + self

    def __rsub__(self, other):
        return self._operand(other, "- (subtract)") - self

    def __rmul__(self, other):
        return self._operand(other, "* (multiply)") * self

    def __rtruediv__(self, other):
        return self._operand(other, "/ (divide)") / self

    def tanh(self):
        """``c = tanh(a)``;  ċ = (1 - c²) ȧ."""
        t = call("tanh", self.primal)
        return Dual._make(t, (1.0 - t * t) * self.tangent)

    def exp(self):
        """``c = exp(a)``;  ċ = c ȧ."""
        e = call("exp", self.primal)
        return Dual._make(e, e * self.tangent)

    def log(self):
        """``c = log(a)``;  ċ = ȧ / a.  Raises for a <= 0."""
        if _real(self.primal) <= 0.0:
            raise ValueError(f"Dual.log: the input must be positive, got {_real(self.primal)!r}")
        return Dual._make(call("log", self.primal), self.tangent / self.primal)

    def sigmoid(self):
        """``c = 1 / (1 + exp(-a))``;  ċ = c (1 - c) ȧ."""
        s = call("sigmoid", self.primal)
        return Dual._make(s, s * (1.0 - s) * self.tangent)

    def relu(self):
        """``c = max(a, 0)``;  ċ = ȧ if a > 0 else 0 (0 at the kink, as Value)."""
        if _real(self.primal) > 0.0:
            return Dual._make(self.primal, self.tangent)
        return Dual._make(0.0 * self.primal, 0.0 * self.tangent)


def _split(out, where):
    if isinstance(out, Dual):
        return out.primal, out.tangent
    _check_part(out, where)
    return out, 0.0  # f ignored its inputs: a constant


def jvp(f, primals, tangents):
    """``(f(*primals), its derivative along tangents)`` in one forward pass, as ``jax.jvp``.

    ``f`` takes the numbers as separate arguments and returns a number or a tuple of
    numbers; the tangent out is then a number or a list.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            f"jvp: primals and tangents must be tuples or lists, one entry per argument of f, "
            f"got {type(primals).__name__} and {type(tangents).__name__}; write jvp(f, (x,), (v,))"
        )
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents; give one tangent per input")
    out = f(*(Dual(p, t) for p, t in zip(primals, tangents, strict=True)))
    if isinstance(out, (tuple, list)):
        pairs = [_split(o, f"jvp: output {i} of f") for i, o in enumerate(out)]
        return [p for p, _ in pairs], [t for _, t in pairs]
    return _split(out, "jvp: the output of f")


# --------------------------------------------------------------------------- the evaluation trace


class Step(NamedTuple):
    """One line of an evaluation trace: ``name = op(args)``, whose value was ``value``.

    ``args`` are the names of earlier lines, or floats for constants; an input's line
    has ``op == "input"`` and no args.
    """

    name: str
    op: str
    args: tuple
    value: float


def evaluation_trace(output, inputs):
    """The Wengert list of the Value graph of ``output``: input lines, then one line per operation.

    The inputs are named by their labels (``x1``, ``x2``, ... when unlabelled) and the
    operations ``v1``, ``v2``, ... in topological order.  A leaf that is not one of
    ``inputs`` is a constant and is written as its number.
    """
    inputs = list(inputs)
    if not all(isinstance(x, Value) for x in [output, *inputs]):
        raise TypeError("evaluation_trace: the output and the inputs must be Values")
    names = {id(x): x.label or f"x{i + 1}" for i, x in enumerate(inputs)}
    if len(set(names.values())) < len(inputs):
        raise ValueError(f"evaluation_trace: two inputs have the same name: {sorted(names.values())}")
    reserved = sorted(n for n in names.values() if n[:1] == "v" and n[1:].isdigit())
    if reserved:
        raise ValueError(
            f"evaluation_trace: the input labels {reserved} are the names of operation lines (v1, v2, ...)"
        )
    steps = [Step(names[id(x)], "input", (), x.data) for x in inputs]
    for node in topological_order(output):
        if id(node) in names or not node.parents:
            continue
        args = tuple(names.get(id(p), p.data) for p in node.parents)
        if node.op.startswith("**") and node.parents[0].data ** float(node.op[2:]) != node.data:
            raise ValueError(
                f"evaluation_trace: the operation {node.op} rounds its exponent in its name "
                "(6 significant digits), so the trace could not run it again exactly"
            )
        names[id(node)] = f"v{len(steps) - len(inputs) + 1}"
        steps.append(Step(names[id(node)], node.op, args, node.data))
    return steps


def _expression(step):
    """How a line reads: ``x1 * v2``, ``tanh(v1)``, ``v3**2``, ``-v1``."""
    args = [a if isinstance(a, str) else f"{a:g}" for a in step.args]
    if len(args) == 2:
        return f"{args[0]} {step.op} {args[1]}"
    if step.op == "neg":
        return f"-{args[0]}"
    if step.op.startswith("**"):
        return f"{args[0]}{step.op}"
    return f"{step.op}({args[0]})"


def format_trace(steps, width=16):
    """The trace as text, one line per step: ``v1 = x1 * x2  = 6``."""
    lines = []
    for step in steps:
        text = "(input)" if step.op == "input" else _expression(step)
        lines.append(f"{step.name:>4} = {text:<{width}} = {step.value:.6g}")
    return "\n".join(lines)


def _run_step(op, args):
    if op.startswith("**"):
        return args[0] ** float(op[2:])
    if len(args) == 2:
        a, b = args
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        return a * b if op == "*" else a / b
    if op == "neg":
        return -args[0]
    return call(op, args[0])


def run_trace(steps, inputs):
    """Run an evaluation trace on ``inputs`` (floats, Duals or Values); return every line's value by name."""
    inputs = list(inputs)
    names = [s.name for s in steps if s.op == "input"]
    if len(inputs) != len(names):
        raise ValueError(f"run_trace: the trace has {len(names)} inputs ({', '.join(names)}), got {len(inputs)} values")
    values = dict(zip(names, inputs, strict=True))
    for step in steps:
        if step.op != "input":
            args = [values[a] if isinstance(a, str) else a for a in step.args]
            values[step.name] = _run_step(step.op, args)
    return values

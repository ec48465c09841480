"""The scalar engine: :class:`Value`, a number that remembers how it was computed.

Every operation on Values returns a new Value that records, in order, the Values it
was computed from (``parents``) and the local derivative of its result with respect
to each of them (``local_grads``), evaluated at the forward values.  That is all the
backward pass needs: the chain rule says

    dL/du = sum over every edge u -> v of  dL/dv * dv/du

so :meth:`Value.backward` walks the graph once, from the root towards the leaves, in
reverse topological order, and adds ``node.grad * local`` into each parent.

Gradients of repeated calls.  Every node *accumulates*: a second ``backward()`` adds
its gradients to the ``.grad`` already there, as PyTorch does for leaves and for
interior tensors that ``retain_grad()``.  What each pass *propagates* is its own
gradient only, never the accumulated total, so two calls give every node exactly twice
one call's gradient.  Call :meth:`Value.zero_grad` on the root (or :func:`zero_grad`)
between steps.
"""

import math
from math import isfinite
from numbers import Real

from .graph import topological_order


def _as_float(x, operation):
    """Return ``x`` as a float, or raise a TypeError that names ``operation``."""
    # type() first: isinstance(x, Real) is an ABC check, slow on this hot path (benchmarks/value_bench.py)
    if type(x) is float:
        return x
    if isinstance(x, bool) or not isinstance(x, Real):
        raise TypeError(f"{operation}: expected a real number (int or float), got {type(x).__name__} {x!r}")
    try:
        return float(x)
    except OverflowError:
        text = repr(x)
        text = text if len(text) <= 30 else f"{text[:12]}...({len(text)} digits)"
        raise OverflowError(f"{operation}: {type(x).__name__} {text} is too large for a float") from None


def stable_sigmoid(a):
    """``1 / (1 + exp(-a))`` for a float, computed without overflow on either side (exp of at most 0)."""
    return 1.0 / (1.0 + math.exp(-a)) if a >= 0.0 else math.exp(a) / (1.0 + math.exp(a))


class Value:
    """A scalar in a computational graph.

    ``Value(data, label="")`` makes a leaf.  ``data`` is the number, ``grad`` the
    derivative of the last root that called :meth:`backward` with respect to it,
    ``label`` a name used in figures.  ``op``, ``parents`` and ``local_grads`` are
    filled in by the operation that produced the Value (all empty for a leaf).
    """

    __slots__ = ("data", "grad", "label", "op", "parents", "local_grads")

    def __init__(self, data, label="", *, op="", parents=(), local_grads=()):
        data = _as_float(data, "Value()")
        if not isfinite(data):
            raise ValueError(f"Value(): data must be a finite number, got {data!r}")
        self.data = data
        self.grad = 0.0
        self.label = label
        self.op = op
        self.parents = parents
        self.local_grads = local_grads

    def __repr__(self):
        name = f"label={self.label!r}, " if self.label else ""
        return f"Value({name}data={self.data:.6g}, grad={self.grad:.6g})"

    @staticmethod
    def from_op(data, op, parents, local_grads):
        """The Value an operation produces, after checking that its number is finite.

        Every operation makes its result here, the one place the scalar engine makes a
        Value with parents. A runtime that must see each Value made may wrap it (the web
        page's Python does, to free deep graphs one level at a time); unwrapped, it costs
        an operation nothing more.
        """
        if not isfinite(data):
            operands = (
                f" {op} ".join(repr(p.data) for p in parents)
                if len(parents) == 2
                else (f"{op}({parents[0].data!r})" if parents else repr(data))
            )
            raise OverflowError(
                f"Value {op}: {operands} gives {data!r}, which overflows a float; "
                "chainrule works with finite numbers only"
            )
        out = object.__new__(Value)  # not Value(...): its input checks would slow every op
        out.data, out.grad, out.label = data, 0.0, ""
        out.op, out.parents, out.local_grads = op, parents, local_grads
        return out

    @staticmethod
    def _operand(other, operation):
        """``other`` as a Value: a plain int or float takes part in an operation as a constant leaf."""
        if isinstance(other, Value):
            return other
        number = _as_float(other, operation)
        if not isfinite(number):
            raise ValueError(
                f"{operation}: the operand {other!r} is not a finite number; chainrule works with finite numbers only"
            )
        return Value.from_op(number, "", (), ())

    # Each operation below states its local derivatives in its docstring and records
    # exactly those numbers in ``local_grads``, one per parent, in parent order.

    def __add__(self, other):
        """``a + b``;  d/da = 1,  d/db = 1."""
        other = self._operand(other, "Value + (add)")
        return self.from_op(self.data + other.data, "+", (self, other), (1.0, 1.0))

    def __sub__(self, other):
        """``a - b``;  d/da = 1,  d/db = -1."""
        other = self._operand(other, "Value - (subtract)")
        return self.from_op(self.data - other.data, "-", (self, other), (1.0, -1.0))

    def __mul__(self, other):
        """``a * b``;  d/da = b,  d/db = a."""
        other = self._operand(other, "Value * (multiply)")
        return self.from_op(self.data * other.data, "*", (self, other), (other.data, self.data))

    def __truediv__(self, other):
        """``a / b``;  d/da = 1/b,  d/db = -a/b**2 = -(a/b)/b.  Raises for b == 0."""
        other = self._operand(other, "Value / (divide)")
        if other.data == 0.0:
            raise ZeroDivisionError(f"Value / (divide): division of {self.data!r} by zero")
        b = other.data
        quotient = self.data / b
        return self.from_op(quotient, "/", (self, other), (1.0 / b, -quotient / b))  # b**2 could underflow

    def __pow__(self, exponent):
        """``a ** k`` for a constant int or float ``k``;  d/da = k * a**(k-1)."""
        if isinstance(exponent, Value):
            raise TypeError(
                f"Value ** (power): the exponent must be a constant int or float, got {exponent!r}; "
                "for a variable exponent write (k * a.log()).exp()"
            )
        k = _as_float(exponent, "Value ** (power) exponent")
        a = self.data
        if a == 0.0 and k < 1.0 and k != 0.0:
            raise ZeroDivisionError(
                f"Value ** (power): {a!r} ** {k!r} has no finite derivative (k * a**(k-1) divides by zero)"
            )
        if a < 0.0 and not k.is_integer():
            raise ValueError(f"Value ** (power): {a!r} ** {k!r} is not a real number")
        try:
            result, local = a**k, (k * a ** (k - 1.0) if k != 0.0 else 0.0)
        except OverflowError:
            raise OverflowError(f"Value ** (power): {a!r} ** {k!r} is too large for a float") from None
        return self.from_op(result, f"**{k:g}", (self,), (local,))

    def __rpow__(self, base):  # base ** self
        raise TypeError(
            f"Value ** (power): the exponent must be a constant int or float, got {self!r} (in {base!r} ** Value); "
            "for a constant base c > 0 write (x * math.log(c)).exp()"
        )

    def __neg__(self):
        """``-a``;  d/da = -1."""
        return self.from_op(-self.data, "neg", (self,), (-1.0,))

    def __radd__(self, other):  # other + self
        return self._operand(other, "Value + (add)") + self

    def __rsub__(self, other):  # other - self
        return self._operand(other, "Value - (subtract)") - self

    def __rmul__(self, other):  # other * self
        return self._operand(other, "Value * (multiply)") * self

    def __rtruediv__(self, other):  # other / self
        return self._operand(other, "Value / (divide)") / self

    def relu(self):
        """``max(a, 0)``;  d/da = 1 if a > 0 else 0 (we take 0 at the kink a == 0)."""
        a = self.data
        if a > 0.0:
            return self.from_op(a, "relu", (self,), (1.0,))
        return self.from_op(0.0, "relu", (self,), (0.0,))

    def tanh(self):
        """``tanh(a)``;  d/da = 1 - tanh(a)**2."""
        t = math.tanh(self.data)
        return self.from_op(t, "tanh", (self,), (1.0 - t * t,))

    def sigmoid(self):
        """``s = 1 / (1 + exp(-a))``;  d/da = s * (1 - s)."""
        s = stable_sigmoid(self.data)
        return self.from_op(s, "sigmoid", (self,), (s * (1.0 - s),))

    def exp(self):
        """``exp(a)``;  d/da = exp(a)."""
        try:
            e = math.exp(self.data)
        except OverflowError:
            raise OverflowError(f"Value.exp: exp({self.data!r}) is too large for a float") from None
        return self.from_op(e, "exp", (self,), (e,))

    def log(self):
        """``log(a)`` (natural);  d/da = 1/a.  Raises for a <= 0."""
        a = self.data
        if a <= 0.0:
            raise ValueError(f"Value.log: the input must be positive, got {a!r}")
        return self.from_op(math.log(a), "log", (self,), (1.0 / a,))

    def backward(self, *, on_node=None):
        """Add d(self)/d(node) to ``.grad`` of every node this Value depends on.

        One pass in reverse topological order: when a node is reached, every node that
        uses it has already added its contribution, so its gradient is complete and it
        can pass ``node.grad * local`` on to each parent.  For the pass to propagate
        this call's gradient only, what the interior nodes (those with parents) hold
        from earlier calls is set aside first and added back at the end (on a fresh
        graph they hold nothing, and nothing is set aside); leaves pass nothing on, so
        they accumulate directly (see the module docstring).

        ``on_node``, if given, is called with each node as the pass reaches it, before
        the node passes its gradient on: a way to watch the pass (the course's
        explorables record it so).  The pass itself is the same with or without it.
        """
        order = topological_order(self)
        earlier = [(n, n.grad) for n in order if n.grad and n.parents]
        for node, _ in earlier:
            node.grad = 0.0
        self.grad += 1.0
        nodes = reversed(order)
        if on_node is not None:
            nodes = _shown(nodes, on_node)
        try:
            for node in nodes:
                parents = node.parents
                if not parents:  # a leaf: check the .grad that users read
                    if not isfinite(node.grad):
                        _report_nonfinite_gradient(order)
                    continue
                grad = node.grad
                if len(parents) == 2:  # written out, not zip(): the hot loop
                    a, b = parents
                    local_a, local_b = node.local_grads
                    a.grad += grad * local_a
                    b.grad += grad * local_b
                else:
                    edge_grads = node.local_grads
                    for parent, local in zip(parents, edge_grads, strict=True):
                        parent.grad += grad * local
        finally:
            for node, grad in earlier:
                node.grad += grad

    def zero_grad(self):
        """Set ``.grad`` to 0 on this Value and every node it depends on."""
        for node in topological_order(self):
            node.grad = 0.0


def _shown(nodes, on_node):
    """The nodes of a backward pass, each handed to ``on_node`` just before it is used."""
    for node in nodes:
        on_node(node)
        yield node


def _report_nonfinite_gradient(order):
    """Raise for the first node of the backward pass whose gradient is inf or nan.

    Only leaves are checked during the pass, which is enough: an inf or nan at any node
    is multiplied and added into every node between it and the leaves, and stays inf or
    nan.  This finds where it first appeared, which is the useful thing to report.
    """
    for node in reversed(order):
        if not isfinite(node.grad):
            raise FloatingPointError(
                f"backward: the gradient reaching {node!r} (op {node.op or 'leaf'!r}) is {node.grad!r}; "
                "a local derivative downstream of it overflowed"
            )

"""What an answer does while it is called: the ways to differentiate that are not a derivation, seen by behaviour.

An exercise that asks for a derivative derived by hand cannot tell, from the numbers, an answer
that derives it from one that computes it generically; the import rule keeps out engines and
libraries, but not one written in the cell. What such an answer does is plain, however it is
spelled, and a derivation never does it:

- ``nearby``: it evaluates one of its functions, or one of ``math``'s, at two or more pairs of
  points ``c ± h`` about the same point ``c``, the other arguments the same (an array counts by
  the sum of its entries): a numerical derivative refined by extrapolation (Richardson's,
  Ridders'), which meets any tolerance that plain central differences fail;
- ``complex``: it passes a complex number (or array) to one of its functions, or calls
  ``cmath``: the complex step;
- ``numbers``: a class of the cell's own does arithmetic (``__mul__``, ``__add__``, ...): dual
  numbers, or an engine pasted into the cell.

None of these holds by construction (the answer runs in the process it could change), so none
costs points: the grader puts the notebook up for review, with the reason
(:data:`chainrule_course.grading.review.DID`), which the notebook's check shows too. This file uses only
the standard library: the answer's process runs it from its text (:mod:`chainrule_course.grading.runner`,
which imports nothing of the course but its wire module), as ``observer``: the runner's trace function calls
:meth:`Watch.call` for each of the answer's Python calls, and the answer's ``import math`` and
``import cmath`` give :func:`importer`'s copies, whose functions note their arguments.
"""

import types

#: The methods of a class that does arithmetic with its instances.
ARITHMETIC = frozenset(
    f"__{kind}{name}__" for name in ("add", "sub", "mul", "truediv", "pow", "matmul") for kind in ("", "r")
) | {"__neg__"}
#: Evaluations kept per function during one call: enough for an extrapolation's table.
KEPT = 64
WATCHED = ("math", "cmath")


class Watch:
    """What the answer's calls showed during one call of it (:meth:`told` says, and starts afresh)."""

    def __init__(self, filename: str):
        self.filename = filename
        self.points: dict = {}
        self.seen: set = set()
        self.operators: set = set()  # the code of the arithmetic methods of the cell's classes, once called

    def call(self, frame) -> None:
        """A Python call: one of the answer cell's functions is noted with its arguments."""
        code = frame.f_code
        if code.co_filename != self.filename:
            return
        if code in self.operators:
            self.seen.add("numbers")
            return
        if len(self.points.get(code, ())) >= KEPT:  # seen enough of it: a loop of calls stays fast
            return
        arguments = frame.f_locals
        values = [arguments.get(name) for name in code.co_varnames[: code.co_argcount]]
        if values and _operator(code, type(values[0])):  # an operator of its own, under any name
            self.operators.add(code)
            self.seen.add("numbers")
            return
        self.evaluated(code, values)

    def evaluated(self, key, arguments) -> None:
        kept = self.points.setdefault(key, [])
        if len(kept) < KEPT:
            kept.append(tuple(self._point(argument) for argument in arguments))

    def _point(self, argument):
        """A number for ``argument``: a float's value, a float array's sum (an array that differs from another
        in one entry differs in its sum), else which object it is."""
        if isinstance(argument, complex):
            self.seen.add("complex")
        if isinstance(argument, float):
            return float(argument)
        kind = type(argument)
        if kind.__name__ == "ndarray" and kind.__module__ == "numpy":  # numpy's, whose sum runs nothing of the answer
            if argument.dtype.kind == "c":
                self.seen.add("complex")
            if argument.dtype.kind == "f":
                return float(argument.sum())
        return id(argument)

    def told(self, entry: dict) -> dict:
        """``entry``, with ``did``: what of the module's list the call showed, if anything."""
        if any(_about_one_point(points) for points in self.points.values()):
            self.seen.add("nearby")
        if self.seen:
            entry["did"] = sorted(self.seen)
        self.points, self.seen = {}, set()
        return entry


def _operator(code, kind: type) -> bool:
    """Whether ``code`` is what one of ``kind``'s arithmetic methods runs (``kind.__mul__ = times`` too)."""
    return any(getattr(getattr(kind, name, None), "__code__", None) is code for name in ARITHMETIC)


def _about_one_point(points: list) -> bool:
    """Whether two pairs of ``points`` (argument tuples) differ in one float each, ``c + h`` and ``c - h``,
    about the same ``c`` with different small steps ``h``."""
    steps: dict = {}
    unique = list(dict.fromkeys(points))
    for i, p in enumerate(unique):
        for q in unique[i + 1 :]:
            differ = [k for k in range(len(p)) if p[k] != q[k]] if len(p) == len(q) else []
            if len(differ) != 1 or not all(isinstance(x[differ[0]], float) for x in (p, q)):
                continue
            k = differ[0]
            a, b = p[k], q[k]
            centre, step = (a + b) / 2, abs(a - b) / 2
            scale = max(1.0, abs(centre))  # f(z) and f(-z) is no derivative; nor are two sums that differ by rounding
            if a == -b or not 1e-10 * scale < step <= 0.5 * scale:
                continue
            found = steps.setdefault((k, p[:k], p[k + 1 :], float(f"{centre:.9g}")), set())
            found.add(float(f"{step:.6g}"))
            if len(found) > 1:
                return True
    return False


def importer(real, watch: Watch):
    """``__import__`` as ``real``, but ``math`` and ``cmath`` are copies whose functions tell ``watch``."""
    copies: dict = {}

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A001, A002
        module = real(name, globals, locals, fromlist, level)
        if level or name not in WATCHED:
            return module
        if name not in copies:
            copies[name] = copy = types.ModuleType(name, module.__doc__)
            for attribute, value in vars(module).items():
                setattr(copy, attribute, _told(watch, f"{name}.{attribute}", value) if callable(value) else value)
        return copies[name]

    return __import__


def _told(watch: Watch, key: str, function):
    def told(*arguments):
        watch.evaluated(key, arguments)
        if key.startswith("cmath."):
            watch.seen.add("complex")
        return function(*arguments)

    told.__name__, told.__doc__ = function.__name__, function.__doc__
    return told

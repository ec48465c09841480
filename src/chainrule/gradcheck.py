"""Gradient checks: compare what ``backward()`` computes with central differences.

For a function ``f`` of some inputs, the derivative with respect to one number ``x``
in those inputs is approximately

    df/dx  ~  (f(x + eps) - f(x - eps)) / (2 * eps)

with an error of order ``eps**2`` (the terms of even order in the Taylor series
cancel).  :func:`gradcheck` computes this *numeric* gradient for every number in the
inputs, one at a time, and compares it with the *analytic* gradient that
``backward()`` leaves in ``.grad``.  They agree when

    |analytic - numeric|  <=  atol + rtol * |numeric| + noise

Two things make the comparison strict (``rtol`` is ``1e-7`` by default, the level at
which a relative error says "right" for a smooth float64 function, and ``atol`` is 0):

* **Richardson extrapolation.** The difference is taken with the steps ``eps`` and
  ``2 * eps``; its error is ``eps**2`` times a sixth of the third derivative, plus
  higher orders, so ``(4 * D(eps) - D(2 * eps)) / 3`` cancels the ``eps**2`` term and
  leaves an error of order ``eps**4``, which ``4 eps**2 |D(eps) - D(2 eps)|`` estimates.
  Where ``|x| > 16`` the step ``eps |x|`` is tried too, and the one whose noise is smaller
  kept (:func:`_numeric`): a fixed step at ``x = 900`` leaves the rounding of a function that
  changes on the scale of x nine hundred times more room. The
  cancellation needs exact steps: the step is rounded to a power of two, so ``x ± eps``
  and ``x ± 2 eps`` are exact floats for most ``x`` (:func:`_step`), and each difference
  is divided by the step the floats hold.
* **The rounding of f, measured.** Each operation rounds its result by at most the
  machine epsilon of its size, and a change at a node moves ``f`` by that node's
  gradient, so ``f`` is computed to within ``machine epsilon * sum |v| * |v_bar|`` over
  the nodes of its graph: the backward pass that gives the analytic gradient gives this
  bound too.  ``noise`` is four times what that rounding can do to the extrapolated
  difference.  The bound trusts each node to round only its result: a custom node that
  loses digits inside (``log(1 + exp(u))`` for a very negative ``u``, where ``log1p``
  would not) can fail a right rule, and the failure message says so.  At a stationary
  point that bound is 0, while the values at ``x ± eps`` are still rounded, so the bound
  is measured again at ``x ± 2 eps`` (one more backward pass each) and the largest
  taken; and the analytic gradient, computed from rounded node values, is allowed
  ``4 epsilon |x| |f''|`` (``f''`` read from the same values).

So a rule off by a factor of ``1 + 5e-6``, or by ``1e-7`` where the gradient is
``3e-10``, fails, and a right one passes whatever the function's size.

A disagreement means a derivative rule on the way from that input to the output is
wrong -- or that ``f`` has a kink (``relu`` at 0) or a jump within two steps of the
point, where the central difference itself is meaningless.

The inputs can be :class:`chainrule.Value` objects (one number each) or any
tensor-like object whose ``.data`` is a float64 numpy array and whose ``.grad`` is an
array of the same shape after ``backward()`` (every element is checked).  The check
perturbs ``.data`` in place and always puts the original numbers back, even when
``f`` raises.  Afterwards each input's ``.grad`` holds the analytic gradient of ``f``.
"""

import math
import sys
from dataclasses import dataclass
from typing import Any

from .grad_mode import observe_ops
from .graph import topological_order
from .value import Value

__all__ = [
    "GradCheckRow",
    "GradCheckResult",
    "GradientCheckError",
    "gradcheck",
    "assert_gradients_close",
]

_MAX_TABLE_ROWS = 20


class GradientCheckError(AssertionError):
    """The gradient from ``backward()`` and the central difference disagree."""


@dataclass(frozen=True)
class GradCheckRow:
    """The comparison for one number in the inputs.

    ``name`` is the input's label (or ``inputs[i]``), followed by the element index
    for arrays, e.g. ``W1[2, 3]``. ``numeric_error`` is the noise that the rounding of
    ``f`` puts in ``numeric`` (part of ``tolerance``).
    """

    name: str
    analytic: float
    numeric: float
    abs_error: float
    tolerance: float
    ok: bool
    numeric_error: float = 0.0

    @property
    def badness(self):
        """``abs_error / tolerance``: at most 1 for a row that passes."""
        if self.abs_error != self.abs_error:  # NaN
            return math.inf
        if self.tolerance > 0.0:
            return self.abs_error / self.tolerance
        return math.inf if self.abs_error > 0.0 else 0.0


def _number(x, digits=8):
    """A float as a short string: ``3.0``, ``2.5``, ``1.2345679e-08`` (``digits`` significant)."""
    text = f"{x:.{digits}g}"
    if text.lstrip("-").isdigit():
        text += ".0"
    return text


def _small(x):
    return _number(x, digits=3)


class GradCheckResult:
    """The outcome of :func:`gradcheck`.

    ``passed`` is True when every row is within tolerance; ``rows`` has one
    :class:`GradCheckRow` per input number; ``worst`` is the row furthest outside (or
    closest to the edge of) its tolerance; ``failures`` the rows that are not ok.
    ``str(result)`` is a readable table; :meth:`raise_if_failed` turns a failure into a
    :class:`GradientCheckError` that says which input disagrees and by how much.
    A result is truthy exactly when it passed.
    """

    def __init__(self, rows, eps, rtol, atol):
        self.rows = tuple(rows)
        self.eps = eps
        self.rtol = rtol
        self.atol = atol

    @property
    def passed(self):
        return all(row.ok for row in self.rows)

    @property
    def failures(self):
        return [row for row in self.rows if not row.ok]

    @property
    def worst(self):
        return max(self.rows, key=lambda row: row.badness)

    def __bool__(self):
        return self.passed

    def __repr__(self):
        w = self.worst
        return (
            f"GradCheckResult(passed={self.passed}, rows={len(self.rows)}, worst={w.name!r}: "
            f"analytic {_number(w.analytic)} vs numeric {_number(w.numeric)})"
        )

    def table(self, max_rows=_MAX_TABLE_ROWS):
        """The rows as aligned text.  Above ``max_rows`` rows (None: no limit), only the
        worst ``max_rows`` are shown, in input order, and a final line counts the rest."""
        rows = list(self.rows)
        hidden = 0
        if max_rows is not None and len(rows) > max_rows:
            keep = sorted(range(len(rows)), key=lambda i: rows[i].badness, reverse=True)[:max_rows]
            hidden = len(rows) - max_rows
            rows = [rows[i] for i in sorted(keep)]
        header = ("input", "analytic", "numeric", "|diff|", "tolerance", "ok")
        cells = [header] + [
            (
                r.name,
                _number(r.analytic),
                _number(r.numeric),
                _small(r.abs_error),
                _small(r.tolerance),
                "ok" if r.ok else "FAIL",
            )
            for r in rows
        ]
        name_width = max(len(c[0]) for c in cells)
        widths = [max(len(c[i]) for c in cells) for i in range(1, 5)]
        lines = []
        for c in cells:
            numbers = "  ".join(text.rjust(width) for text, width in zip(c[1:5], widths, strict=True))
            lines.append(f"{c[0].ljust(name_width)}  {numbers}  {c[5]}")
        if hidden:
            lines.append(f"... {hidden} more rows not shown (all no worse than those above)")
        return "\n".join(lines)

    def __str__(self):
        n_bad = len(self.failures)
        verdict = "passed" if self.passed else f"FAILED ({n_bad} of {len(self.rows)} disagree)"
        head = (
            f"gradient check {verdict}: backward() vs central differences "
            f"(eps={self.eps:g}, tolerance = {self.atol:g} + {self.rtol:g} * |numeric| + noise)"
        )
        return head + "\n" + self.table()

    def raise_if_failed(self):
        """Raise :class:`GradientCheckError` if any row disagrees; return ``self`` otherwise."""
        if self.passed:
            return self
        w = self.worst
        lines = [
            f"gradient check failed for input {w.name!r}: backward gave {_number(w.analytic)}, "
            f"central difference gave {_number(w.numeric)} "
            f"(|diff| {_small(w.abs_error)} > tolerance {_small(w.tolerance)})"
        ]
        failures = self.failures
        if len(failures) > 1:
            others = ", ".join(repr(r.name) for r in failures if r is not w)
            if len(others) > 300:
                others = others[:300] + " ..."
            lines.append(f"{len(failures) - 1} more disagree: {others}")
        lines.append(
            "A derivative rule on the path from this input to the output is probably wrong "
            f"(unless f has a kink, such as relu at 0, within two steps of this point: eps={self.eps:g}, "
            "or eps * |x| where |x| > 16)."
        )
        if w.abs_error <= 1e-4 * max(abs(w.numeric), abs(w.analytic)):
            lines.append(
                "So small a difference can also be rounding that the check cannot see: a custom node "
                "that loses digits inside (log(1 + exp(u)) rather than log1p(exp(u))) rounds f more "
                "than its size says."
            )
        lines.append(self.table(max_rows=10))
        raise GradientCheckError("\n".join(lines))


# ----------------------------------------------------------------------------- inputs


def _is_tensor_like(x):
    """Is ``.data`` a numpy array?  Without numpy imported nothing can be one, and checking
    Values needs only Python (the scalar chapters run in the web page)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(getattr(x, "data", None), numpy.ndarray)


def _describe(x):
    text = repr(x)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(x).__name__} {text}"


def _input_name(x, i):
    label = getattr(x, "label", "")
    return label if isinstance(label, str) and label else f"inputs[{i}]"


def _check_inputs(inputs):
    if isinstance(inputs, Value) or _is_tensor_like(inputs):
        raise TypeError(
            f"gradcheck: inputs must be a list of Values or tensors, got a single {type(inputs).__name__}; "
            "write [x] for one input"
        )
    try:
        inputs = list(inputs)
    except TypeError:
        raise TypeError(f"gradcheck: inputs must be a list of Values or tensors, got {_describe(inputs)}") from None
    if not inputs:
        raise ValueError("gradcheck: inputs is empty; pass the Values (or tensors) whose gradients to check")
    for i, x in enumerate(inputs):
        if isinstance(x, Value):
            continue
        if _is_tensor_like(x):
            if x.data.dtype != "float64":
                raise TypeError(
                    f"gradcheck: inputs[{i}] ({_input_name(x, i)}) has dtype {x.data.dtype}; central differences "
                    "need float64 data (in float32, whose machine epsilon is 1.2e-7, the best step is about 7e-3 "
                    "and no check is tighter than four to five digits)"
                )
            if not x.data.flags.writeable:
                raise TypeError(
                    f"gradcheck: inputs[{i}] ({_input_name(x, i)}) has a read-only .data array; "
                    "gradcheck perturbs it in place, so it must be writeable"
                )
            if x.data.size == 0:
                raise ValueError(f"gradcheck: inputs[{i}] ({_input_name(x, i)}) has no elements (shape {x.data.shape})")
            continue
        hint = f"; wrap numbers as Value({x!r})" if isinstance(x, (int, float)) and not isinstance(x, bool) else ""
        raise TypeError(
            f"gradcheck: inputs[{i}] is {_describe(x)}; expected a chainrule Value or a tensor "
            f"whose .data is a numpy array{hint}"
        )
    return inputs


def _elements(inputs):
    """Yield ``(name, input, index)`` for every number in the inputs; index is None for a Value."""
    for i, x in enumerate(inputs):
        name = _input_name(x, i)
        if isinstance(x, Value):
            yield name, x, None
        else:
            shape = x.data.shape
            for index in sys.modules["numpy"].ndindex(*shape):
                element_name = name if not shape else f"{name}[{', '.join(map(str, index))}]"
                yield element_name, x, index


# ----------------------------------------------------------------------------- f


def _scalar_output(out, where):
    """Return the float in ``out``; raise a clear error if it is not a scalar Value/tensor."""
    if isinstance(out, Value):
        return out.data
    if _is_tensor_like(out):
        if out.data.size != 1:
            raise ValueError(
                f"gradcheck: f must return a scalar, but {where} it returned a tensor of shape "
                f"{out.data.shape}; reduce it to one number first (e.g. with .sum())"
            )
        return float(out.data.reshape(-1)[0])
    hint = ""
    if isinstance(out, (int, float)):
        hint = (
            " (a plain number: build the result with Value operations, not from .data, "
            "so backward can reach the inputs)"
        )
    raise TypeError(
        f"gradcheck: f must return a scalar Value (or a one-element tensor), but {where} it returned "
        f"{_describe(out)}{hint}"
    )


def _evaluate(f, inputs, where):
    return _scalar_output(f(*inputs), where)


def _rounding_at(f, inputs, where):
    """The rounding bound of ``f`` (:func:`_analytic_gradients`) where the inputs are now, and f's value
    there; the inputs' ``.grad`` are left as they were."""
    kept = [x.grad for x in inputs]
    try:
        _, rounding, value = _analytic_gradients(f, inputs, where)
    finally:
        for x, grad in zip(inputs, kept, strict=True):
            x.grad = grad
    return rounding, value


def _analytic_gradients(f, inputs, where="at the given inputs"):
    """The gradient of ``f`` for each input, a bound on the rounding error of ``f``, and f's value.

    The bound is ``machine epsilon * sum |v| * |v_bar|`` over the nodes ``f`` computed
    (Values, or Tensors the ops read), with ``v_bar`` the gradient the backward pass
    gives each; see the module's docstring.
    """
    np: Any = sys.modules.get("numpy")  # imported wherever an input is a tensor (None: all are Values)
    for x in inputs:
        x.grad = 0.0 if isinstance(x, Value) else np.zeros_like(x.data)
    read: dict = {}  # the interior Tensors the ops read, by id
    with observe_ops(lambda op, operands, args, out: read.update((id(t), t) for t in operands)):
        out = f(*inputs)
    _scalar_output(out, where)
    if not callable(getattr(out, "backward", None)):
        raise TypeError(f"gradcheck: the {type(out).__name__} that f returned has no backward() method")
    zero = getattr(out, "zero_grad", None)
    if callable(zero):
        zero()
    interior = [t for t in read.values() if getattr(t, "grad_fn", None) is not None]
    for t in interior:
        t.retain_grad()
    out.backward()
    gradients = []
    for i, x in enumerate(inputs):
        if isinstance(x, Value):
            gradients.append(float(x.grad))
            continue
        grad = np.zeros_like(x.data) if x.grad is None else np.asarray(x.grad, dtype=np.float64)
        if grad.shape != x.data.shape:
            raise ValueError(
                f"gradcheck: after backward, inputs[{i}] ({_input_name(x, i)}) has .grad of shape "
                f"{grad.shape}, but its .data has shape {x.data.shape}"
            )
        gradients.append(grad.copy())
    at = _scalar_output(out, where)
    return gradients, sys.float_info.epsilon * _sensitivity(out, interior), at


def _sensitivity(out, interior):
    """``sum |v| * |v_bar|`` over the computed nodes of ``f``'s graph (its output counts once)."""
    if isinstance(out, Value):
        return sum(abs(node.data * node.grad) for node in topological_order(out) if node.parents)
    total = abs(_scalar_output(out, "at the given inputs"))
    for t in interior:
        if t.grad is not None:
            total += float(abs(t.data * t.grad).sum())
            t.grad, t.retains_grad = None, False
    return total


def _add_note(error, note):
    if hasattr(error, "add_note"):
        error.add_note(note)


def _step(eps):
    """``eps`` rounded to a power of two: then ``2h`` is exact, and ``x ± h`` and ``x ± 2h`` are exact
    floats for most ``x`` (not where they cross a power of two, nor beyond ``|x| = 2**53 h``), so
    that both sides of each difference are equally long and the extrapolation cancels its ``h**2``
    term; each difference is divided by the step the floats hold."""
    return 2.0 ** round(math.log2(eps))


def _central_difference(f, inputs, x, index, name, h, rounding, at):
    """The derivative of ``f`` along one number of ``x``, extrapolated, and its noise.

    ``D(h) = (f(x + h) - f(x - h)) / (2 h)`` for the step ``h`` (:func:`_step`) and ``2 h``,
    with the steps as the floats actually hold them; ``(4 D(h) - D(2 h)) / 3`` cancels
    their ``h**2`` error.  Its noise has three parts (``at`` is f at the point):

    * the rounding of the values of f: the largest of ``rounding`` (the bound at the point)
      and the bounds at ``x ± 2h``, measured there (at a stationary point the first is 0),
      which the extrapolation turns into at most ``1.5 * rounding / h``;
    * what the extrapolation leaves of the truncation, ``-h**4 / 30`` times f's fifth derivative:
      estimated as ``4 h**2 |D(h) - D(2 h)|``, that is ``2 h**4`` times the third derivative
      (``D(h) - D(2h)`` is ``-h**2 / 2`` times it), enough while the fifth is at most 60 times the third;
    * the rounding of the analytic gradient itself, which reads the rounded values of f's
      nodes: about ``epsilon |x|`` times f's second derivative, measured by the same values
      (``(f(x + h) + f(x - h) - 2 f(x)) / h**2``), four times over.

    ``x`` is restored afterwards.
    """
    if index is None:
        original = x.data

        def put(v):
            x.data = v
    else:
        original = float(x.data[index])

        def put(v):
            x.data[index] = v

    values, steps = [], []
    try:
        for step in (h, -h, 2 * h, -2 * h):
            where = f"with {name} {'+' if step > 0 else '-'} {abs(step):g}"
            moved = original + step
            put(moved)
            steps.append(moved - original)  # the step the float holds, rounding and all
            try:
                if abs(step) == h:
                    values.append(_evaluate(f, inputs, where))
                else:  # the far points: where f's rounding has grown most from the point's (a stationary one)
                    bound, value = _rounding_at(f, inputs, where)
                    values.append(value)
                    rounding = max(rounding, bound)
            except Exception as error:
                _add_note(error, f"(raised by f while gradcheck evaluated it {where})")
                raise
    finally:
        put(original)
    near = (values[0] - values[1]) / (steps[0] - steps[1])
    far = (values[2] - values[3]) / (steps[2] - steps[3])
    epsilon = sys.float_info.epsilon
    # Near zero the floats are evenly spaced (subnormals): epsilon * float_info.min apart.
    per_value = rounding + epsilon * sys.float_info.min
    truncation = 4 * h * h * abs(near - far)
    curvature = abs(values[0] + values[1] - 2 * at) / (h * h)
    analytic = 4 * epsilon * abs(original) * curvature
    return (4 * near - far) / 3, 4 * 1.5 * per_value / h + truncation + analytic


def _numeric(f, inputs, x, index, name, eps, rounding, at):
    """The extrapolated difference (:func:`_central_difference`) with the step ``eps``, and, where
    ``|x| > 16``, with ``eps |x|`` too, and of the two the one whose noise is smaller. A function that
    changes on the scale of ``x`` (``tanh(x / s) * s`` at ``x = s = 900``) needs the step that scales,
    or f's rounding swamps it; one that changes on its own scale whatever ``x`` is (``sin`` at 1e6)
    needs the fixed one. A step below four units in the last place of ``x`` is no step, and is not tried."""
    value = abs(float(x.data if index is None else x.data[index]))
    steps = [_step(eps)] if _step(eps) >= 4 * math.ulp(value) else []
    if value > 16 or not steps:
        steps.append(_step(eps * value))
    tried = [_central_difference(f, inputs, x, index, name, h, rounding, at) for h in steps]
    return min(tried, key=lambda numeric_and_noise: numeric_and_noise[1])


def gradcheck(f, inputs, eps=1e-6, rtol=1e-7, atol=0.0):
    """Compare ``backward()`` with central differences for every number in ``inputs``.

    ``f(*inputs)`` must return a scalar :class:`Value` (or a one-element tensor) built
    from the inputs.  The analytic gradient comes from zeroing the gradients and calling
    ``backward()`` on that output once; the numeric one from ``f`` evaluated at
    ``data ± h`` and ``data ± 2 h``, ``h = eps`` (and ``eps * |data|`` too where ``|data| > 16``:
    :func:`_numeric`), for one number at a time, extrapolated.  A number
    passes when ``|analytic - numeric| <= atol + rtol * |numeric| + noise``, ``noise``
    being what the rounding of ``f`` does to the numeric value: see the module's docstring.  Returns a
    :class:`GradCheckResult`; call ``.raise_if_failed()`` on it (or use
    :func:`assert_gradients_close`) to turn a failure into an error.
    """
    if not callable(f):
        raise TypeError(f"gradcheck: f must be a function of the inputs, got {_describe(f)}")
    for name, v in (("eps", eps), ("rtol", rtol), ("atol", atol)):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise ValueError(f"gradcheck: {name} must be a finite number >= 0, got {v!r}")
    if eps == 0:
        raise ValueError("gradcheck: eps must be > 0, got 0")
    inputs = _check_inputs(inputs)

    gradients, rounding, at = _analytic_gradients(f, inputs)
    position = {id(x): i for i, x in enumerate(inputs)}
    rows = []
    for name, x, index in _elements(inputs):
        grad = gradients[position[id(x)]]
        analytic = float(grad if index is None else grad[index])
        numeric, own_error = _numeric(f, inputs, x, index, name, eps, rounding, at)
        abs_error = abs(analytic - numeric)
        tolerance = atol + rtol * abs(numeric) + own_error
        ok = bool(abs_error <= tolerance)
        rows.append(GradCheckRow(name, analytic, numeric, abs_error, tolerance, ok, own_error))
    return GradCheckResult(rows, eps, rtol, atol)


def assert_gradients_close(f, inputs, **kwargs):
    """:func:`gradcheck` then :meth:`GradCheckResult.raise_if_failed`; returns the result."""
    return gradcheck(f, inputs, **kwargs).raise_if_failed()

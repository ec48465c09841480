"""The frameworks and profiling chapters' drills: what a short program leaves in ``.grad``, and where it fails.

Each program is a few lines on scalar :class:`~chainrule.value.Value` s, run by the engine:

* ``detach`` (frameworks): ``a.grad`` after a program in which one value is detached,
  which makes it a constant the backward pass does not go through (PyTorch's
  ``detach()``, JAX's ``stop_gradient``; here a new leaf with the same number). Named
  mistakes: the gradient as if nothing were detached, the detached path alone.
* ``vjp`` (frameworks): ``x.grad`` after ``y.backward(gradient=v)`` for y = (y₁, y₂): the
  VJP v₁·∂y₁/∂x + v₂·∂y₂/∂x. Named mistakes: v ignored (∂(y₁ + y₂)/∂x), the first entry
  alone, v's entries added.
* ``accumulate`` (profiling): ``w.grad`` after k passes of the same loss with no
  ``zero_grad()`` between, the chapter's first mistake that raises no error. Named
  mistakes: one pass's gradient, k − 1 passes.
* ``overflow`` (profiling): the first line of a program whose number is not finite; the
  engine refuses it there, as PyTorch's anomaly mode and JAX's ``debug_nans`` stop at
  the first operation that makes one. The program, x scaled then three lines of
  :data:`SHAPES` (exp, a square, a cube, × 1e100, a subtraction), overflows at any of
  its lines after the first, or nowhere. Named mistakes: the line where the first nan
  appears (an inf comes first), the line next to the answer.
"""

import math
import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import Mistake, Problem, distinct, verdict
from .registry import drill

__all__ = ["accumulate", "detach", "overflow", "vjp"]

SMALL = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0)


@drill("detach", "frameworks", "a gradient past detach()", {1: "one detach"}, "number")
def detach(level, seed):
    """a.grad after L = f(a, b) in which one intermediate is detached."""
    rng = random.Random(f"chainrule-drill-detach:{level}:{seed}")
    return distinct(lambda: _detach(rng, level))


def _detach_program(a0, b0, cut):
    """(a, L) for y = a·b; z = y (detached when ``cut``); L = z·a + y (level 1's program)."""
    a, b = Value(a0, "a"), Value(b0, "b")
    y = a * b
    z = Value(y.data, "z") if cut else y  # detach: the same number, no path back to a and b
    loss = z * a + y
    return a, loss


def _detach(rng, level):
    a0, b0 = rng.choice(SMALL), rng.choice(SMALL)
    a, loss = _detach_program(a0, b0, cut=True)
    loss.backward()
    answer = a.grad
    whole = _detach_program(a0, b0, cut=False)
    whole[1].backward()
    mistakes = [
        Mistake(
            whole[0].grad,
            "That goes through the detached value too: detach() makes z a constant, so the backward pass stops there.",
            "as if not detached",
        ),
        Mistake(
            b0,
            "That is the path through y alone; z\u00b7a also depends on a directly, with z held fixed.",
            "the path through y alone",
        ),
    ]
    return Problem(
        "detach",
        "The program below runs, then L.backward(). What is a.grad?",
        [f"a = {number_text(a0)}, b = {number_text(b0)}", "y = a * b", "z = y.detach()", "L = z * a + y"],
        answer,
        [
            "z has y's number but no path back: in L = z\u00b7a + y, z is a constant.",
            "\u2202L/\u2202a = z + \u2202y/\u2202a = z + b.",
        ],
        [f"z = y = {number_text(a0 * b0)}, held fixed.", f"a.grad = z + b = {number_text(answer)}."],
        mistakes,
        words="The program:",
        data={"a": a0, "b": b0},
    )


@drill(
    "vjp", "frameworks", "the x.grad that backward(gradient=v) leaves", {1: "products", 2: "tanh and a cube"}, "number"
)
def vjp(level, seed):
    """x.grad after y.backward(gradient=v) for y = (x², x·c) or (tanh(x), x³)."""
    rng = random.Random(f"chainrule-drill-vjp:{level}:{seed}")
    return distinct(lambda: _vjp(rng, level))


def _vjp(rng, level):
    x0, c, v = rng.choice(SMALL), rng.choice(SMALL), [rng.choice(SMALL), rng.choice(SMALL)]
    x = Value(x0, "x")
    ys = [x * x, x * c] if level == 1 else [x.tanh(), x**3]
    (ys[0] * v[0] + ys[1] * v[1]).backward()
    answer = x.grad
    locals_ = [2 * x0, c] if level == 1 else [1 - math.tanh(x0) ** 2, 3 * x0 * x0]
    texts = ["x * x", f"x * {number_text(c)}"] if level == 1 else ["tanh(x)", "x ** 3"]
    mistakes = [
        Mistake(
            sum(locals_),
            "That ignores the gradient argument: backward(gradient=v) weighs each output's "
            "derivative by its entry of v.",
            "v ignored",
        ),
        Mistake(
            v[0] * locals_[0],
            "That is the first output's part alone; the second adds its own.",
            "the first output alone",
        ),
        Mistake(v[0] + v[1], "That adds v's entries; each multiplies its output's derivative.", "v's entries added"),
    ]
    return Problem(
        "vjp",
        "y holds two outputs of x, and y.backward(gradient=v) runs. What is x.grad?",
        [f"x = {number_text(x0)}", f"y = [{texts[0]}, {texts[1]}]", f"v = [{number_text(v[0])}, {number_text(v[1])}]"],
        answer,
        [
            "backward(gradient=v) computes the VJP: x.grad = v\u2081\u00b7\u2202y\u2081/\u2202x + "
            "v\u2082\u00b7\u2202y\u2082/\u2202x.",
            f"\u2202y\u2081/\u2202x = {number_text(locals_[0])}, \u2202y\u2082/\u2202x = {number_text(locals_[1])}.",
        ],
        [
            f"\u2202y\u2081/\u2202x = {number_text(locals_[0])}, \u2202y\u2082/\u2202x = {number_text(locals_[1])}.",
            f"x.grad = {factor_text(v[0])}\u00b7{factor_text(locals_[0])} + {factor_text(v[1])}\u00b7"
            f"{factor_text(locals_[1])} = {number_text(answer)}.",
        ],
        mistakes,
        words="The program:",
        data={"x": x0, "c": c, "v": v, "tanh": level == 2},
    )


@drill(
    "accumulate", "profiling", "gradients without zero_grad()", {1: "two passes", 2: "three or four passes"}, "number"
)
def accumulate(level, seed):
    """w.grad after k passes of (w·x − t)² with no zero_grad()."""
    rng = random.Random(f"chainrule-drill-accumulate:{level}:{seed}")
    return distinct(lambda: _accumulate(rng, level))


def _accumulate(rng, level):
    w0, x, t = rng.choice(SMALL), rng.choice(SMALL), rng.choice(SMALL)
    passes = 2 if level == 1 else rng.choice((3, 4))
    w = Value(w0, "w")
    for _ in range(passes):  # a new graph each pass, as a training loop builds
        ((w * x - t) ** 2).backward()
    answer = w.grad
    once = 2 * (w0 * x - t) * x
    mistakes = [
        Mistake(once, "That is one pass's gradient. Without zero_grad(), each backward() adds to w.grad.", "one pass"),
    ]
    if passes > 2:  # with two passes, one too few is one pass, named above
        mistakes.append(
            Mistake(
                (passes - 1) * once,
                f"Every one of the {passes} passes adds its gradient, the first one too.",
                "one pass too few",
            )
        )
    return Problem(
        "accumulate",
        "The program below runs; w is a leaf made once, before the loop, and the loop has no zero_grad() "
        "and no update of w. What is w.grad after the loop?",
        [
            f"w = Value({number_text(w0)}); x = {number_text(x)}; t = {number_text(t)}",
            f"for step in range({passes}):",
            "\u2003loss = (w * x - t) ** 2",
            "\u2003loss.backward()",
        ],
        answer,
        [
            "Each backward() adds \u2202loss/\u2202w to w.grad; nothing clears it.",
            f"One pass gives 2(wx \u2212 t)\u00b7x = {number_text(once)}.",
        ],
        [
            f"One pass: {number_text(once)}.",
            f"{passes} passes: {passes} \u00d7 {number_text(once)} = {number_text(answer)}.",
        ],
        mistakes,
        words="The program:",
        data={"w": w0, "x": x, "t": t, "passes": passes},
    )


BIG = (100.0, 150.0, 200.0, 250.0, 300.0, 350.0, 400.0)
SCALES = (1.5, 2.0, 2.5, 3.0)
# The ops of the lines after a = x * s, each applied to the line before ({p}) to make the line ({y}).
OPS = {
    "exp": ("{y} = {p}.exp()", lambda p: p.exp()),
    "square": ("{y} = {p} * {p}", lambda p: p * p),
    "cube": ("{y} = {p} ** 3", lambda p: p**3),
    "grow": ("{y} = {p} * 1e100", lambda p: p * 1e100),
    "shift": ("{y} = {p} - 300", lambda p: p - 300),
    "cancel": ("{y} = {p} - {p}", lambda p: p - p),  # inf − inf is nan, but the inf comes first
}
# From how large an input each op that can overflow does, and how it moves a number's power of ten.
LIMITS = {
    "exp": "exp above an input of about 709.78",
    "square": "a square above an input of about 1.34e154",
    "cube": "a cube above an input of about 5.6e102",
    "grow": "\u00d7 1e100 above an input of about 1.8e208",
}
POWERS = {
    "exp": "exp(p) is about 10 to the power 0.4343\u00b7p",
    "square": "a square doubles the power",
    "cube": "a cube triples it",
    "grow": "\u00d7 1e100 adds 100 to it",
}
# The programs' shapes after line a: where the first number that is not finite appears depends on x and s,
# at any line from b to the last, or none.
SHAPES = (
    ("exp", "square", "cancel"),
    ("exp", "grow", "square"),
    ("exp", "square", "square"),
    ("exp", "cube", "cancel"),
    ("shift", "exp", "square"),
)


@drill("overflow", "profiling", "the first number that is not finite", {1: "exp and powers"}, "names")
def overflow(level, seed):
    """The first line whose number is not finite, as the engine finds it."""
    rng = random.Random(f"chainrule-drill-overflow:{level}:{seed}")
    return distinct(lambda: _overflow(rng, level))


def _run(x0, scale, shape):
    """The program's Values by line name, up to the first line the engine refuses, and that line (or "none")."""
    values = {"x": Value(x0, "x")}
    try:
        values["a"] = values["x"] * scale
        for before, name, op in zip("abc", "bcd", shape, strict=True):
            values[name] = OPS[op][1](values[before])
    except OverflowError:  # the engine refuses a number that is not finite, naming the op
        return values, "abcd"[len(values) - 1]
    return values, "none"


def _overflow(rng, level):
    x0, scale, shape = rng.choice(BIG), rng.choice(SCALES), rng.choice(SHAPES)
    values, answer = _run(x0, scale, shape)
    names = ["a", "b", "c", "d"]
    ops = dict(zip(names, ["scale", *shape], strict=True))
    texts = {"a": f"a = x * {number_text(scale)}"} | {
        name: OPS[op][0].format(y=name, p=before) for before, name, op in zip("abc", "bcd", shape, strict=True)
    }
    at = names.index(answer) if answer in names else len(names)
    mistakes = []
    nan = next((name for name in names[at + 1 :] if ops[name] == "cancel"), None)
    if nan is not None:
        mistakes.append(
            Mistake(
                [nan],
                f"{texts[nan]} is where the first nan appears (inf \u2212 inf); an inf comes first, earlier.",
                "the first nan",
            )
        )
    # the line a reader misjudges: the one after the answer, else the one before (the last line, for none)
    near = [n for n in names[at + 1 : at + 2] + names[max(at - 1, 0) : at] if n != nan and ops[n] != "shift"]
    used = list(dict.fromkeys(shape))
    if near:
        mistakes.append(
            Mistake(
                [near[0]],
                f"A line overflows only past its limit ({'; '.join(LIMITS[op] for op in used if op in LIMITS)}): "
                "check each line's number.",
                "a line too early or too late",
            )
        )
    powers = _and([POWERS[op] for op in used if op in POWERS])
    return Problem(
        "overflow",
        "Which line first makes a number that is not finite (inf or nan)? A float holds at most about 1.8e308, "
        "which exp reaches at 709.78. Type the line's name, or none.",
        [f"x = {number_text(x0)}"] + [texts[name] for name in names],
        [answer],
        [
            "Work out each line's number in order; stop at the first that is too large for a float.",
            f"Follow each number's power of ten: {powers}; a float stops near 10 to the power 308.",
        ],
        [f"{texts[name]}: {_shown(values.get(name))}" for name in names[: at + 1]],
        mistakes,
        form="names",
        form_text=f"A line's name ({', '.join(names)}), or none.",
        judge=_judge_line,
        known={name: name for name in [*names, "none"]},
        words="The program:",
        data={
            "x": x0,
            "lines": [texts[name] for name in names],
            "shown": {name: _shown(values.get(name)) for name in names},
        },
    )


def _and(items):
    """``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _judge_line(problem, text):
    """The verdict on one line's name (or none): which line it is, and what that line gives."""
    typed = str(text).strip().lower().removeprefix("line").strip()
    names = [name for name in problem.known if name != "none"]
    if typed not in problem.known:
        return verdict(False, f"Type one line's name, {', '.join(names)}, or none.", "unreadable")
    answer = problem.answer[0]
    if typed == answer:
        where = "none: every number is finite" if answer == "none" else f"line {answer}"
        return verdict(True, f"Right: {where}.")
    for mistake in problem.mistakes:
        if [typed] == mistake.value:
            return verdict(False, mistake.message, mistake.name)
    if typed == "none" or (answer != "none" and names.index(typed) > names.index(answer)):
        return verdict(False, f"Line {answer} already gives a number that is not finite.", "too late")
    return verdict(False, f"Line {typed} gives {problem.data['shown'][typed]}, which is finite.", "too early")


def _shown(value):
    if value is None:
        return "not finite: the engine stops here"
    return f"{value.data:.3g}".replace("-", "\u2212") if abs(value.data) >= 1e6 else number_text(value.data)

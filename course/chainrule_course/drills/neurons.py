"""The introduction's drill: a neuron's gradient, and what it says about a small nudge.

``neuron`` asks for ∂y/∂x, ∂y/∂w or ∂y/∂b of one artificial neuron, the introduction's
y = tanh(wx + b), at numbers a person can hold in their head:

* level 1: the neuron without its tanh, y = wx + b;
* level 2: y = tanh(wx + b), with y given, so that tanh′(z) = 1 − y² is one step;
* level 3: the change in y when one input moves by a small h, to first order: the
  gradient times h, as the introduction's nudge measures it.

The answer is the ``.grad`` that ``backward()`` stores (times h at level 3). It is also
written by hand as a derivation (:func:`_neuron_gradient`) whose steps offer the slips a
reader makes: the other input's number for the local derivative (x for w), the local
derivative left out, tanh′ as 1 + y² or 1 − y or left out, the nudge not multiplied by h
or divided by it. The mistakes are generated from it (:func:`.problems.derived`).
"""

import math
import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import TRIES, Problem, derived, distinct
from .registry import drill

__all__ = ["neuron"]

INPUTS = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0)
LOCAL = {"x": "w", "w": "x", "b": "1"}  # ∂z/∂input for z = wx + b, by name
NUDGES = (0.1, 0.2, -0.1, -0.2)  # large enough that the change is more than the tolerance


@drill(
    "neuron",
    "intro",
    "a neuron's gradient",
    {1: "y = wx + b", 2: "y = tanh(wx + b)", 3: "the change from a nudge"},
    "number",
)
def neuron(level, seed):
    """∂y/∂(x, w or b) of y = wx + b (level 1) or tanh(wx + b) (levels 2 and 3; at 3, times a nudge h)."""
    rng = random.Random(f"chainrule-drill-neuron:{level}:{seed}")
    for _ in range(TRIES):  # an instance with a slip to name (∂y/∂b = 1 with x = 1 has none)
        problem = distinct(lambda: _neuron(rng, level))
        if problem.mistakes:
            break
    return problem


def _words(wrt, level):
    """The words of each slip of :func:`_neuron_gradient`, by the mistake's name (at level 1 the neuron
    has no tanh: wx + b is y itself)."""
    used = {"x": "x", "w": "w", "b": "x"}[wrt]  # what the slip multiplies by instead
    top = "y" if level == 1 else "z"
    return {
        "the other input": f"That uses {used} where the local derivative \u2202{top}/\u2202{wrt} goes: "
        f"{top} = wx + b, so \u2202{top}/\u2202{wrt} = {LOCAL[wrt]}.",
        "\u2202z/\u2202input left out": f"That leaves out \u2202z/\u2202{wrt}: the chain rule multiplies "
        f"tanh\u2032(z) by it.",
        "tanh\u2032 as 1 + y\u00b2": "tanh\u2032(z) = 1 \u2212 y\u00b2, not 1 + y\u00b2.",
        "tanh\u2032 as 1 \u2212 y": "tanh\u2032(z) = 1 \u2212 y\u00b2: square y first.",
        "tanh\u2032 left out": "That leaves out tanh\u2032(z) = 1 \u2212 y\u00b2: y = tanh(z), so the chain rule "
        "multiplies by it.",
        "the gradient, not the change": f"That is the gradient \u2202y/\u2202{wrt}; the change in y is the "
        "gradient times the nudge h.",
        "divided by h": "That divides by h; the change in y is the gradient times h.",
    }


def _neuron_gradient(d, at):
    """The answer by hand, each step offering its slips (``d``: x, w, b, y, wrt, level, h)."""
    said = _words(d["wrt"], d["level"])
    wrt = d["wrt"]
    local = {"x": d["w"], "w": d["x"], "b": 1.0}[wrt]
    other = {"x": d["x"], "w": d["w"], "b": d["x"]}[wrt]
    local = at.choose(f"\u2202z/\u2202{wrt}", local, {said["the other input"]: other})
    if d["level"] == 1:
        return local
    y = d["y"]
    slope = at.choose(
        "tanh\u2032",
        1 - y * y,
        {
            said["tanh\u2032 as 1 + y\u00b2"]: 1 + y * y,
            said["tanh\u2032 as 1 \u2212 y"]: 1 - y,
            said["tanh\u2032 left out"]: 1.0,
        },
    )
    gradient = at.choose("the chain", slope * local, {said["\u2202z/\u2202input left out"]: slope})
    if d["level"] == 2:
        return gradient
    h = d["h"]
    return at.choose(
        "the nudge",
        gradient * h,
        {said["the gradient, not the change"]: gradient, said["divided by h"]: gradient / h},
    )


def _neuron(rng, level):
    (x0, w0), b0 = rng.sample(INPUTS, 2), rng.choice(INPUTS)  # x ≠ w: the two local derivatives differ
    while level >= 2 and w0 * x0 + b0 == 0:  # z = 0 makes tanh′ = 1 and hides its slips
        b0 = rng.choice(INPUTS)
    wrt = rng.choice("xwb")
    h = rng.choice(NUDGES)
    x, w, b = Value(x0, "x"), Value(w0, "w"), Value(b0, "b")
    z = w * x + b
    y = z if level == 1 else z.tanh()
    z.label, y.label = "z", "y"
    y.backward()
    gradient = {"x": x.grad, "w": w.grad, "b": b.grad}[wrt]
    # The reader works from y as shown, to four places: the answer is the engine's, within the tolerance.
    shown_y = round(y.data, 4)
    answer = gradient * h if level == 3 else gradient
    instance = {"x": x0, "w": w0, "b": b0, "y": y.data, "wrt": wrt, "level": level, "h": h}
    mistakes = derived(_neuron_gradient, instance, {words: name for name, words in _words(wrt, level).items()})
    formula = "y = wx + b" if level == 1 else "y = tanh(z), z = wx + b"
    lines = [f"x = {number_text(x0)}, w = {number_text(w0)}, b = {number_text(b0)}"]
    if level >= 2:
        lines.append(f"z = {number_text(z.data)}, y = tanh(z) = {number_text(shown_y)}")
    asked = (
        f"What is \u2202y/\u2202{wrt}?"
        if level < 3
        else f"{wrt} moves by h = {number_text(h)}, the others held fixed. By about how much does y change "
        f"(to first order: the gradient times h)?"
    )
    local, top = LOCAL[wrt], "y" if level == 1 else "z"
    steps = [f"\u2202{top}/\u2202{wrt} = {local} = {number_text({'x': w0, 'w': x0, 'b': 1.0}[wrt])}."]
    if level >= 2:
        steps.append(f"tanh\u2032(z) = 1 \u2212 y\u00b2 = {number_text(1 - shown_y**2)}.")
    steps.append(f"\u2202y/\u2202{wrt} = {number_text(gradient)}.")
    if level == 3:
        steps.append(f"The change in y \u2248 {number_text(gradient)} \u00d7 {factor_text(h)} = {number_text(answer)}.")
    return Problem(
        "neuron",
        f"One neuron: {formula}. {asked}",
        lines,
        answer,
        [
            f"By the chain rule, \u2202y/\u2202{wrt} = (1 \u2212 y\u00b2) \u00b7 \u2202z/\u2202{wrt}, and "
            f"1 \u2212 y\u00b2 = {number_text(1 - shown_y**2)}."
            if level >= 2
            else f"y = wx + b: hold the other two fixed. How fast does y move with {wrt}?",
            f"\u2202{top}/\u2202{wrt} = {local}.",
        ],
        steps,
        mistakes,
        words="The numbers:",
        graph=y,
        data={"x": x0, "w": w0, "b": b0, "wrt": wrt, "h": h, "tanh": level >= 2, "y": math.tanh(w0 * x0 + b0)},
    )

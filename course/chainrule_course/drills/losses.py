"""The network chapter's drills: the gradient of cross-entropy at the logits, and of weight decay.

Each instance is built from scalar :class:`~chainrule.value.Value` s and its answer is the
``.grad`` that ``backward()`` stores, in the chapter's notation: logits O, softmax P,
one-hot labels Y, the loss L (a mean over the n examples), the penalty
s = λ/2 · Σ w² and the objective J = L + s.

* ``softmax``: the row of Ō = (P − Y)/n that belongs to one example. Named mistakes: P
  alone, the 1/n left out or ÷ the classes for it, the one-hot at another class, the sign,
  the log-softmax for the softmax.
* ``decay``: one entry of the gradient of J for a linear model ŷ = w₁x₁ + w₂x₂ with the
  squared error (ŷ − t)². Named mistakes: the penalty left out or its sign flipped, the data
  term left out, λw/2 or 2λw for the penalty's part, the 2 of the square left out, the error's sign.

Each answer is also written as a derivation whose steps offer these slips (:func:`_softmax_row`,
:func:`_decay_entry`): the mistakes are generated from it, as the exercises' checks generate
theirs (:mod:`chainrule_course.exercises.mistakes`), and a wrong answer is named only when one
slip alone gives it.
"""

import math
import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import Problem, derived, distinct, list_text, softmax_of
from .registry import drill

__all__ = ["decay", "softmax"]

LOGITS = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)
CLASSES = 3


def _cross_entropy(logits, label):
    """``log Σ exp(o) − o[label]`` for one example, as Values."""
    total = logits[0].exp()
    for o in logits[1:]:
        total = total + o.exp()
    return total.log() - logits[label]


def _softmax_words(d):
    """The words of each slip of :func:`_softmax_row` on the instance ``d``, with the mistake's name."""
    n, y, other = d["n"], d["label"], d["other"]
    return {
        "log-softmax for softmax": "That uses log P, the log-softmax: \u2202L/\u2202O holds P = softmax(O) itself.",
        "P alone": "That is P's row alone: subtract the one-hot label Y, 1 at the label's class.",
        "one-hot at another class": f"The 1 is subtracted at the label's class, {y + 1}, not at class {other + 1}.",
        "the sign": "That is Y \u2212 P: the sign is flipped.",
        "the 1/n left out": f"The loss is a mean over n = {n} examples: divide P \u2212 Y by {n}.",
        "\u00f7 classes for \u00f7 n": f"That divides by the {CLASSES} classes; the loss is a mean over the n = {n} "
        f"example{'s' if n > 1 else ''}: divide by {n}.",
    }


def _softmax_names(d):
    return {words: name for name, words in _softmax_words(d).items()}


def _softmax_row(d, at):
    """Ō's row for one example, (P − Y)/n, derived by hand, with the slips of each step."""
    said = _softmax_words(d)
    p = softmax_of(d["row"])
    p = at.choose("P", p, {said["log-softmax for softmax"]: lambda: [math.log(v) for v in p]})
    hot = [1.0 if c == d["label"] else 0.0 for c in range(CLASSES)]
    other = [1.0 if c == d["other"] else 0.0 for c in range(CLASSES)]
    hot = at.choose("Y", hot, {said["P alone"]: [0.0] * CLASSES, said["one-hot at another class"]: other})
    row = [pc - yc for pc, yc in zip(p, hot, strict=True)]
    row = at.choose("sign", row, {said["the sign"]: lambda: [-v for v in row]})
    n = d["n"]
    scale = at.choose("1/n", 1 / n, {said["the 1/n left out"]: 1.0, said["\u00f7 classes for \u00f7 n"]: 1 / CLASSES})
    return [v * scale for v in row]


@drill("softmax", "mlp", "cross-entropy's gradient", {1: "one example", 2: "a batch of two"}, "numbers")
def softmax(level, seed):
    """Ō's row for example 1, for a mean cross-entropy over n = 1 (level 1) or 2 (level 2) examples."""
    rng = random.Random(f"chainrule-drill-softmax:{level}:{seed}")
    return distinct(lambda: _softmax(rng, level))


def _softmax(rng, level):
    n = 1 if level == 1 else 2
    rows = [[rng.choice(LOGITS) for _ in range(CLASSES)] for _ in range(n)]
    labels = [rng.randrange(CLASSES) for _ in range(n)]
    logits = [[Value(x) for x in row] for row in rows]
    loss = _cross_entropy(logits[0], labels[0])
    for row, label in zip(logits[1:], labels[1:], strict=True):
        loss = loss + _cross_entropy(row, label)
    (loss * (1.0 / n)).backward()
    answer = [o.grad for o in logits[0]]
    p = softmax_of(rows[0])
    y = labels[0]
    one_hot = [1.0 if c == y else 0.0 for c in range(CLASSES)]
    instance = {"row": rows[0], "label": y, "other": (y + 1) % CLASSES, "n": n}
    mistakes = derived(_softmax_row, instance, _softmax_names(instance))
    lines = [
        f"example {k + 1}: logits O = {list_text(row)}, label class {label + 1}"
        for k, (row, label) in enumerate(zip(rows, labels, strict=True))
    ]
    shown_p = ", ".join(number_text(round(pc, 4)) for pc in p)
    return Problem(
        "softmax",
        (
            "L is the cross-entropy of softmax(O) for the example below"
            if n == 1
            else f"L is the mean cross-entropy of softmax(O) over the {n} examples below"
        )
        + f" (classes 1 to {CLASSES}). What is \u2202L/\u2202O for example 1? Give its {CLASSES} entries.",
        lines,
        answer,
        [
            "\u014c = (P \u2212 Y)/n: softmax of the row, minus 1 at the label's class, over n.",
            f"Example 1's P = [{shown_p}].",
        ],
        [
            f"P = softmax(O) for example 1: [{shown_p}].",
            f"Y = {list_text(one_hot)}: 1 at class {y + 1}.",
            f"\u014c = (P \u2212 Y)/{n} = [{', '.join(number_text(round(v, 4)) for v in answer)}].",
        ],
        mistakes,
        form="numbers",
        entries=[f"\u2202L/\u2202O[{c + 1}]" for c in range(CLASSES)],
        words="The examples:",
        data={"logits": rows, "labels": labels},
    )


SMALL = (-2.0, -1.0, -0.5, 0.5, 1.0, 2.0)
LAMBDAS = (0.1, 0.5, 1.0)
SUBSCRIPTS = "\u2081\u2082"


def _decay_words(name):
    """The words of each slip of :func:`_decay_entry`, by the mistake's name."""
    return {
        "the penalty left out": f"That is the data term alone. J also has the penalty, whose gradient is \u03bb{name}.",
        "the data left out": "That is the penalty's part alone; add the squared error's gradient.",
        "\u03bbw/2": f"The penalty's part is \u03bb{name}: the 2 of {name}\u00b2 cancels the 1/2.",
        "2\u03bbw": f"The penalty is \u03bb/2 \u00b7 {name}\u00b2, so its part is \u03bb{name}, not 2\u03bb{name}.",
        "the penalty's sign": f"The penalty's part is +\u03bb{name}: the penalty grows with {name}\u00b2.",
        "the error's sign": "That uses t \u2212 \u0177: the error is \u0177 \u2212 t, so its derivative is "
        "2(\u0177 \u2212 t)x.",
        "the 2 of the square": "(\u0177 \u2212 t)\u00b2 has derivative 2(\u0177 \u2212 t): the 2 is missing.",
    }


def _decay_entry(d, at):
    """∂J/∂w = 2(ŷ − t)·x + λw, derived by hand, with the slips of each step."""
    said = _decay_words(d["name"])
    data = at.choose("the square", 2 * d["residual"] * d["x"], {said["the 2 of the square"]: d["residual"] * d["x"]})
    data = at.choose("the error", data, {said["the error's sign"]: -data, said["the data left out"]: 0.0})
    words = {"missing": said["the penalty left out"], "half": said["\u03bbw/2"], "double": said["2\u03bbw"]}
    return at.term("the penalty", data, d["lam"] * d["w"], words | {"sign": said["the penalty's sign"]})


@drill("decay", "mlp", "a gradient with weight decay", {1: "the first weight", 2: "either weight"}, "number")
def decay(level, seed):
    """∂J/∂w₁ for J = (w₁x₁ + w₂x₂ − t)² + λ/2 (w₁² + w₂²)."""
    rng = random.Random(f"chainrule-drill-decay:{level}:{seed}")
    return distinct(lambda: _decay(rng, level))


def _decay(rng, level):
    w_list, x_list = [rng.choice(SMALL) for _ in range(2)], [rng.choice(SMALL) for _ in range(2)]
    t, lam = rng.choice(SMALL), rng.choice(LAMBDAS)
    w = [Value(v, f"w{k + 1}") for k, v in enumerate(w_list)]
    error = w[0] * x_list[0] + w[1] * x_list[1] - t
    objective = error * error + (w[0] * w[0] + w[1] * w[1]) * (lam / 2)
    objective.backward()
    k = rng.randrange(2) if level > 1 else 0
    answer, wk, xk = w[k].grad, w_list[k], x_list[k]
    residual = error.data
    data = 2 * residual * xk
    name = "w" + SUBSCRIPTS[k]
    instance = {"residual": residual, "x": xk, "w": wk, "lam": lam, "name": name}
    mistakes = derived(_decay_entry, instance, {words: short for short, words in _decay_words(name).items()})
    return Problem(
        "decay",
        f"J = (\u0177 \u2212 t)\u00b2 + \u03bb/2 \u00b7 (w\u2081\u00b2 + w\u2082\u00b2) with "
        f"\u0177 = w\u2081x\u2081 + w\u2082x\u2082. What is \u2202J/\u2202{name}?",
        [
            f"w\u2081 = {number_text(w_list[0])}, w\u2082 = {number_text(w_list[1])}",
            f"x\u2081 = {number_text(x_list[0])}, x\u2082 = {number_text(x_list[1])}",
            f"t = {number_text(t)}, \u03bb = {number_text(lam)}",
        ],
        answer,
        [
            f"\u2202J/\u2202{name} = 2(\u0177 \u2212 t)\u00b7x{SUBSCRIPTS[k]} + \u03bb{name}. What is \u0177 \u2212 t?",
            f"\u0177 \u2212 t = {number_text(residual)}.",
        ],
        [
            f"\u0177 \u2212 t = {number_text(residual)}.",
            f"The squared error gives 2 \u00b7 {factor_text(residual)} \u00b7 {factor_text(xk)} = {number_text(data)}.",
            f"The penalty gives \u03bb{name} = {number_text(lam)} \u00b7 {factor_text(wk)} = {number_text(lam * wk)}.",
            f"\u2202J/\u2202{name} = {number_text(answer)}.",
        ],
        mistakes,
        words="The numbers:",
        data={"w": w_list, "x": x_list, "t": t, "lam": lam, "k": k},
    )

"""The capstone chapter's drills: two intermediates of its network's backward pass, on a batch of two.

The network is the chapter's, cut to what a person works by hand: logits O for q = 3
classes (or a hidden layer of d_h = 2 tanh units feeding q = 2 outputs), a batch of n = 2
examples, and the mean cross-entropy. Every number is a scalar
:class:`~chainrule.value.Value` and every answer the ``.grad`` that ``backward()`` stores.

* ``bias``: b̄⁽²⁾ = Σ_i Ō_i with Ō = (P − Y)/n, the output bias's gradient. Named mistakes:
  example 1's row alone (not summed over the batch), the 1/n left out or ÷ the classes for it,
  P alone, the sign.
* ``hidden``: example 1's row of Ū = H̄ ⊙ (1 − H²) with H̄ = ŌW⁽²⁾ and H = tanh(U). Named
  mistakes: H̄ alone (tanh′ left out), W⁽²⁾ transposed, 1 − H or 1 − U² (at the pre-activation)
  for 1 − H², sigmoid′ H(1 − H) for tanh′, example 2's row.

Each answer is also written as a derivation whose steps offer these slips (:func:`_bias_sum`,
:func:`_hidden_row`): the mistakes are generated from it (:func:`~.problems.derived`), and a
wrong answer is named only when one slip alone gives it.
"""

import math
import random

from chainrule.value import Value

from .graphs import number_text
from .problems import Problem, derived, distinct, list_text, matrix_text, softmax_of
from .registry import drill

__all__ = ["bias", "hidden"]

LOGITS = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5)
SMALL = (-1.5, -1.0, -0.5, 0.5, 1.0, 1.5)
BAR = "\u0304"


@drill("bias", "capstone", "the output bias's gradient", {1: "a batch of two"}, "numbers")
def bias(level, seed):
    """b̄⁽²⁾ for a batch of two, three classes."""
    rng = random.Random(f"chainrule-drill-bias:{level}:{seed}")
    return distinct(lambda: _bias(rng, level))


def _bias_words(n, q):
    """The words of each slip of :func:`_bias_sum`, by the mistake's name."""
    return {
        "not summed over the batch": "That is example 1's row of \u014c alone: b\u207d\u00b2\u207e is added "
        "to every example, so its gradient sums \u014c over the batch.",
        "the 1/n left out": "That leaves out the 1/n of the mean: \u014c = (P \u2212 Y)/n.",
        "\u00f7 classes for \u00f7 n": f"That divides by the q = {q} classes; the loss is a mean over the n = {n} "
        f"examples: divide by {n}.",
        "P alone": "That sums P alone: subtract the one-hot labels Y, 1 at each example's class.",
        "the sign": "That is Y \u2212 P: the sign is flipped. \u014c = (P \u2212 Y)/n.",
    }


def _bias_sum(d, at):
    """b̄⁽²⁾ = Σᵢ (Pᵢ − Yᵢ)/n, derived by hand from the logits and labels, with the slips of each step."""
    logits, labels, q = d["logits"], d["labels"], d["q"]
    n = len(labels)
    said = _bias_words(n, q)
    hot = [[1.0 if c == label else 0.0 for c in range(q)] for label in labels]
    hot = at.choose("Y", hot, {said["P alone"]: [[0.0] * q for _ in labels]})
    rows = [[p - y for p, y in zip(softmax_of(row), ys, strict=True)] for row, ys in zip(logits, hot, strict=True)]
    rows = at.choose("the sign", rows, {said["the sign"]: lambda: [[-v for v in row] for row in rows]})
    scale = at.choose("1/n", 1 / n, {said["the 1/n left out"]: 1.0, said["\u00f7 classes for \u00f7 n"]: 1 / q})
    summed = [sum(row[c] for row in rows) for c in range(q)]
    summed = at.choose("the sum over the batch", summed, {said["not summed over the batch"]: rows[0]})
    return [v * scale for v in summed]


def _bias(rng, level):
    n, q = 2, 3
    logits = [[rng.choice(LOGITS) for _ in range(q)] for _ in range(n)]
    labels = [rng.randrange(q) for _ in range(n)]
    b = [Value(0.0, f"b{j + 1}") for j in range(q)]
    loss = Value(0.0)  # what 0.0 + the first term would make: a Value from the start
    for row, label in zip(logits, labels, strict=True):
        o = [b[j] + row[j] for j in range(q)]
        total = o[0].exp() + o[1].exp() + o[2].exp()
        loss = loss + (total.log() - o[label]) * (1.0 / n)
    loss.backward()
    answer = [v.grad for v in b]
    rows = [
        [p - (1.0 if j == label else 0.0) for j, p in enumerate(softmax_of(row))]
        for row, label in zip(logits, labels, strict=True)
    ]
    instance = {"logits": logits, "labels": labels, "q": q}
    mistakes = derived(_bias_sum, instance, {words: name for name, words in _bias_words(n, q).items()})
    return Problem(
        "bias",
        "O = HW\u207d\u00b2\u207e\u1d40 + b\u207d\u00b2\u207e gave the logits below for a batch of n = 2, and L "
        "is the mean cross-entropy (classes 1 to 3). "
        f"What is b{BAR}\u207d\u00b2\u207e = \u2202L/\u2202b\u207d\u00b2\u207e? "
        "Give its 3 entries.",
        [
            f"example {i + 1}: O = {list_text(row)}, label class {label + 1}"
            for i, (row, label) in enumerate(zip(logits, labels, strict=True))
        ],
        answer,
        [
            "\u014c = (P \u2212 Y)/n, and b\u207d\u00b2\u207e is added to every row of O: sum \u014c's rows.",
            "P \u2212 Y, row by row: " + "; ".join(", ".join(number_text(round(v, 4)) for v in r) for r in rows) + ".",
        ],
        [
            "P \u2212 Y, row by row: " + "; ".join(", ".join(number_text(round(v, 4)) for v in r) for r in rows) + ".",
            f"b{BAR}\u207d\u00b2\u207e = (row 1 + row 2)/2 = {list_text(answer)}.",
        ],
        mistakes,
        form="numbers",
        entries=[f"b{BAR}\u207d\u00b2\u207e[{j + 1}]" for j in range(q)],
        words="The batch:",
        data={"logits": logits, "labels": labels},
    )


@drill("hidden", "capstone", "the gradient before the tanh", {1: "a batch of two"}, "numbers")
def hidden(level, seed):
    """Example 1's row of Ū, given Ō, W⁽²⁾ and U."""
    rng = random.Random(f"chainrule-drill-hidden:{level}:{seed}")
    return distinct(lambda: _hidden(rng, level))


def _hidden_words():
    """The words of each slip of :func:`_hidden_row`, by the mistake's name."""
    return {
        "tanh\u2032 left out": "That is H\u0304 alone: H = tanh(U), so multiply by 1 \u2212 H\u00b2.",
        "W\u207d\u00b2\u207e transposed": "That uses W\u207d\u00b2\u207e\u1d40: "
        "H\u0304 = \u014cW\u207d\u00b2\u207e, row i of \u014c times W\u207d\u00b2\u207e.",
        "1 \u2212 H": "tanh\u2032(U) = 1 \u2212 H\u00b2, not 1 \u2212 H.",
        "1 \u2212 U\u00b2": "That takes 1 \u2212 U\u00b2 at the pre-activation: tanh\u2032(U) = 1 \u2212 H\u00b2, "
        "read at the output H = tanh(U).",
        "sigmoid\u2032 for tanh\u2032": "H(1 \u2212 H) is the sigmoid's derivative; tanh\u2032(U) = 1 \u2212 H\u00b2.",
        "example 2's row": "That is example 2's row: the question asks for example 1's, row 1 of \u014c and of U.",
    }


def _hidden_row(d, at):
    """Example 1's row of Ū = (ŌW⁽²⁾) ⊙ (1 − H²), derived by hand, with the slips of each step."""
    said = _hidden_words()
    e = at.choose("the example", 0, {said["example 2's row"]: 1})
    w2 = d["W2"]
    w2 = at.choose(
        "W\u207d\u00b2\u207e", w2, {said["W\u207d\u00b2\u207e transposed"]: [list(c) for c in zip(*w2, strict=True)]}
    )
    h_bar = [sum(o * row[k] for o, row in zip(d["O_bar"][e], w2, strict=True)) for k in range(len(w2[0]))]
    u = d["U"][e]
    h = [math.tanh(v) for v in u]
    slips = {
        said["tanh\u2032 left out"]: [1.0] * len(h),
        said["1 \u2212 H"]: [1 - t for t in h],
        said["1 \u2212 U\u00b2"]: [1 - v * v for v in u],
        said["sigmoid\u2032 for tanh\u2032"]: [t * (1 - t) for t in h],
    }
    slopes = at.choose("tanh\u2032", [1 - t * t for t in h], slips)
    return [g * s for g, s in zip(h_bar, slopes, strict=True)]


def _hidden(rng, level):
    n, d_h, q = 2, 2, 2
    u_rows = [[rng.choice(SMALL) for _ in range(d_h)] for _ in range(n)]
    w2 = [[rng.choice(SMALL) for _ in range(d_h)] for _ in range(q)]
    o_bar = [[rng.choice(SMALL) / 2 for _ in range(q)] for _ in range(n)]
    u = [[Value(v) for v in row] for row in u_rows]
    h = [[v.tanh() for v in row] for row in u]
    o = [[sum(h[i][k] * w2[j][k] for k in range(d_h)) for j in range(q)] for i in range(n)]
    sum(o[i][j] * o_bar[i][j] for i in range(n) for j in range(q)).backward()
    answer = [v.grad for v in u[0]]
    h0 = [math.tanh(v) for v in u_rows[0]]
    h_bar = [sum(o_bar[0][j] * w2[j][k] for j in range(q)) for k in range(d_h)]
    instance = {"U": u_rows, "W2": w2, "O_bar": o_bar}
    mistakes = derived(_hidden_row, instance, {words: name for name, words in _hidden_words().items()})
    return Problem(
        "hidden",
        "H = tanh(U) and O = HW\u207d\u00b2\u207e\u1d40 for a batch of two. Given \u014c = \u2202L/\u2202O, what is "
        f"example 1's row of U{BAR} = \u2202L/\u2202U (examples and rows counted from 1)? Give its 2 entries.",
        [matrix_text("U", u_rows), matrix_text("W\u207d\u00b2\u207e", w2), matrix_text("\u014c", o_bar)],
        answer,
        [
            "H\u0304 = \u014cW\u207d\u00b2\u207e, then U\u0304 = H\u0304 \u2299 (1 \u2212 H\u00b2).",
            f"Example 1: H = [{', '.join(number_text(round(v, 4)) for v in h0)}].",
        ],
        [
            f"Example 1: H = [{', '.join(number_text(round(v, 4)) for v in h0)}], H\u0304 = {list_text(h_bar)}.",
            f"U{BAR} = H\u0304 \u2299 (1 \u2212 H\u00b2) = {list_text(answer)}.",
        ],
        mistakes,
        form="numbers",
        entries=[f"U{BAR}[1, {k + 1}]" for k in range(d_h)],
        words="The arrays, row by row (rows separated by ;):",
        data={"U": u_rows, "W2": w2, "O_bar": o_bar},
    )

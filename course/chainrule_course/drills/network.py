"""The capstone chapter's drills: two intermediates of its network's backward pass, on a batch of two.

The network is the chapter's, cut to what a person works by hand: logits O for q = 3
classes (or a hidden layer of d_h = 2 tanh units feeding q = 2 outputs), a batch of n = 2
examples, and the mean cross-entropy. Every number is a scalar
:class:`~chainrule.value.Value` and every answer the ``.grad`` that ``backward()`` stores.

* ``bias``: b̄⁽²⁾ = Σ_i Ō_i with Ō = (P − Y)/n, the output bias's gradient. Named mistakes:
  example 1's row alone (not summed over the batch), the 1/n left out.
* ``hidden``: example 1's row of Ū = H̄ ⊙ (1 − H²) with H̄ = ŌW⁽²⁾ and H = tanh(U). Named
  mistakes: H̄ alone (tanh′ left out), W⁽²⁾ transposed, 1 − H for 1 − H².
"""

import math
import random

from chainrule.value import Value

from .graphs import number_text
from .problems import Mistake, Problem, distinct, list_text, matrix_text, softmax_of

__all__ = ["bias", "hidden"]

LOGITS = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5)
SMALL = (-1.5, -1.0, -0.5, 0.5, 1.0, 1.5)
BAR = "\u0304"


def bias(level, seed):
    """b̄⁽²⁾ for a batch of two, three classes."""
    rng = random.Random(f"chainrule-drill-bias:{level}:{seed}")
    return distinct(lambda: _bias(rng, level))


def _bias(rng, level):
    n, q = 2, 3
    logits = [[rng.choice(LOGITS) for _ in range(q)] for _ in range(n)]
    labels = [rng.randrange(q) for _ in range(n)]
    b = [Value(0.0, f"b{j + 1}") for j in range(q)]
    loss = 0.0
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
    mistakes = [
        Mistake(
            [v / n for v in rows[0]],
            "That is example 1's row of \u014c alone: b\u207d\u00b2\u207e is added "
            "to every example, so its gradient sums \u014c over the batch.",
            "not summed over the batch",
        ),
        Mistake(
            [rows[0][j] + rows[1][j] for j in range(q)],
            "That leaves out the 1/n of the mean: \u014c = (P \u2212 Y)/n.",
            "the 1/n left out",
        ),
    ]
    return Problem(
        "bias",
        "O = HW\u207d\u00b2\u207e\u1d40 + b\u207d\u00b2\u207e gave the logits below for a batch of n = 2, and L "
        f"is the mean cross-entropy. What is b{BAR}\u207d\u00b2\u207e = \u2202L/\u2202b\u207d\u00b2\u207e? "
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


def hidden(level, seed):
    """Example 1's row of Ū, given Ō, W⁽²⁾ and U."""
    rng = random.Random(f"chainrule-drill-hidden:{level}:{seed}")
    return distinct(lambda: _hidden(rng, level))


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
    h_bar_t = [sum(o_bar[0][j] * w2[k][j] for j in range(q)) for k in range(d_h)]
    mistakes = [
        Mistake(h_bar, "That is H\u0304 alone: H = tanh(U), so multiply by 1 \u2212 H\u00b2.", "tanh\u2032 left out"),
        Mistake(
            [g * (1 - t * t) for g, t in zip(h_bar_t, h0, strict=True)],
            "That uses W\u207d\u00b2\u207e\u1d40: "
            "H\u0304 = \u014cW\u207d\u00b2\u207e, row i of \u014c times W\u207d\u00b2\u207e.",
            "W\u207d\u00b2\u207e transposed",
        ),
        Mistake(
            [g * (1 - t) for g, t in zip(h_bar, h0, strict=True)],
            "tanh\u2032(U) = 1 \u2212 H\u00b2, not 1 \u2212 H.",
            "1 \u2212 H",
        ),
    ]
    return Problem(
        "hidden",
        "H = tanh(U) and O = HW\u207d\u00b2\u207e\u1d40 for a batch of two. Given \u014c = \u2202L/\u2202O, what is "
        f"example 1's row of U{BAR} = \u2202L/\u2202U? Give its 2 entries.",
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

"""The tensors chapter's drills: an entry of a matrix product's gradient, and the sum that undoes a broadcast.

The matrices are small enough to hold in one's head, and every entry is a scalar
:class:`~chainrule.value.Value`: the product and the broadcast are built entry by entry,
``L = Σ C̄ ⊙ C`` (so that ∂L/∂C is the given C̄), and the answer is the ``.grad`` that
``L.backward()`` stores. The page has no numpy, and needs none.

* ``matmul``: an entry of Ā = C̄Bᵀ or B̄ = AᵀC̄ for C = AB. Named mistakes: B (or A) not
  transposed, C̄ read by columns, one term of the sum, the other input's rule, C's value.
* ``broadcast``: b̄ for Y = X + b (b a row or a column) or Y = X ⊙ b. Named mistakes: one
  copy's gradient not summed, the sum over the wrong axis, a mean, the factor X left out.
"""

import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import Mistake, Problem, distinct, grid, matrix_text, weighted_sum

__all__ = ["broadcast", "matmul"]

BAR = "\u0304"  # a combining macron: "C" + BAR reads C̄
ENTRIES = (-3.0, -2.0, -1.0, 1.0, 2.0, 3.0)
UPSTREAM = (-2.0, -1.0, -0.5, 0.5, 1.0, 2.0)


def _values(rows):
    return [[Value(x) for x in row] for row in rows]


def _product(a, b):
    return [[sum(a[i][p] * b[p][j] for p in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def _dot(xs, ys):
    return sum(x * y for x, y in zip(xs, ys, strict=True))


def _column(rows, j):
    return [row[j] for row in rows]


def matmul(level, seed):
    """An entry of Ā or B̄ for C = AB, given C̄ = ∂L/∂C."""
    rng = random.Random(f"chainrule-drill-matmul:{level}:{seed}")
    return distinct(lambda: _matmul(rng, level))


def _matmul(rng, level):
    m, k, r = (2, 2, 2) if level == 1 else (2, 3, 2)
    a_rows, b_rows, c_bar = grid(rng, m, k, ENTRIES), grid(rng, k, r, ENTRIES), grid(rng, m, r, UPSTREAM)
    a, b = _values(a_rows), _values(b_rows)
    weighted_sum(c_bar, _product(a, b)).backward()
    of_a = level == 1 or rng.random() < 0.5
    i, j = (rng.randrange(m), rng.randrange(k)) if of_a else (rng.randrange(k), rng.randrange(r))
    answer = (a if of_a else b)[i][j].grad
    name = "A" if of_a else "B"
    entry = f"{name}{BAR}[{i + 1}, {j + 1}]"
    if of_a:  # Ā[i, j] = row i of C̄ · row j of B
        rule, terms = f"A{BAR} = C{BAR}B\u1d40", list(zip(c_bar[i], b_rows[j], strict=True))
        mistakes = _matmul_mistakes_a(a_rows, b_rows, c_bar, i, j)
        pairing = f"row {i + 1} of C{BAR} with row {j + 1} of B"
    else:  # B̄[i, j] = column i of A · column j of C̄
        rule = f"B{BAR} = A\u1d40C{BAR}"
        terms = list(zip(_column(a_rows, i), _column(c_bar, j), strict=True))
        mistakes = _matmul_mistakes_b(a_rows, b_rows, c_bar, i, j)
        pairing = f"column {i + 1} of A with column {j + 1} of C{BAR}"
    products = " + ".join(f"{factor_text(x)}\u00b7{factor_text(y)}" for x, y in terms)
    return Problem(
        "matmul",
        f"C = AB, and C{BAR} = \u2202L/\u2202C is given. What is {entry}, the entry in row {i + 1}, "
        f"column {j + 1} of {name}{BAR} = \u2202L/\u2202{name}?",
        [matrix_text("A", a_rows), matrix_text("B", b_rows), matrix_text(f"C{BAR}", c_bar)],
        answer,
        [f"{rule}. Which row and column does {entry} pair?", f"{entry} pairs {pairing}."],
        [f"{rule}: {entry} pairs {pairing}.", f"{entry} = {products} = {number_text(answer)}."],
        mistakes,
        words="The matrices, row by row (rows separated by ;):",
        data={"A": a_rows, "B": b_rows, "C_bar": c_bar, "of": name, "entry": (i, j)},
    )


def _matmul_mistakes_a(a, b, c_bar, i, j):
    m, k, r = len(a), len(b), len(b[0])
    found = []
    if j < r:
        found.append(
            Mistake(
                _dot(c_bar[i], _column(b, j)) if k == r else None,
                f"That is (C{BAR}B)[{i + 1}, {j + 1}]: B must be transposed. A{BAR} = C{BAR}B\u1d40, "
                f"so A{BAR}[{i + 1}, {j + 1}] pairs row {i + 1} of C{BAR} with row {j + 1} of B.",
                "B not transposed",
            )
        )
    if m == r and i < r:
        found.append(
            Mistake(
                _dot(_column(c_bar, i), b[j]),
                f"You read C{BAR} by columns. Row {i + 1} of A{BAR} comes from row {i + 1} of C{BAR}.",
                "C\u0304 transposed",
            )
        )
    if i < k and j < r:
        found.append(
            Mistake(
                _dot(_column(a, i), _column(c_bar, j)),
                f"That is the rule for B{BAR} = A\u1d40C{BAR}. For A{BAR} it is C{BAR}B\u1d40.",
                "the other input's rule",
            )
        )
    found.append(_one_term(c_bar[i][0] * b[j][0], f"A{BAR}[{i + 1}, {j + 1}]", f"{r} products, one per column"))
    if j < r:
        found.append(_the_value(_dot(a[i], _column(b, j))))
    return [mistake for mistake in found if mistake.value is not None]


def _matmul_mistakes_b(a, b, c_bar, i, j):
    m, k = len(a), len(b)
    found = []
    if i < m:
        found.append(
            Mistake(
                _dot(a[i], _column(c_bar, j)) if m == k else None,
                f"That is (AC{BAR})[{i + 1}, {j + 1}]: A must be transposed. B{BAR} = A\u1d40C{BAR}, "
                f"so B{BAR}[{i + 1}, {j + 1}] pairs column {i + 1} of A with column {j + 1} of C{BAR}.",
                "A not transposed",
            )
        )
        found.append(
            Mistake(
                _dot(c_bar[i], b[j]) if j < k else None,
                f"That is the rule for A{BAR} = C{BAR}B\u1d40. For B{BAR} it is A\u1d40C{BAR}.",
                "the other input's rule",
            )
        )
    found.append(_one_term(a[0][i] * c_bar[0][j], f"B{BAR}[{i + 1}, {j + 1}]", f"{m} products, one per row"))
    if i < m:
        found.append(_the_value(_dot(a[i], _column(b, j))))
    return [mistake for mistake in found if mistake.value is not None]


def _one_term(value, entry, count):
    return Mistake(value, f"That is one term of the sum: {entry} adds {count} of C{BAR}.", "one term of the sum")


def _the_value(value):
    return Mistake(value, "That is an entry of C = AB itself, the forward value, not a gradient.", "C's value")


BROADCASTS = {
    1: ("row", (3, 2)),  # Y = X + b, b of shape (2,), added to every row
    2: ("column", (2, 2)),  # Y = X + b, b of shape (2, 1), added to every column
    3: ("times", (2, 3)),  # Y = X ⊙ b, b of shape (3,)
}


def broadcast(level, seed):
    """b̄ for Y = X + b or Y = X ⊙ b with b broadcast, given Ȳ = ∂L/∂Y."""
    rng = random.Random(f"chainrule-drill-broadcast:{level}:{seed}")
    return distinct(lambda: _broadcast(rng, level))


def _broadcast(rng, level):
    how, (rows, cols) = BROADCASTS[level]
    x_rows, y_bar = grid(rng, rows, cols, ENTRIES), grid(rng, rows, cols, UPSTREAM)
    size = rows if how == "column" else cols
    b_list = [rng.choice(ENTRIES) for _ in range(size)]
    x, b = _values(x_rows), [Value(v) for v in b_list]
    pick = (lambda i, j: b[i]) if how == "column" else (lambda i, j: b[j])
    made = [
        [x[i][j] * pick(i, j) if how == "times" else x[i][j] + pick(i, j) for j in range(cols)] for i in range(rows)
    ]
    weighted_sum(y_bar, made).backward()
    answer = [v.grad for v in b]
    column_sums = [sum(_column(y_bar, j)) for j in range(cols)]
    row_sums = [sum(row) for row in y_bar]
    if how == "column":
        shape, formula = f"({rows}, 1)", f"Y = X + b, b of shape ({rows}, 1) added to every column of X"
        along, copies, used_in = "each row", cols, "each column"
        mistakes = [_not_summed([row[0] for row in y_bar], "column 1"), _wrong_axis(column_sums)]
        mistakes.append(_mean([s / cols for s in row_sums]))
    else:
        shape = f"({cols},)"
        along, copies, used_in = "each column", rows, "each row"
        if how == "times":
            formula = f"Y = X \u2299 b, b of shape ({cols},) multiplying every row of X"
            mistakes = [
                Mistake(
                    column_sums,
                    "You left out X: b multiplies it, so each copy's gradient is "
                    "\u0232[i, j] \u00b7 X[i, j] before the sum.",
                    "the factor left out",
                ),
                _not_summed([y * v for y, v in zip(y_bar[0], x_rows[0], strict=True)], "row 1"),
            ]
        else:
            formula = f"Y = X + b, b of shape ({cols},) added to every row of X"
            mistakes = [_not_summed(y_bar[0], "row 1"), _mean([s / rows for s in column_sums])]
    what = "\u0232[i, j] \u00b7 X[i, j]" if how == "times" else "\u0232"
    return Problem(
        "broadcast",
        f"{formula}. Given \u0232 = \u2202L/\u2202Y, what is b{BAR} = \u2202L/\u2202b? Give its "
        f"{size} entries in order.",
        [
            matrix_text("X", x_rows),
            f"b = [{('; ' if how == 'column' else ', ').join(number_text(v) for v in b_list)}] (shape {shape})",
            matrix_text("\u0232", y_bar),
        ],
        answer,
        [
            f"Each entry of b is used {copies} times, once in {used_in}. What does each use contribute?",
            f"Sum {what} along {along}: b{BAR} has the shape of b.",
        ],
        [
            f"b is copied {copies} times; each copy receives the gradient of its entries of Y.",
            f"b{BAR} sums {what} along {along}: {', '.join(number_text(v) for v in answer)}.",
        ],
        mistakes,
        form="numbers",
        entries=[f"b{BAR}[{n + 1}]" for n in range(size)],
        words="The arrays, row by row (rows separated by ;):",
        data={"X": x_rows, "b": b_list, "Y_bar": y_bar, "how": how},
    )


def _not_summed(values, where):
    return Mistake(
        list(values),
        f"That is the gradient of one copy ({where} of Y). b is copied to every one; their gradients add.",
        "not summed",
    )


def _wrong_axis(values):
    return Mistake(list(values), "That sums over the wrong axis: sum along the copies of b.", "the wrong axis")


def _mean(values):
    return Mistake(list(values), "That is a mean. The copies' gradients add up: take their sum.", "a mean")

"""The tensors chapter's drills: an entry of a matrix product's gradient, and the sum that undoes a broadcast.

The matrices are small enough to hold in one's head, and every entry is a scalar
:class:`~chainrule.value.Value`: the product and the broadcast are built entry by entry,
``L = Σ C̄ ⊙ C`` (so that ∂L/∂C is the given C̄), and the answer is the ``.grad`` that
``L.backward()`` stores. The page has no numpy, and needs none.

* ``matmul``: an entry of Ā = C̄Bᵀ or B̄ = AᵀC̄ for C = AB. Named mistakes: B (or A) not
  transposed, C̄ read by columns, the other input's rule, the factors in the other order (BᵀC̄
  or C̄Aᵀ), one term of the sum, the row and column swapped, C's value.
* ``broadcast``: b̄ for Y = X + b (b a row or a column) or Y = X ⊙ b. Named mistakes: one
  copy's gradient not summed, the sum over the wrong axis, every entry summed, a mean, the
  factor X left out, b for X.

Each answer is also written as a derivation whose steps offer these slips (:func:`_matmul_entry`,
:func:`_broadcast_sum`): the mistakes are generated from it (:func:`.problems.derived`), as the
exercises' checks generate theirs, and a wrong answer is named only when one slip alone gives it.
"""

import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import Problem, derived, distinct, grid, matrix_text, weighted_sum
from .registry import drill

__all__ = ["broadcast", "matmul"]

BAR = "\u0304"  # a combining macron: "C" + BAR reads C̄
ENTRIES = (-3.0, -2.0, -1.0, 1.0, 2.0, 3.0)
UPSTREAM = (-2.0, -1.0, -0.5, 0.5, 1.0, 2.0)
#: How an entry is counted: from 1, as the chapters' maths counts (the Notation page), said in each prompt.
FROM_ONE = "count from 1, as in the chapter's maths (numpy counts from 0"


def _values(rows):
    return [[Value(x) for x in row] for row in rows]


def _product(a, b):
    return [[sum(a[i][p] * b[p][j] for p in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def _dot(xs, ys):
    return sum(x * y for x, y in zip(xs, ys, strict=True))


def _column(rows, j):
    return [row[j] for row in rows]


@drill(
    "matmul",
    "tensors",
    "an entry of a product's gradient",
    {1: "(2, 2) times (2, 2)", 2: "(2, 3) times (3, 2)"},
    "number",
)
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
        pairing = f"row {i + 1} of C{BAR} with row {j + 1} of B"
    else:  # B̄[i, j] = column i of A · column j of C̄
        rule = f"B{BAR} = A\u1d40C{BAR}"
        terms = list(zip(_column(a_rows, i), _column(c_bar, j), strict=True))
        pairing = f"column {i + 1} of A with column {j + 1} of C{BAR}"
    instance = {"A": a_rows, "B": b_rows, "C_bar": c_bar, "of": name, "i": i, "j": j}
    mistakes = derived(_matmul_entry, instance, {words: short for short, words in _matmul_words(instance).items()})
    products = " + ".join(f"{factor_text(x)}\u00b7{factor_text(y)}" for x, y in terms)
    return Problem(
        "matmul",
        f"C = AB, and C{BAR} = \u2202L/\u2202C is given. What is {entry}, the entry in row {i + 1}, "
        f"column {j + 1} of {name}{BAR} = \u2202L/\u2202{name}? Rows and columns {FROM_ONE}: there {entry} "
        f"is at index [{i}, {j}]).",
        [matrix_text("A", a_rows), matrix_text("B", b_rows), matrix_text(f"C{BAR}", c_bar)],
        answer,
        [f"{rule}. Which row and column does {entry} pair?", f"{entry} pairs {pairing}."],
        [f"{rule}: {entry} pairs {pairing}.", f"{entry} = {products} = {number_text(answer)}."],
        mistakes,
        words="The matrices, row by row (rows separated by ;):",
        data={"A": a_rows, "B": b_rows, "C_bar": c_bar, "of": name, "entry": (i, j)},
    )


def _matmul_words(d):
    """The words of each slip of :func:`_matmul_entry` on the instance ``d``, by the mistake's name."""
    a, b, i, j, name = d["A"], d["B"], d["i"], d["j"], d["of"]
    entry = f"{name}{BAR}[{i + 1}, {j + 1}]"
    if name == "A":
        rule, other, count = f"C{BAR}B\u1d40", f"B{BAR} = A\u1d40C{BAR}", f"{len(b[0])} products, one per column"
        flipped, pairs = f"B\u1d40C{BAR}", f"row {i + 1} of C{BAR} with row {j + 1} of B"
        unturned = (
            f"That is (C{BAR}B)[{i + 1}, {j + 1}]: B must be transposed. A{BAR} = {rule}, so {entry} pairs {pairs}."
        )
    else:
        rule, other, count = f"A\u1d40C{BAR}", f"A{BAR} = C{BAR}B\u1d40", f"{len(a)} products, one per row"
        flipped, pairs = f"C{BAR}A\u1d40", f"column {i + 1} of A with column {j + 1} of C{BAR}"
        unturned = (
            f"That is (AC{BAR})[{i + 1}, {j + 1}]: A must be transposed. B{BAR} = {rule}, so {entry} pairs {pairs}."
        )
    return {
        f"{'B' if name == 'A' else 'A'} not transposed": unturned,
        "C\u0304 transposed": f"You read C{BAR} by columns. Row {i + 1} of A{BAR} comes from row {i + 1} of C{BAR}.",
        "the other input's rule": f"That is the rule for {other}. For {name}{BAR} it is {rule}.",
        "the factors in the other order": f"That is ({flipped})[{i + 1}, {j + 1}]: the factors are the other way "
        f"round. {name}{BAR} = {rule}.",
        "one term of the sum": f"That is one term of the sum: {entry} adds {count} of C{BAR}.",
        "the row and column swapped": f"That is {name}{BAR}[{j + 1}, {i + 1}]: {entry} is in row {i + 1}, "
        f"column {j + 1}.",
        "C's value": "That is an entry of C = AB itself, the forward value, not a gradient.",
    }


def _matmul_entry(d, at):
    """Ā[i, j] = Σ_p C̄[i, p]·B[j, p], or B̄[i, j] = Σ_p A[p, i]·C̄[p, j], derived by hand, with the slips of each
    step. A slip that does not fit the shapes (an index past the end, rows of different lengths) raises, and the
    generator leaves it out."""
    said = _matmul_words(d)
    a, b, c = d["A"], d["B"], d["C_bar"]
    i, j = at.choose("the entry", (d["i"], d["j"]), {said["the row and column swapped"]: (d["j"], d["i"])})
    if d["of"] == "A":  # row i of C̄ with row j of B
        right = list(zip(c[i], b[j], strict=True))
        slips = {
            said["B not transposed"]: lambda: list(zip(c[i], _column(b, j), strict=True)),
            said["C\u0304 transposed"]: lambda: list(zip(_column(c, i), b[j], strict=True)),
            said["the other input's rule"]: lambda: list(zip(_column(a, i), _column(c, j), strict=True)),
            said["the factors in the other order"]: lambda: list(zip(_column(b, i), _column(c, j), strict=True)),
        }
    else:  # column i of A with column j of C̄
        right = list(zip(_column(a, i), _column(c, j), strict=True))
        slips = {
            said["A not transposed"]: lambda: list(zip(a[i], _column(c, j), strict=True)),
            said["the other input's rule"]: lambda: list(zip(c[i], b[j], strict=True)),
            said["the factors in the other order"]: lambda: list(zip(c[i], a[j], strict=True)),
        }
    pairs = at.choose("the rule", right, slips)
    total = at.choose("the sum", sum(x * y for x, y in pairs), {said["one term of the sum"]: pairs[0][0] * pairs[0][1]})
    value = {said["C's value"]: lambda: _dot(a[d["i"]], _column(b, d["j"]))}  # C[i, j], where C has that entry
    return at.choose("the gradient", total, value)


BROADCASTS = {
    1: ("row", (3, 2)),  # Y = X + b, b of shape (2,), added to every row
    2: ("column", (2, 2)),  # Y = X + b, b of shape (2, 1), added to every column
    3: ("times", (2, 3)),  # Y = X ⊙ b, b of shape (3,)
}


@drill(
    "broadcast",
    "tensors",
    "the sum that undoes a broadcast",
    {1: "b added to every row", 2: "b added to every column", 3: "b multiplying every row"},
    "numbers",
)
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
    instance = {"X": x_rows, "b": b_list, "Y_bar": y_bar, "how": how}
    mistakes = derived(_broadcast_sum, instance, {words: short for short, words in _broadcast_words(how).items()})
    if how == "column":
        shape, formula = f"({rows}, 1)", f"Y = X + b, b of shape ({rows}, 1) added to every column of X"
        along, copies, used_in = "each row", cols, "each column"
    else:
        shape = f"({cols},)"
        along, copies, used_in = "each column", rows, "each row"
        formula = (
            f"Y = X \u2299 b, b of shape ({cols},) multiplying every row of X"
            if how == "times"
            else f"Y = X + b, b of shape ({cols},) added to every row of X"
        )
    what = "\u0232[i, j] \u00b7 X[i, j]" if how == "times" else "\u0232"
    return Problem(
        "broadcast",
        f"{formula}. Given \u0232 = \u2202L/\u2202Y, what is b{BAR} = \u2202L/\u2202b? Give its "
        f"{size} entries in order, b{BAR}[1] to b{BAR}[{size}]: they {FROM_ONE}).",
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


def _broadcast_words(how):
    """The words of each slip of :func:`_broadcast_sum` for a broadcast ``how``, by the mistake's name."""
    first = "column 1" if how == "column" else "row 1"
    return {
        "not summed": f"That is the gradient of one copy ({first} of Y). b is copied to every one; their "
        "gradients add.",
        "the wrong axis": "That sums over the wrong axis: sum along the copies of b.",
        "a mean": "That is a mean. The copies' gradients add up: take their sum.",
        "every entry summed": "That sums every entry of the array: each entry of b gets only the gradients of its "
        "own copies, one sum per entry.",
        "the factor left out": "You left out X: b multiplies it, so each copy's gradient is "
        "\u0232[i, j] \u00b7 X[i, j] before the sum.",
        "b for X": "That multiplies by b, the derivative of X \u2299 b by X. By b it is X: each copy's gradient is "
        "\u0232[i, j] \u00b7 X[i, j].",
    }


def _broadcast_sum(d, at):
    """b̄: each copy's gradient (Ȳ, or Ȳ ⊙ X for a product) summed over b's copies, derived by hand, with the
    slips of each step. A sum that has not b's shape raises, and the generator leaves it out."""
    said, how, y_bar, x, b = _broadcast_words(d["how"]), d["how"], d["Y_bar"], d["X"], d["b"]
    rows, cols = len(y_bar), len(y_bar[0])
    local = y_bar
    if how == "times":  # ∂(X ⊙ b)/∂b = X, entry by entry
        product = [[y * v for y, v in zip(yrow, xrow, strict=True)] for yrow, xrow in zip(y_bar, x, strict=True)]
        by_b = [[y * v for y, v in zip(yrow, b, strict=True)] for yrow in y_bar]
        local = at.choose("the local derivative", product, {said["the factor left out"]: y_bar, said["b for X"]: by_b})
    by_column = [sum(row[j] for row in local) for j in range(cols)]
    by_row = [sum(row) for row in local]
    right, other = (by_row, by_column) if how == "column" else (by_column, by_row)
    first = [row[0] for row in local] if how == "column" else list(local[0])
    sums = at.choose(
        "the sum",
        right,
        {
            said["not summed"]: first,
            said["the wrong axis"]: lambda: _shaped(other, len(right)),
            said["every entry summed"]: [sum(right)] * len(right),
        },
    )
    copies = cols if how == "column" else rows
    return at.choose("a sum, not a mean", sums, {said["a mean"]: lambda: [v / copies for v in sums]})


def _shaped(values, size):
    """``values``, when there are ``size`` of them: a sum over the wrong axis that still has b's shape."""
    if len(values) != size:
        raise ValueError(f"{len(values)} sums for {size} entries")
    return values

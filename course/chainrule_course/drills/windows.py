"""The layers chapter's drills: a convolution's gradients, where max pooling routes, an embedding's rows.

Each image, kernel and table is a few scalar :class:`~chainrule.value.Value` s, and each
answer is the ``.grad`` that ``backward()`` stores, for L = Σ Ȳ ⊙ Y with Ȳ given:

* ``conv``: an entry of K̄ (level 1) or X̄ (level 2) for Y = X ⋆ K, a 3×3 image and a 2×2
  kernel, stride 1, no padding (the chapter's sum over windows). Named mistakes: the
  kernel flipped or transposed, one term of the sum, K read for X.
* ``maxpool``: the gradient of one row of a 4×4 image under 2×2 max pooling; each
  window's Ȳ goes to its largest entry, the first in reading order among ties, as
  PyTorch's ``max_pool2d`` and ``chainrule``'s route it. Named mistakes: Ȳ sent to every
  entry of the window, split among ties, or given to the last of them, the largest value sent for Ȳ.
* ``embedding``: the gradient of one row of an embedding table E, with tokens that may
  repeat. Named mistakes: only the last use kept (written over, not added), only the
  first, the mean of the uses, every example's Ȳ added, E's own row.

Each answer is also written as a derivation whose steps offer these slips (:func:`_conv_entry`,
:func:`_maxpool_row`, :func:`_embedding_row`): the mistakes are generated from it
(:func:`~.problems.derived`), and a wrong answer is named only when one slip alone gives it.
"""

import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import Problem, derived, distinct, grid, list_text, matrix_text, weighted_sum
from .registry import drill

__all__ = ["conv", "embedding", "maxpool"]

PIXELS = (-2.0, -1.0, 1.0, 2.0, 3.0)
UPSTREAM = (-1.0, -0.5, 0.5, 1.0, 2.0)
BAR = "\u0304"


@drill("conv", "layers", "an entry of a convolution's gradient", {1: "the kernel's", 2: "the image's"}, "number")
def conv(level, seed):
    """An entry of K̄ (level 1) or X̄ (level 2) for a 3×3 image and a 2×2 kernel."""
    rng = random.Random(f"chainrule-drill-conv:{level}:{seed}")
    return distinct(lambda: _conv(rng, level))


def _conv_words(entry):
    """The words of each slip of :func:`_conv_entry`, by the mistake's name."""
    return {
        "the kernel flipped": "That flips the kernel. The layer is a correlation (no flip): entry (a, b) of K meets "
        "X[i + a \u2212 1, j + b \u2212 1].",
        "the kernel transposed": "That swaps the row and column offsets, K transposed: entry (a, b) of K meets "
        "X[i + a \u2212 1, j + b \u2212 1], a down and b across.",
        "one term of the sum": f"That is one term: {entry} sums over every position it takes part in.",
        "K for X": "That multiplies \u0232 by K. A kernel entry's gradient reads the image: "
        "X[i + a \u2212 1, j + b \u2212 1] at each position.",
        "X for K": "That multiplies \u0232 by X. An image entry's gradient reads the kernel: "
        "K[a, b] at each window that holds it.",
    }


def _conv_entry(d, at):
    """An entry of K̄ (``d["of"]`` "K") or X̄ ("X") at ``d["at"]`` (from 0), summed by hand over the positions it
    takes part in, with the slips of each step."""
    said = _conv_words(d["entry"])
    x, k, y_bar = d["X"], d["K"], d["Y_bar"]
    read = at.choose(
        "the kernel's offsets",
        "as written",
        {said["the kernel flipped"]: "flipped", said["the kernel transposed"]: "transposed"},
    )

    def kernel(a, b):
        """The offsets at which entry (a, b) of the kernel is read, as the slip (if any) reads them."""
        return {"as written": (a, b), "flipped": (1 - a, 1 - b), "transposed": (b, a)}[read]

    if d["of"] == "K":
        a, b = d["at"]
        other = at.choose("what \u0232 meets", "X", {said["K for X"]: "K"})
        r, c = kernel(a, b)
        terms = [y_bar[i][j] * (x[i + r][j + c] if other == "X" else k[a][b]) for i in range(2) for j in range(2)]
    else:
        u, v = d["at"]
        other = at.choose("what \u0232 meets", "K", {said["X for K"]: "X"})
        offsets = [(a, b) for a in range(2) for b in range(2) if 0 <= u - a < 2 and 0 <= v - b < 2]
        terms = [
            y_bar[u - a][v - b] * (k[kernel(a, b)[0]][kernel(a, b)[1]] if other == "K" else x[u][v]) for a, b in offsets
        ]
    return at.choose("the sum", sum(terms), {said["one term of the sum"]: terms[0]})


def _conv(rng, level):
    x_rows, k_rows, y_bar = grid(rng, 3, 3, PIXELS), grid(rng, 2, 2, PIXELS), grid(rng, 2, 2, UPSTREAM)
    x, k = [[Value(v) for v in row] for row in x_rows], [[Value(v) for v in row] for row in k_rows]
    y = [[sum(x[i + a][j + b] * k[a][b] for a in range(2) for b in range(2)) for j in range(2)] for i in range(2)]
    weighted_sum(y_bar, y).backward()
    if level == 1:
        a, b = rng.randrange(2), rng.randrange(2)
        answer, entry, place = k[a][b].grad, f"K{BAR}[{a + 1}, {b + 1}]", (a, b)
        terms = [(y_bar[i][j], x_rows[i + a][j + b]) for i in range(2) for j in range(2)]
        rule = f"K{BAR}[a, b] = \u03a3\u1d62\u2c7c \u0232[i, j]\u00b7X[i + a \u2212 1, j + b \u2212 1]"
    else:
        u, v = rng.randrange(3), rng.randrange(3)
        answer, entry, place = x[u][v].grad, f"X{BAR}[{u + 1}, {v + 1}]", (u, v)
        offsets = [(a, b) for a in range(2) for b in range(2) if 0 <= u - a < 2 and 0 <= v - b < 2]
        terms = [(y_bar[u - a][v - b], k_rows[a][b]) for a, b in offsets]
        rule = (
            f"X{BAR}[u, v] = \u03a3 \u0232[u \u2212 a + 1, v \u2212 b + 1]\u00b7K[a, b] over the windows "
            "that hold (u, v)"
        )
    of = "K" if level == 1 else "X"
    instance = {"X": x_rows, "K": k_rows, "Y_bar": y_bar, "of": of, "at": place, "entry": entry}
    mistakes = derived(_conv_entry, instance, {words: name for name, words in _conv_words(entry).items()})
    products = " + ".join(f"{factor_text(p)}\u00b7{factor_text(q)}" for p, q in terms)
    return Problem(
        "conv",
        "Y = X \u22c6 K: each Y[i, j] = \u03a3 K[a, b]\u00b7X[i + a \u2212 1, j + b \u2212 1] over the 2\u00d72 "
        "window, indices from 1 (stride 1, "
        f"no padding). Given \u0232 = \u2202L/\u2202Y, what is {entry}?",
        [matrix_text("X", x_rows), matrix_text("K", k_rows), matrix_text("\u0232", y_bar)],
        answer,
        [f"{rule}.", f"{entry} = {' + '.join('___' for _ in terms)}: {len(terms)} products."],
        [f"{rule}.", f"{entry} = {products} = {number_text(answer)}."],
        mistakes,
        words="The arrays, row by row (rows separated by ;):",
        data={"X": x_rows, "K": k_rows, "Y_bar": y_bar, "of": of, "at": place, "entry": entry},
    )


@drill("maxpool", "layers", "where max pooling routes the gradient", {1: "ties are rare", 2: "many ties"}, "numbers")
def maxpool(level, seed):
    """One row of X̄ for 2×2 max pooling of a 4×4 image; ties possible at level 2."""
    rng = random.Random(f"chainrule-drill-maxpool:{level}:{seed}")
    return distinct(lambda: _maxpool(rng, level))


def _winner(window, first=True):
    """The position in ``window`` (a list of (value, position)) of its max: the first, or the last, of ties."""
    best = max(value for value, _ in window)
    places = [place for value, place in window if value == best]
    return places[0] if first else places[-1]


def _sent(windows, y_bar, row, rule):
    """Row ``row`` of the image's gradient when ``rule(window, g)`` gives each window's (share, place) pairs."""
    grads = [0.0] * 4
    for q in range(2):
        for share, (r, c) in rule(windows[row // 2][q], y_bar[row // 2][q]):
            if r == row:
                grads[c] += share
    return grads


def _split(window, g):
    """torch.amax's rule: a window's gradient split evenly among its tied largest entries."""
    best = max(v for v, _ in window)
    ties = [place for v, place in window if v == best]
    return [(g / len(ties), place) for place in ties]


def _maxpool_words():
    """The words of each slip of :func:`_maxpool_row`, by the mistake's name."""
    return {
        "sent to every entry": "Max pooling does not send \u0232 to every entry of its window: only the largest "
        "one gets it.",
        "split among ties": "Among tied entries the whole gradient goes to the first in reading order (as "
        "PyTorch's max_pool2d); torch.amax would split it.",
        "the last of the ties": "Among tied entries the first, in reading order, wins, not the last.",
        "the largest value sent": "That sends the window's largest value, the forward output; the largest entry "
        "gets the window's \u0232 entry, its gradient.",
    }


def _maxpool_row(d, at):
    """Row ``d["row"]`` of X̄, each window's Ȳ entry routed by hand to its winner, with the slips of each step."""
    said = _maxpool_words()
    x_rows, y_bar, row = d["X"], d["Y_bar"], d["row"]
    windows = [
        [[(x_rows[2 * p + a][2 * q + b], (2 * p + a, 2 * q + b)) for a in range(2) for b in range(2)] for q in range(2)]
        for p in range(2)
    ]
    rules = {
        said["sent to every entry"]: lambda w, g: [(g, place) for _, place in w],
        said["split among ties"]: _split,
        said["the last of the ties"]: lambda w, g: [(g, _winner(w, first=False))],
    }
    # choose() calls a slip's result: each rule is wrapped in a function that returns it
    rule = at.choose(
        "where a window's \u0232 goes", lambda w, g: [(g, _winner(w))], {k: lambda r=r: r for k, r in rules.items()}
    )
    largest = [[max(v for v, _ in window) for window in line] for line in windows]
    sent = at.choose("what a window sends", y_bar, {said["the largest value sent"]: largest})
    return _sent(windows, sent, row, rule)


def _maxpool(rng, level):
    values = tuple(range(1, 10)) if level == 1 else (1, 2, 3)
    x_rows = [[float(rng.choice(values)) for _ in range(4)] for _ in range(4)]
    y_bar = grid(rng, 2, 2, UPSTREAM)
    x = [[Value(v) for v in row] for row in x_rows]
    windows = [
        [[(x_rows[2 * p + a][2 * q + b], (2 * p + a, 2 * q + b)) for a in range(2) for b in range(2)] for q in range(2)]
        for p in range(2)
    ]
    routed = [[x[r][c] for r, c in (_winner(windows[p][q]) for q in range(2))] for p in range(2)]
    weighted_sum(y_bar, routed).backward()
    row = rng.randrange(4)
    answer = [x[row][c].grad for c in range(4)]
    instance = {"X": x_rows, "Y_bar": y_bar, "row": row}
    mistakes = derived(_maxpool_row, instance, {words: name for name, words in _maxpool_words().items()})
    winners = "; ".join(
        f"window ({p + 1}, {q + 1}) \u2192 X[{_winner(windows[p][q])[0] + 1}, {_winner(windows[p][q])[1] + 1}]"
        for p in range(2)
        for q in range(2)
    )
    return Problem(
        "maxpool",
        "Y is the 2\u00d72 max pooling of the 4\u00d74 image X (non-overlapping windows, stride 2; among "
        "tied entries the first in reading order wins; rows and columns counted from 1). Given \u0232 = "
        f"\u2202L/\u2202Y, what is row {row + 1} of X{BAR} = \u2202L/\u2202X? Give its 4 entries.",
        [matrix_text("X", x_rows), matrix_text("\u0232", y_bar)],
        answer,
        [
            "Each window sends its \u0232 entry to its largest entry, and nothing to the others.",
            "Where entries tie for the largest, the first in reading order takes it all.",
        ],
        [f"The winners: {winners}.", f"Row {row + 1} of X{BAR}: {', '.join(number_text(v) for v in answer)}."],
        mistakes,
        form="numbers",
        entries=[f"X{BAR}[{row + 1}, {c + 1}]" for c in range(4)],
        words="The arrays, row by row (rows separated by ;):",
        data={"X": x_rows, "Y_bar": y_bar, "row": row},
    )


@drill("embedding", "layers", "an embedding's gradient", {1: "each token once", 2: "a token repeats"}, "numbers")
def embedding(level, seed):
    """One row of Ē for Y[i] = E[t_i], three tokens; one repeats at level 2."""
    rng = random.Random(f"chainrule-drill-embedding:{level}:{seed}")
    return distinct(lambda: _embedding(rng, level))


def _embedding_words(token):
    """The words of each slip of :func:`_embedding_row`, by the mistake's name."""
    return {
        "E's row": f"That is row {token} of E itself, the forward value, not its gradient.",
        "written over": "That keeps only the last use: a row used twice gets the sum of both "
        "gradients (added, not written over).",
        "the first use only": "That is the first use only: every use of the row adds its gradient.",
        "a mean": "That is a mean: the uses' gradients add up.",
        "every example's \u0232": f"That adds every example's row of \u0232: only the examples whose token is "
        f"{token} use row {token} of E.",
    }


def _embedding_row(d, at):
    """Row ``d["token"]`` of Ē, the rows of Ȳ of the examples that use it added by hand, with the slips of
    each step."""
    said = _embedding_words(d["token"])
    y_bar, token = d["Y_bar"], d["token"]
    uses = [i for i, t in enumerate(d["tokens"]) if t == token]
    uses = at.choose("the examples that use it", uses, {said["every example's \u0232"]: list(range(len(y_bar)))})
    rows = [y_bar[i] for i in uses]
    added = [sum(column) for column in zip(*rows, strict=True)]
    kept = {
        said["written over"]: rows[-1],
        said["the first use only"]: rows[0],
        said["a mean"]: [v / len(rows) for v in added],
    }
    added = at.choose("adding the uses", added, kept)
    return at.choose("a gradient, not a value", added, {said["E's row"]: list(d["E"][token])})


def _embedding(rng, level):
    table = grid(rng, 4, 2, PIXELS)
    tokens = rng.sample(range(4), 3) if level == 1 else [rng.randrange(4) for _ in range(3)]
    if level == 2 and len(set(tokens)) == 3:
        tokens[2] = tokens[0]
    y_bar = grid(rng, 3, 2, UPSTREAM)
    e = [[Value(v) for v in row] for row in table]
    weighted_sum(y_bar, [e[t] for t in tokens]).backward()
    repeated = [t for t in tokens if tokens.count(t) > 1]
    token = repeated[0] if repeated else rng.choice(tokens)  # level 2 asks about the repeated token
    answer = [v.grad for v in e[token]]
    uses = [i for i, t in enumerate(tokens) if t == token]
    instance = {"E": table, "tokens": tokens, "Y_bar": y_bar, "token": token}
    mistakes = derived(_embedding_row, instance, {words: name for name, words in _embedding_words(token).items()})
    return Problem(
        "embedding",
        f"Y[i] = E[t\u1d62]: example i takes row t\u1d62 of the table E (rows and examples counted from 0, as "
        "Python counts). Given \u0232 = \u2202L/\u2202Y, what is row "
        f"{token} of E{BAR} = \u2202L/\u2202E? Give its 2 entries.",
        [
            f"{matrix_text('E', table)} (rows 0 to 3)",
            f"tokens t = [{', '.join(str(t) for t in tokens)}]",
            f"{matrix_text(chr(0x0232), y_bar)} (one row per example, 0 to 2)",
        ],
        answer,
        [
            f"Which examples use row {token}?",
            f"Row {token} is used by example(s) {', '.join(str(i) for i in uses)}: add their rows of \u0232.",
        ],
        [
            f"Row {token} of E is used by example(s) {', '.join(str(i) for i in uses)}.",
            f"E{BAR}[{token}] = the sum of those rows of \u0232 = {list_text(answer)}.",
        ],
        mistakes,
        form="numbers",
        entries=[f"entry {c + 1} of E{BAR}'s row {token}" for c in range(2)],
        words="The table, the tokens and the gradient (rows separated by ;):",
        data={"E": table, "tokens": tokens, "Y_bar": y_bar, "token": token},
    )

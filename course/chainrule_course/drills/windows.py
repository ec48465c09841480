"""The layers chapter's drills: a convolution's gradients, where max pooling routes, an embedding's rows.

Each image, kernel and table is a few scalar :class:`~chainrule.value.Value` s, and each
answer is the ``.grad`` that ``backward()`` stores, for L = Σ Ȳ ⊙ Y with Ȳ given:

* ``conv``: an entry of K̄ (level 1) or X̄ (level 2) for Y = X ⋆ K, a 3×3 image and a 2×2
  kernel, stride 1, no padding (the chapter's sum over windows). Named mistakes: the
  kernel flipped, one term of the sum, K read for X.
* ``maxpool``: the gradient of one row of a 4×4 image under 2×2 max pooling; each
  window's Ȳ goes to its largest entry, the first in reading order among ties, as
  PyTorch's ``max_pool2d`` and ``chainrule``'s route it. Named mistakes: Ȳ sent to every
  entry of the window, split among ties, or given to the last of them.
* ``embedding``: the gradient of one row of an embedding table E, with tokens that may
  repeat. Named mistakes: only the last use kept (written over, not added), only the
  first, the mean of the uses.
"""

import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import Mistake, Problem, distinct, grid, list_text, matrix_text, weighted_sum

__all__ = ["conv", "embedding", "maxpool"]

PIXELS = (-2.0, -1.0, 1.0, 2.0, 3.0)
UPSTREAM = (-1.0, -0.5, 0.5, 1.0, 2.0)
BAR = "\u0304"


def conv(level, seed):
    """An entry of K̄ (level 1) or X̄ (level 2) for a 3×3 image and a 2×2 kernel."""
    rng = random.Random(f"chainrule-drill-conv:{level}:{seed}")
    return distinct(lambda: _conv(rng, level))


def _conv(rng, level):
    x_rows, k_rows, y_bar = grid(rng, 3, 3, PIXELS), grid(rng, 2, 2, PIXELS), grid(rng, 2, 2, UPSTREAM)
    x, k = [[Value(v) for v in row] for row in x_rows], [[Value(v) for v in row] for row in k_rows]
    y = [[sum(x[i + a][j + b] * k[a][b] for a in range(2) for b in range(2)) for j in range(2)] for i in range(2)]
    weighted_sum(y_bar, y).backward()
    if level == 1:
        a, b = rng.randrange(2), rng.randrange(2)
        answer, entry = k[a][b].grad, f"K{BAR}[{a + 1}, {b + 1}]"
        terms = [(y_bar[i][j], x_rows[i + a][j + b]) for i in range(2) for j in range(2)]
        flipped = sum(y_bar[i][j] * x_rows[i + 1 - a][j + 1 - b] for i in range(2) for j in range(2))
        rule = f"K{BAR}[a, b] = \u03a3\u1d62\u2c7c \u0232[i, j]\u00b7X[i + a \u2212 1, j + b \u2212 1]"
        other = Mistake(
            sum(y_bar[i][j] * k_rows[a][b] for i in range(2) for j in range(2)),
            "That multiplies \u0232 by K. A kernel entry's gradient reads the image: "
            "X[i + a \u2212 1, j + b \u2212 1] at each position.",
            "K for X",
        )
    else:
        u, v = rng.randrange(3), rng.randrange(3)
        answer, entry = x[u][v].grad, f"X{BAR}[{u + 1}, {v + 1}]"
        offsets = [(a, b) for a in range(2) for b in range(2) if 0 <= u - a < 2 and 0 <= v - b < 2]
        terms = [(y_bar[u - a][v - b], k_rows[a][b]) for a, b in offsets]
        flipped = sum(y_bar[u - a][v - b] * k_rows[1 - a][1 - b] for a, b in offsets)
        rule = (
            f"X{BAR}[u, v] = \u03a3 \u0232[u \u2212 a + 1, v \u2212 b + 1]\u00b7K[a, b] over the windows "
            "that hold (u, v)"
        )
        other = Mistake(
            sum(y_bar[u - a][v - b] * x_rows[u][v] for a, b in offsets),
            "That multiplies \u0232 by X. An image entry's gradient reads the kernel: "
            "K[a, b] at each window that holds it.",
            "X for K",
        )
    products = " + ".join(f"{factor_text(p)}\u00b7{factor_text(q)}" for p, q in terms)
    mistakes = [
        Mistake(
            flipped,
            "That flips the kernel. The layer is a correlation (no flip): entry (a, b) of K meets "
            "X[i + a \u2212 1, j + b \u2212 1].",
            "the kernel flipped",
        ),
        Mistake(
            terms[0][0] * terms[0][1],
            f"That is one term: {entry} sums over every position it takes part in.",
            "one term of the sum",
        ),
        other,
    ]
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
        data={"X": x_rows, "K": k_rows, "Y_bar": y_bar, "of": "K" if level == 1 else "X", "entry": entry},
    )


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

    def sent(rule):
        return _sent(windows, y_bar, row, rule)

    mistakes = [
        Mistake(
            sent(lambda w, g: [(g, place) for _, place in w]),
            "Max pooling does not send \u0232 to every entry of its window: only the largest one gets it.",
            "sent to every entry",
        ),
    ]
    if sent(_split) != answer:  # a window of this row has tied winners
        mistakes += [
            Mistake(
                sent(_split),
                "Among tied entries the whole gradient goes to the first in reading order (as "
                "PyTorch's max_pool2d); torch.amax would split it.",
                "split among ties",
            ),
            Mistake(
                sent(lambda w, g: [(g, _winner(w, first=False))]),
                "Among tied entries the first, in reading order, wins, not the last.",
                "the last of the ties",
            ),
        ]
    winners = "; ".join(
        f"window ({p + 1}, {q + 1}) \u2192 X[{_winner(windows[p][q])[0] + 1}, {_winner(windows[p][q])[1] + 1}]"
        for p in range(2)
        for q in range(2)
    )
    return Problem(
        "maxpool",
        "Y is the 2\u00d72 max pooling of the 4\u00d74 image X (non-overlapping windows, stride 2; among "
        "tied entries the first in reading order wins). Given \u0232 = "
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


def embedding(level, seed):
    """One row of Ē for Y[i] = E[t_i], three tokens; one repeats at level 2."""
    rng = random.Random(f"chainrule-drill-embedding:{level}:{seed}")
    return distinct(lambda: _embedding(rng, level))


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
    mistakes = [
        Mistake(list(table[token]), f"That is row {token} of E itself, the forward value, not its gradient.", "E's row")
    ]
    if len(uses) > 1:
        mistakes += [
            Mistake(
                list(y_bar[uses[-1]]),
                "That keeps only the last use: a row used twice gets the sum of both "
                "gradients (added, not written over).",
                "written over",
            ),
            Mistake(
                list(y_bar[uses[0]]),
                "That is the first use only: every use of the row adds its gradient.",
                "the first use only",
            ),
            Mistake(
                [sum(y_bar[i][c] for i in uses) / len(uses) for c in range(2)],
                "That is a mean: the uses' gradients add up.",
                "a mean",
            ),
        ]
    return Problem(
        "embedding",
        f"Y[i] = E[t\u1d62]: example i takes row t\u1d62 of the table E. Given \u0232 = \u2202L/\u2202Y, what is row "
        f"{token} of E{BAR} = \u2202L/\u2202E? Give its 2 entries.",
        [
            f"{matrix_text('E', table)} (rows 0 to 3)",
            f"tokens t = [{', '.join(str(t) for t in tokens)}]",
            matrix_text("\u0232", y_bar),
        ],
        answer,
        [
            f"Which examples use row {token}?",
            f"Row {token} is used by example(s) {', '.join(str(i + 1) for i in uses)}: add their rows of \u0232.",
        ],
        [
            f"Row {token} of E is used by example(s) {', '.join(str(i + 1) for i in uses)}.",
            f"E{BAR}[{token}] = the sum of those rows of \u0232 = {list_text(answer)}.",
        ],
        mistakes,
        form="numbers",
        entries=[f"entry {c + 1} of E{BAR}'s row {token}" for c in range(2)],
        words="The table, the tokens and the gradient (rows separated by ;):",
        data={"E": table, "tokens": tokens, "Y_bar": y_bar, "token": token},
    )

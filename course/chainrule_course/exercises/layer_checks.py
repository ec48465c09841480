"""The checks of the exercises on layers after the MLP: convolution, embedding, recurrence.

A convolution's backward pass in numpy and an embedding's (layers), and backpropagation
through two steps of a tanh recurrent cell (sequences). The right answer comes from
``chainrule``'s own backward pass; the mistakes are the slips of a reference derivation
(:mod:`chainrule_course.exercises.mistakes`), named only when one fits every problem a check
tried. Like :mod:`chainrule_course.exercises.gradient_checks` they load numpy, and
:mod:`chainrule_course.exercises.feedback` loads them the first time a check cell asks for one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from chainrule.functional import conv2d, embedding
from chainrule.tensor import Tensor

from ..grading.contract import allowed, seeded
from .answers import AnswerError, check_array
from .array_checks import same
from .calling import call
from .mistakes import Derivation, Slips

SIGN = "the sign is flipped"
COUNTS = {2: "two", 3: "three", 7: "seven"}

# --------------------------------------------------------------------------- calling on every problem


class Raised:
    """A call that raised on a problem after the first: its error is raised when that problem's turn comes,
    after the problems before it are checked, as when each problem was called and checked in turn."""

    def __init__(self, error: AnswerError):
        self.error = error


#: What a variant gives on a problem where its numpy raises (a sum without keepdims that broadcasts only
#: when n = q): it matches an answer that raised there too.
RAISES = "raises"


def guarded(derive: Callable) -> Callable:
    """``derive``, giving :data:`RAISES` where a slip makes numpy raise."""

    def run(problem, at: Slips):
        try:
            return derive(problem, at)
        except ValueError:
            return RAISES

    return run


def either(same: Callable) -> Callable:
    """``same``, where a :class:`Raised` answer matches a variant that raises, and nothing else."""

    def compare(answer, result) -> bool:
        raised = isinstance(answer, Raised) or answer is RAISES
        if raised or result is RAISES:
            return raised and result is RAISES
        return same(answer, result)

    return compare


def tried(
    name: str, function: Callable, calls: Sequence[tuple], names: Sequence[str], returns: Sequence[str] = ()
) -> list:
    """``function``'s result on each of ``calls`` (its arguments): a tuple of arrays, one per name of ``returns``,
    when it has names. An error on the first call raises at once; on a later one it is kept (:class:`Raised`),
    so that the problems before it are checked first, and the mistake named from all of them."""
    received = []
    for index, arguments in enumerate(calls):
        try:
            result = call(name, function, *arguments, names=names)
            if returns and (not isinstance(result, (tuple, list)) or len(result) != len(returns)):
                got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
                wanted = f"{COUNTS[len(returns)]} arrays ({', '.join(returns)})"
                raise AnswerError(name, f"{name} should return {wanted}, not {got}.")
            received.append(tuple(result) if returns else result)
        except AnswerError as error:
            if index == 0:
                raise
            received.append(Raised(error))
    return received


def _pads(padding: int) -> tuple:
    return ((0, 0), (0, 0), (padding, padding), (padding, padding))


# --------------------------------------------------------------------------- a convolution (layers)

NOT_FLIPPED = (
    "the kernel's flip is wrong: written as a correlation of the padded y_bar, the input's gradient uses the kernel "
    "flipped in both axes; written as loops, each y_bar entry goes back through the window it read, unflipped"
)
PADDED = "it is the gradient of the padded input: remove `padding` rows and columns from each side"
NO_STRIDE = (
    "the stride is left out: the windows are `stride` apart, so spread y_bar out with stride - 1 zero(s) "
    "between its entries"
)
SWAP = (1, 0, 2, 3)  # the batch and the channels trade places


def correlate(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each window of ``a`` times each filter of ``w``, summed over the channels: (n, c, H, W), (f, c, k, k)
    -> (n, f, H - k + 1, W - k + 1)."""
    windows = np.lib.stride_tricks.sliding_window_view(a, w.shape[-2:], axis=(2, 3))
    return np.einsum("ncijab,fcab->nfij", windows, w)


def _spread(y_bar: np.ndarray, step: int, side: int) -> np.ndarray:
    """y_bar with ``step - 1`` zeros between its entries, in a (side, side) grid: the gradient of a stride-1
    convolution whose windows ``step`` apart are the strided one's."""
    spread = np.zeros((*y_bar.shape[:2], side, side))
    out = y_bar.shape[-1]
    spread[:, :, : (out - 1) * step + 1 : step, : (out - 1) * step + 1 : step] = y_bar
    return spread


def conv_derivation(p: dict, at: Slips):
    """(x_bar, w_bar) of conv2d, derived through a stride-1 convolution of the padded input, with the slips of
    each step."""
    x, w, y_bar, stride, padding = p["x"], p["w"], p["y_bar"], p["stride"], p["padding"]
    size, x_pad = w.shape[-1], np.pad(x, _pads(padding))
    side = x_pad.shape[-1]
    spread, packed = _spread(y_bar, stride, side - size + 1), _spread(y_bar, 1, side - size + 1)
    for_x, for_w = at.choose(
        "the stride",
        (spread, spread),
        {
            NO_STRIDE: (packed, spread),
            "w_bar leaves the stride out: its windows of x are `stride` apart, not 1": (spread, packed),
            "the stride is left out of both gradients: the windows are `stride` apart": (packed, packed),
        },
    )
    w_bar = correlate(x_pad.transpose(SWAP), for_w.transpose(SWAP)).transpose(SWAP)
    w_bar = at.choose(
        "w_bar's axes",
        w_bar,
        {
            "w_bar is flipped: correlate x with y_bar, not y_bar with x": w_bar[:, :, ::-1, ::-1],
            "w_bar's first two axes are swapped: it is (c, f, k, k), but w is (f, c, k, k)": w_bar.transpose(SWAP),
        },
    )
    w_bar = at.factor(
        "w_bar's sum", w_bar, 1, {"w_bar is averaged over the batch (÷n); the batch's terms add": 1 / len(x)}
    )
    kernel = at.choose("the kernel's flip", w[:, :, ::-1, ::-1], {NOT_FLIPPED: w})
    edge = size - 1
    full = correlate(np.pad(for_x, _pads(edge)), kernel.transpose(SWAP))  # the padded input's gradient
    x_bar = at.choose("the padding", full[:, :, padding : side - padding, padding : side - padding], {PADDED: full})
    x_bar = at.factor(
        "x_bar's scale",
        x_bar,
        1,
        {"x_bar is multiplied by the stride, which spaces the windows but scales nothing": stride},
    )
    x_bar = at.choose(
        "x_bar's axes",
        x_bar,
        {"x_bar's rows and columns are swapped (its last two axes transposed)": lambda: x_bar.transpose(0, 1, 3, 2)},
    )
    x_bar, w_bar = at.choose(
        "signs",
        (x_bar, w_bar),
        {
            SIGN: (-x_bar, -w_bar),
            "the sign of x_bar is flipped": (-x_bar, w_bar),
            "the sign of w_bar is flipped": (x_bar, -w_bar),
        },
    )
    return at.swap("(x_bar, w_bar)", x_bar, w_bar)


CONV = Derivation(conv_derivation)


def conv_problem(seed: int, index: int) -> dict:
    """x, w, y_bar, stride and padding of one call: stride 1 without padding, stride 2 with padding 1, then
    stride 3 with padding 2 and a kernel of 2, whose windows leave rows between them and at the end unread."""
    rng = np.random.default_rng(seeded(seed) * 2 + index)
    if seed == 0:
        n, c, side, f, size = ((2, 3, 6, 4, 3), (2, 2, 7, 3, 3), (3, 1, 8, 2, 2))[index]
    else:
        n, c, f = (int(v) for v in rng.integers(1, 4, size=3))
        side, size = int(rng.integers(6, 9)), 2 if index == 2 else int(rng.choice([2, 3]))
    stride, padding = ((1, 0), (2, 1), (3, 2))[index]
    x, w = rng.normal(size=(n, c, side, side)), rng.normal(size=(f, c, size, size))
    out = (side + 2 * padding - size) // stride + 1
    return {"x": x, "w": w, "y_bar": rng.normal(size=(n, f, out, out)), "stride": stride, "padding": padding}


@allowed("numpy")
def check_conv2d_backward(conv2d_backward: Callable, seed: int = 0) -> None:
    """``conv2d_backward(x, w, y_bar, stride, padding)`` must return (x_bar, w_bar) of
    ``conv2d(x, w, stride=stride, padding=padding)``, on three problems: stride 1 without padding, stride 2
    with padding 1, stride 3 with padding 2."""
    name, keys = "conv2d_backward", ("x", "w", "y_bar", "stride", "padding")
    problems = [conv_problem(seed, index) for index in range(3)]
    calls = [tuple(p[key] for key in keys) for p in problems]
    received = tried(name, conv2d_backward, calls, keys, ("x_bar", "w_bar"))
    mistake = CONV.mistake(problems, received, either(same))
    for index, (p, got) in enumerate(zip(problems, received, strict=True)):
        if isinstance(got, Raised):
            raise got.error
        xt, wt = Tensor(p["x"].copy(), requires_grad=True), Tensor(p["w"].copy(), requires_grad=True)
        conv2d(xt, wt, stride=p["stride"], padding=p["padding"]).backward(gradient=p["y_bar"])
        where = (
            f"for x of shape {p['x'].shape}, w of shape {p['w'].shape}, stride {p['stride']}, padding {p['padding']}"
        )
        for part, (label, expected) in enumerate((("x_bar", xt.grad), ("w_bar", wt.grad))):
            found = mistake.on(index, part) if mistake else []
            check_array(f"{label} {where}", got[part], expected, found, guess=False)


# --------------------------------------------------------------------------- an embedding (layers)


AVERAGED = "the gradient is averaged over all the tokens (a mean for a sum): each token's y_bar is added as it is"


def embedding_derivation(p: dict, at: Slips):
    """The table's gradient: each token's y_bar added into its row, with the slips of each step."""
    tokens, y_bar, rows = p["tokens"], p["y_bar"], p["rows"]
    flat, grads = tokens.reshape(-1), y_bar.reshape(-1, y_bar.shape[-1])
    index = at.choose("the rows", flat, {"the rows are shifted by one: token t picks row t, not row t - 1": flat - 1})
    E_bar = np.zeros((rows, grads.shape[1]))
    np.add.at(E_bar, index, grads)
    assigned = np.zeros_like(E_bar)
    assigned[index] = grads
    counts = np.zeros((rows, 1))
    np.add.at(counts, index, 1.0)
    E_bar = at.choose(
        "the repeats",
        E_bar,
        {
            "a repeated token keeps only one of its gradients: E_bar[tokens] = y_bar assigns, use np.add.at, "
            "which adds": assigned,
            "each row is the mean of its gradients, not their sum": E_bar / np.maximum(counts, 1.0),
            AVERAGED: E_bar / flat.size,
        },
    )
    used = "the gradient has tokens.max() + 1 rows, but the table has `rows`: the rows no token picks get zeros"
    E_bar = at.choose("the table's rows", E_bar, {used: E_bar[: flat.max() + 1]})
    return at.transpose("the table's gradient", at.sign("the table's gradient", E_bar))


EMBEDDING = Derivation(embedding_derivation)


def embedding_problems(seed: int) -> list[dict]:
    """Tokens of one dimension, then of two, with a repeated token both times and the table's last row unused."""
    rng = np.random.default_rng(seeded(seed))
    problems = []
    for shape in ((6,), (2, 5)) if seed == 0 else ((int(rng.integers(5, 9)),), (3, int(rng.integers(3, 6)))):
        rows, d = int(rng.integers(4, 7)), int(rng.integers(2, 5))
        tokens = rng.integers(0, rows - 1, size=shape)
        tokens.flat[-1] = tokens.flat[0]  # a repeat, whatever the draw
        problems.append({"tokens": tokens, "y_bar": rng.normal(size=(*shape, d)), "rows": rows})
    return problems


@allowed("numpy")
def check_embedding_grad(embedding_grad: Callable, seed: int = 0) -> None:
    """``embedding_grad(tokens, y_bar, rows)`` must return the table's gradient, (rows, d):
    tokens are 1-D, then 2-D, with repeated tokens both times."""
    name, keys = "embedding_grad", ("tokens", "y_bar", "rows")
    problems = embedding_problems(seed)
    received = tried(name, embedding_grad, [tuple(p[key] for key in keys) for p in problems], keys)
    mistake = EMBEDDING.mistake(problems, received, either(same))
    for index, (p, got) in enumerate(zip(problems, received, strict=True)):
        if isinstance(got, Raised):
            raise got.error
        rows, d = p["rows"], p["y_bar"].shape[-1]
        table = Tensor(np.zeros((rows, d)), requires_grad=True)
        embedding(p["tokens"], table).backward(gradient=p["y_bar"])
        where = f"the table's gradient for tokens of shape {p['tokens'].shape} (rows = {rows}, d = {d})"
        check_array(where, got, table.grad, mistake.on(index) if mistake else [], guess=False)


# --------------------------------------------------------------------------- two steps of a tanh cell (sequences)

ONLY_LAST = "only step 2's term: the gradient must also go back through h1 to step 1"
RNN_ARGUMENTS = ("x1", "x2", "W_x", "W_h", "b", "h2_bar")
RNN_RESULTS = ("W_x_bar", "W_h_bar", "b_bar")


def _tanh_slopes(at: Slips, h1, z1, h2, z2) -> tuple:
    """tanh′ at steps 1 and 2, 1 − h², with its neighbours' slips: at the pre-activation, or sigmoid′."""
    right = (1 - h1 * h1, 1 - h2 * h2)
    slips = {}
    for said, (at_1, at_2) in (
        ("tanh′ is taken at the pre-activation, 1 - z², but tanh′(z) = 1 - tanh(z)² = 1 - h²", (1 - z1**2, 1 - z2**2)),
        ("sigmoid′, h(1 - h), is used for tanh′ = 1 - h²", (h1 * (1 - h1), h2 * (1 - h2))),
    ):
        slips[f"{said}, at both steps"] = (at_1, at_2)
        slips[f"{said}, at step 1"] = (at_1, right[1])
        slips[f"{said}, at step 2"] = (right[0], at_2)
    return at.choose("tanh′", right, slips)


def rnn_derivation(p: dict, at: Slips):
    """(W_x_bar, W_h_bar, b_bar) of two steps of a tanh cell from h0 = 0, with the slips of each step."""
    x1, x2, W_x, W_h, b, h2_bar = (p[key] for key in RNN_ARGUMENTS)
    b1, b2 = at.choose(
        "the bias in the forward pass",
        (b, b),
        {
            "b is left out of step 1's pre-activation: h1 = tanh(x1 W_xᵀ + b)": (0.0, b),
            "b is left out of step 2's pre-activation: h2 = tanh(x2 W_xᵀ + h1 W_hᵀ + b)": (b, 0.0),
            "b is left out of the forward pass: both steps add it": (0.0, 0.0),
        },
    )
    z1 = x1 @ W_x.T + b1
    h1 = np.tanh(z1)
    z2 = x2 @ W_x.T + h1 @ W_h.T + b2
    h2 = np.tanh(z2)
    slope_1, slope_2 = _tanh_slopes(at, h1, z1, h2, z2)
    z2_bar = h2_bar * at.choose("tanh′ at step 2", slope_2, {"tanh's derivative at step 2, 1 - h2**2, is missing": 1.0})
    h1_bar = at.choose(
        "h1's gradient",
        z2_bar @ W_h,
        {ONLY_LAST: 0.0 * h1, "h1's gradient is z2_bar W_h, not z2_bar W_hᵀ (z2 adds h1 W_hᵀ)": lambda: z2_bar @ W_h.T},
    )
    z1_bar = h1_bar * at.choose("tanh′ at step 1", slope_1, {"tanh's derivative at step 1, 1 - h1**2, is missing": 1.0})
    step_1 = at.choose(
        "step 1's input", z1_bar.T @ x1, {"step 1's term multiplies by x2; step 1's input is x1": lambda: z1_bar.T @ x2}
    )
    state = at.choose("the state before step 2", h1, {"it multiplies by h2; W_h multiplies h1, the state before": h2})
    h0_term = at.choose(
        "the state before step 1",
        0.0,
        {
            "W_h_bar has a step-1 term z1_barᵀ h1, but the state before step 1 is h0 = 0: it adds nothing": lambda: (
                z1_bar.T @ h1
            ),
            "W_h_bar has a step-1 term z1_barᵀ h2 (H[t - 1] at t = 0 is the last state), but the state before "
            "step 1 is h0 = 0: it adds nothing": lambda: z1_bar.T @ h2,
        },
    )
    b_bar = z2_bar.sum(axis=0) + at.choose(
        "b at step 1", z1_bar.sum(axis=0), {"b_bar leaves out step 1's term: b is added at both steps": 0.0}
    )
    b_bar = at.choose(
        "b_bar's sum",
        b_bar,
        {
            "b_bar is averaged over the batch (a mean for a sum): a broadcast bias sums its gradient": b_bar / len(x1),
            "b_bar is not summed over the batch (one row per example)": lambda: z2_bar + z1_bar,
        },
    )
    grads = (z2_bar.T @ x2 + step_1, z2_bar.T @ state + h0_term, b_bar)
    grads = at.choose("signs", grads, {SIGN: lambda: tuple(-g for g in grads)})
    W_x_bar, W_h_bar = at.swap(
        "(W_x_bar, W_h_bar)", at.transpose("W_x_bar", grads[0]), at.transpose("W_h_bar", grads[1])
    )
    return W_x_bar, W_h_bar, grads[2]


RNN = Derivation(rnn_derivation)


def rnn_problems(seed: int) -> list[dict]:
    """Two problems of different sizes (n, d, d_h), d < d_h in the first and d > d_h in the second."""
    rng = np.random.default_rng(seeded(seed))
    sizes = ((3, 2, 4), (5, 4, 3))
    if seed:
        n, small, large = (int(v) for v in rng.choice(np.arange(2, 8), size=3, replace=False))
        sizes = ((n, min(small, large), max(small, large)), (n + 2, max(small, large), min(small, large)))
    problems = []
    for n, d, d_h in sizes:
        x1, x2, h2_bar = rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, d_h))
        W_x, W_h, b = rng.normal(size=(d_h, d)), rng.normal(size=(d_h, d_h)) / 2, rng.normal(size=d_h) / 2
        problems.append(dict(zip(RNN_ARGUMENTS, (x1, x2, W_x, W_h, b, h2_bar), strict=True)))
    return problems


@allowed("numpy")
def check_rnn_two_step_grads(rnn_two_step_grads: Callable, seed: int = 0) -> None:
    """``rnn_two_step_grads(x1, x2, W_x, W_h, b, h2_bar)`` must return (W_x_bar, W_h_bar, b_bar) of
    a loss whose gradient at h2 is h2_bar, with h0 = 0, on two sizes (n, d, d_h)."""
    name = "rnn_two_step_grads"
    problems = rnn_problems(seed)
    calls = [tuple(p[key] for key in RNN_ARGUMENTS) for p in problems]
    received = tried(name, rnn_two_step_grads, calls, RNN_ARGUMENTS, RNN_RESULTS)
    mistake = RNN.mistake(problems, received, either(same))
    for index, (p, got) in enumerate(zip(problems, received, strict=True)):
        if isinstance(got, Raised):
            raise got.error
        params = [Tensor(p[key].copy(), requires_grad=True) for key in ("W_x", "W_h", "b")]
        h1 = (Tensor(p["x1"]) @ params[0].T + params[2]).tanh()
        (Tensor(p["x2"]) @ params[0].T + h1 @ params[1].T + params[2]).tanh().backward(gradient=p["h2_bar"])
        (n, d), d_h = p["x1"].shape, len(p["b"])
        for part, label in enumerate(RNN_RESULTS):
            found = mistake.on(index, part) if mistake else []
            check_array(f"{label} for n = {n}, d = {d}, d_h = {d_h}", got[part], params[part].grad, found, guess=False)

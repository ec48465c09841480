"""The sequences chapter's drills: backpropagation through time, and an entry of softmax's Jacobian.

Both are built from scalar :class:`~chainrule.value.Value` s and answered by ``backward()``:

* ``bptt``: ∂L/∂w for a scalar recurrent cell h_t = tanh(w·h_{t−1} + u·x_t) from a given h_0, over
  T = 2 (level 1) or 3 (level 2) steps, with L = h_T. The weight is shared by every step, so
  its gradient adds one term per step. Named mistakes: the last step's term alone
  (truncated to one step), the tanh′ factors left out or taken at the pre-activation, hₜ for
  hₜ₋₁ (an index shifted), the w of each step back left out.
* ``jacobian``: an entry ∂p_i/∂s_j of diag(p) − ppᵀ for p = softmax(s), three scores.
  Named mistakes: the diagonal's formula off the diagonal, the off-diagonal's on it, p_i
  alone or left out, the sign, the scores for p, pⱼ for pᵢ.

Each answer is also written as a derivation whose steps offer these slips (:func:`_bptt_sum`,
:func:`_jacobian_entry`): the mistakes are generated from it (:func:`~.problems.derived`), and a
wrong answer is named only when one slip alone gives it.
"""

import math
import random

from chainrule.value import Value

from .graphs import number_text
from .problems import Problem, derived, distinct, list_text, softmax_of
from .registry import drill

__all__ = ["bptt", "jacobian"]

WEIGHTS = (-1.0, -0.5, 0.5, 1.0, 1.5)
INPUTS = (-1.0, -0.5, 0.5, 1.0, 2.0)
STARTS = (-0.5, 0.5, 1.0)
SUBSCRIPTS = "\u2080\u2081\u2082\u2083"


@drill("bptt", "sequences", "backpropagation through time", {1: "two steps", 2: "three steps"}, "number")
def bptt(level, seed):
    """∂h_T/∂w for a scalar tanh RNN over T = 2 or 3 steps."""
    rng = random.Random(f"chainrule-drill-bptt:{level}:{seed}")
    return distinct(lambda: _bptt(rng, level))


def _run(w_value, u_value, xs, h0):
    """The cell run over ``xs`` from ``h0`` with Values for w and u: the states h_1 ... h_T."""
    h, states = Value(h0), []
    for x in xs:
        h = (w_value * h + u_value * x).tanh()
        states.append(h)
    return states


def _bptt_words(steps):
    """The words of each slip of :func:`_bptt_sum`, by the mistake's name."""
    return {
        "the last step alone": f"That is step {steps}'s own term: w is used at every step, and each use adds its "
        "term through the steps after it.",
        "tanh\u2032 left out": "Every step's tanh multiplies the gradient by 1 \u2212 h\u209c\u00b2: those factors "
        "are missing.",
        "tanh\u2032 at the pre-activation": "That takes 1 \u2212 a\u209c\u00b2 at the pre-activation "
        "a\u209c = w\u00b7h\u209c\u208b\u2081 + u\u00b7x\u209c: tanh\u2032(a\u209c) = 1 \u2212 h\u209c\u00b2, "
        "read at the output h\u209c = tanh(a\u209c).",
        "h\u209c for h\u209c\u208b\u2081": "Step t's own term multiplies by h\u209c\u208b\u2081, the state w meets "
        "at that step, not by h\u209c: the index is shifted by one.",
        "the w's left out": "Going back through a step multiplies by w as well as by 1 \u2212 h\u209c\u00b2: "
        "the w's are missing.",
    }


def _bptt_sum(d, at):
    """∂h_T/∂w = Σₜ hₜ₋₁·(1 − hₜ²)·Π_{k>t} w·(1 − hₖ²), derived by hand from the states ``d["h"]``
    (h₀ first) and the pre-activations ``d["pre"]``, with the slips of each step."""
    said = _bptt_words(len(d["pre"]))
    hs, steps = d["h"], len(d["pre"])
    slopes = at.choose(
        "tanh\u2032",
        [1.0 - h * h for h in hs[1:]],
        {
            said["tanh\u2032 left out"]: [1.0] * steps,
            said["tanh\u2032 at the pre-activation"]: [1.0 - a * a for a in d["pre"]],
        },
    )
    met = at.choose("the state w meets", hs[:-1], {said["h\u209c for h\u209c\u208b\u2081"]: hs[1:]})
    back = at.choose("a step back", d["w"], {said["the w's left out"]: 1.0})
    terms = [met[t] * slopes[t] * math.prod(back * slopes[k] for k in range(t + 1, steps)) for t in range(steps)]
    return at.choose("the sum over the steps", sum(terms), {said["the last step alone"]: terms[-1]})


def _bptt(rng, level):
    steps = 2 if level == 1 else 3
    w0, u0 = rng.choice(WEIGHTS), rng.choice(WEIGHTS)
    xs = [rng.choice(INPUTS) for _ in range(steps)]
    h0 = rng.choice(STARTS)
    w, u = Value(w0, "w"), Value(u0, "u")
    states = _run(w, u, xs, h0)
    states[-1].backward()
    answer = w.grad
    hs = [h0] + [h.data for h in states]
    slopes = [1.0 - h * h for h in hs[1:]]
    terms = [
        hs[t - 1] * slopes[t - 1] * math.prod(w0 * slopes[k] for k in range(t, steps)) for t in range(1, steps + 1)
    ]
    instance = {"w": w0, "h": hs, "pre": [w0 * hs[t] + u0 * x for t, x in enumerate(xs)]}
    mistakes = derived(_bptt_sum, instance, {words: name for name, words in _bptt_words(steps).items()})
    states_text = ", ".join(f"h{SUBSCRIPTS[t]} = {number_text(hs[t])}" for t in range(1, steps + 1))
    return Problem(
        "bptt",
        f"A recurrent cell h\u209c = tanh(w\u00b7h\u209c\u208b\u2081 + u\u00b7x\u209c) runs from the h\u2080 below for "
        f"{steps} steps, and L = h{SUBSCRIPTS[steps]}. What is \u2202L/\u2202w?",
        [
            f"w = {number_text(w0)}, u = {number_text(u0)}, h\u2080 = {number_text(h0)}",
            f"x = {list_text(xs)}",
            f"forward: {states_text}",
        ],
        answer,
        [
            "w is used at every step: \u2202L/\u2202w adds one term per step t, h\u209c\u208b\u2081 times the factor "
            "from step t to the end.",
            "Going back, each step multiplies by (1 \u2212 h\u209c\u00b2), and by w to reach the step before.",
        ],
        [
            "The factors 1 \u2212 h\u209c\u00b2: " + ", ".join(number_text(s) for s in slopes) + ".",
            "One term per step t: h\u209c\u208b\u2081\u00b7(1 \u2212 h\u209c\u00b2), times "
            "w\u00b7(1 \u2212 h\u00b2) for "
            "each later step: " + ", ".join(number_text(term) for term in terms) + ".",
            f"Summing over the steps: \u2202L/\u2202w = {number_text(answer)}.",
        ],
        mistakes,
        data={"w": w0, "u": u0, "x": xs, "h0": h0},
    )


SCORES = (-1.0, -0.5, 0.0, 0.5, 1.0, 2.0)


@drill(
    "jacobian", "sequences", "an entry of softmax's Jacobian", {1: "on the diagonal", 2: "off the diagonal"}, "number"
)
def jacobian(level, seed):
    """∂p_i/∂s_j for softmax of three scores: on the diagonal (level 1) or anywhere (level 2)."""
    rng = random.Random(f"chainrule-drill-jacobian:{level}:{seed}")
    return distinct(lambda: _jacobian(rng, level))


def _jacobian_words(diagonal):
    """The words of each slip of :func:`_jacobian_entry`, by the mistake's name (on the diagonal or off it)."""
    said = {
        "p\u1d62 alone": "That is p\u1d62 itself, not its derivative.",
        "the scores for p": "That uses the scores s where the rule reads the probabilities p = softmax(s).",
        "p\u1d62 left out": "That is \u03b4\u1d62\u2c7c \u2212 p\u2c7c alone: multiply it by p\u1d62, "
        "\u2202p\u1d62/\u2202s\u2c7c = p\u1d62(\u03b4\u1d62\u2c7c \u2212 p\u2c7c).",
    }
    if diagonal:
        return said | {
            "the off-diagonal rule": "That is \u2212p\u1d62p\u2c7c, the entry off the diagonal. On it, "
            "\u2202p\u1d62/\u2202s\u1d62 = p\u1d62(1 \u2212 p\u1d62).",
            "the sign": "Raising s\u1d62 raises p\u1d62: the entry is +p\u1d62(1 \u2212 p\u1d62).",
        }
    return said | {
        "the diagonal rule": "That is the diagonal's rule. Off the diagonal, "
        "\u2202p\u1d62/\u2202s\u2c7c = \u2212p\u1d62p\u2c7c.",
        "the sign": "Raising s\u2c7c lowers p\u1d62: the entry is \u2212p\u1d62p\u2c7c.",
        "p\u2c7c for p\u1d62": "The factor in front is p\u1d62, the output being differentiated: "
        "\u2202p\u1d62/\u2202s\u2c7c = \u2212p\u1d62p\u2c7c, not \u2212p\u2c7c\u00b2.",
    }


def _jacobian_entry(d, at):
    """∂pᵢ/∂sⱼ = pᵢ(δᵢⱼ − pⱼ), derived by hand from the scores ``d["s"]``, with the slips of each step."""
    i, j = d["i"], d["j"]
    said = _jacobian_words(i == j)
    p = at.choose("p", softmax_of(d["s"]), {said["the scores for p"]: list(d["s"])})
    rule = {said["the off-diagonal rule"]: 0.0} if i == j else {said["the diagonal rule"]: 1.0}
    delta = at.choose("\u03b4\u1d62\u2c7c", 1.0 if i == j else 0.0, rule)
    front = {said["p\u1d62 left out"]: 1.0} | ({} if i == j else {said["p\u2c7c for p\u1d62"]: p[j]})
    entry = at.choose("the factor in front", p[i], front) * (delta - p[j])
    entry = at.choose("the sign", entry, {said["the sign"]: -entry})
    return at.choose("the derivative", entry, {said["p\u1d62 alone"]: p[i]})


def _jacobian(rng, level):
    scores = [rng.choice(SCORES) for _ in range(3)]
    i = rng.randrange(3)
    j = i if level == 1 else rng.choice([k for k in range(3) if k != i])
    s = [Value(v) for v in scores]
    exps = [v.exp() for v in s]
    total = exps[0] + exps[1] + exps[2]
    (exps[i] / total).backward()
    answer = s[j].grad
    p = softmax_of(scores)
    instance = {"s": scores, "i": i, "j": j}
    mistakes = derived(_jacobian_entry, instance, {words: name for name, words in _jacobian_words(i == j).items()})
    sub = "\u2081\u2082\u2083"
    return Problem(
        "jacobian",
        f"p = softmax(s) for the three scores below. What is \u2202p{sub[i]}/\u2202s{sub[j]}, entry "
        f"({i + 1}, {j + 1}) of diag(p) \u2212 pp\u1d40?",
        [f"s = {list_text(scores)}"],
        answer,
        [
            "\u2202p\u1d62/\u2202s\u2c7c = p\u1d62(\u03b4\u1d62\u2c7c \u2212 p\u2c7c), "
            "where \u03b4\u1d62\u2c7c is 1 if "
            "i = j, else 0.",
            f"p = [{', '.join(number_text(round(v, 4)) for v in p)}].",
        ],
        [
            f"p = [{', '.join(number_text(round(v, 4)) for v in p)}].",
            f"\u2202p{sub[i]}/\u2202s{sub[j]} = p{sub[i]}({'1' if i == j else '0'} \u2212 p{sub[j]}) = "
            f"{number_text(answer)}.",
        ],
        mistakes,
        data={"s": scores, "i": i, "j": j},
    )

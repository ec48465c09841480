"""The depth chapter's drills: the factor a gradient gains through layers, and batch norm's backward pass.

Both are built from scalar :class:`~chainrule.value.Value` s and answered by ``backward()``:

* ``chain``: ∂h_k/∂x through k layers h_i = w_i·h_{i−1} (level 1) or h_i = tanh(w_i·h_{i−1})
  (level 2), each layer with its own weight. Named mistakes: a sum of the factors instead of
  their product, one layer short (∂h₃/∂h₁), h₃'s value; at level 2, the weights' product with
  the tanh′ factors left out, the tanh′ factors with the weights left out, tanh′ taken at the
  pre-activation.
* ``batchnorm``: x̄_i for batch normalisation of three numbers, x̂ = (x − μ)/σ̂ with
  σ̂ = √σ², σ² divided by n (the question says so), ε = 0 here and y = γx̂. Named mistakes:
  μ and σ̂ held fixed (ȳ_i γ/σ̂), the mean term or the variance term left out, the variance
  term's sign, σ² with 1/(n − 1), γ left out, ÷σ² for ÷σ̂.

Each answer is also written by hand as a derivation whose steps offer these slips
(:func:`_chain_factor`, :func:`_batchnorm_entry`): the mistakes are generated from it
(:func:`.problems.derived`), and a wrong answer is named only when one slip alone gives it.
"""

import math
import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import Problem, derived, distinct, list_text
from .registry import drill

__all__ = ["batchnorm", "chain"]

WEIGHTS = (-1.5, -0.5, 0.5, 1.5, 2.0)
SUBSCRIPTS = "\u2081\u2082\u2083"
TIMES = " \u00b7 "
STARTS = (-1.0, -0.5, 0.5, 1.0)


@drill("chain", "depth", "the factor a gradient gains through layers", {1: "linear layers", 2: "tanh layers"}, "number")
def chain(level, seed):
    """∂h_k/∂x through k = 3 layers of h = w·h (level 1) or h = tanh(w·h) (level 2), a weight for each layer."""
    rng = random.Random(f"chainrule-drill-chain:{level}:{seed}")
    return distinct(lambda: _chain(rng, level))


def _chain(rng, level):
    k, x0 = 3, rng.choice(STARTS)
    ws = [rng.choice(WEIGHTS) for _ in range(k)]  # one weight each: 5³ · 4 instances at each level
    x = Value(x0, "x")
    h, layers = x, []
    for weight in ws:
        h = (h * weight).tanh() if level == 2 else h * weight
        layers.append(h)
    h.backward()
    answer = x.grad
    slopes = [1.0 - layer.data**2 for layer in layers] if level == 2 else [1.0] * k
    factors = [weight * slope for weight, slope in zip(ws, slopes, strict=True)]
    product = "w\u1d62\u00b7h\u1d62\u208b\u2081"
    layer = f"h\u1d62 = tanh({product})" if level == 2 else f"h\u1d62 = {product}"
    instance = {"w": ws, "x": x0, "tanh": level == 2}
    mistakes = derived(_chain_factor, instance, {words: short for short, words in _chain_words(instance).items()})
    values = ", ".join(f"h{SUBSCRIPTS[i]} = {number_text(layer.data)}" for i, layer in enumerate(layers))
    weights = f"x = {number_text(x0)}, " + ", ".join(f"w{SUBSCRIPTS[i]} = {number_text(v)}" for i, v in enumerate(ws))
    return Problem(
        "chain",
        f"Three layers {layer}, for i = 1, 2, 3, start at h\u2080 = x. What is \u2202h\u2083/\u2202x?",
        [weights, f"forward: {values}"] if level == 2 else [weights],
        answer,
        [
            "Each layer multiplies the gradient by its local derivative: the chain rule through three layers.",
            "Each factor is w\u1d62" + (" \u00b7 (1 \u2212 h\u1d62\u00b2)." if level == 2 else ", the layer's weight."),
        ],
        [
            "The factors, one per layer: " + ", ".join(number_text(f) for f in factors) + ".",
            f"\u2202h\u2083/\u2202x = {TIMES.join(factor_text(f) for f in factors)} = {number_text(answer)}.",
        ],
        mistakes,
        data=instance,
    )


def _chain_words(d):
    """The words of each slip of :func:`_chain_factor` on the instance ``d``, by the mistake's name."""
    words = {
        "a sum, not a product": "The factors multiply, one per layer; they do not add.",
        "one layer short": "That is \u2202h\u2083/\u2202h\u2081, the factors of layers 2 and 3: layer 1's factor, "
        "from x to h\u2081, multiplies too.",
        "h\u2083's value": "That is h\u2083 itself, the forward value; \u2202h\u2083/\u2202x is how fast it moves "
        "with x.",
    }
    if d["tanh"]:
        words |= {
            "tanh\u2032 left out": "That is w\u2081w\u2082w\u2083: each layer also multiplies by tanh\u2032 = "
            "1 \u2212 h\u1d62\u00b2.",
            "w left out": "That is the tanh\u2032 factors alone: each layer also multiplies by its weight w\u1d62.",
            "tanh\u2032 at the pre-activation": "That takes tanh\u2032 at the pre-activation, 1 \u2212 "
            "(w\u1d62\u00b7h\u1d62\u208b\u2081)\u00b2; it is 1 \u2212 h\u1d62\u00b2, of the layer's output.",
        }
    return words


def _chain_factor(d, at):
    """∂h₃/∂x = Π_i w_i·tanh′_i (tanh′_i = 1 − h_i², or 1 for linear layers), derived by hand, with the slips of
    each step."""
    said, ws = _chain_words(d), d["w"]
    h, inputs, outputs = d["x"], [], []
    for w in ws:  # the forward pass, for the tanh′ factors and h₃
        inputs.append(h)
        h = math.tanh(w * h) if d["tanh"] else w * h
        outputs.append(h)
    slopes = [1.0] * len(ws)
    weights = ws
    if d["tanh"]:
        before = [1.0 - (w * h) ** 2 for w, h in zip(ws, inputs, strict=True)]
        slopes = at.choose(
            "tanh\u2032",
            [1.0 - h**2 for h in outputs],
            {said["tanh\u2032 left out"]: slopes, said["tanh\u2032 at the pre-activation"]: before},
        )
        weights = at.choose("w", ws, {said["w left out"]: [1.0] * len(ws)})
    factors = [w * slope for w, slope in zip(weights, slopes, strict=True)]
    factors = at.choose("the layers", factors, {said["one layer short"]: factors[1:]})
    total = at.choose("the chain", math.prod(factors), {said["a sum, not a product"]: sum(factors)})
    return at.choose("the gradient", total, {said["h\u2083's value"]: h})


DATA = (-2.0, -1.0, 0.0, 1.0, 2.0, 3.0)
UPSTREAM = (-1.0, -0.5, 0.5, 1.0, 2.0)


@drill("batchnorm", "depth", "batch norm's gradient on three numbers", {1: "γ = 1", 2: "γ ≠ 1"}, "number")
def batchnorm(level, seed):
    """x̄_i of batch norm on three numbers, γ = 1 (level 1) or γ ≠ 1 (level 2), ε = 0."""
    rng = random.Random(f"chainrule-drill-batchnorm:{level}:{seed}")
    return distinct(lambda: _batchnorm(rng, level))


def _batchnorm(rng, level):
    n = 3
    xs = rng.sample(DATA, n)
    y_bar = [rng.choice(UPSTREAM) for _ in range(n)]
    gamma = 1.0 if level == 1 else rng.choice((0.5, 2.0))
    i = rng.randrange(n)
    g = [gamma * y for y in y_bar]
    answer, m, s = _batchnorm_gradient(xs, g, i, n)
    hats = [(v - m) / s for v in xs]
    mean_g, mean_gh = sum(g) / n, sum(a * b for a, b in zip(g, hats, strict=True)) / n
    instance = {"x": xs, "y_bar": y_bar, "gamma": gamma, "i": i}
    mistakes = derived(_batchnorm_entry, instance, {words: short for short, words in BATCHNORM_WORDS.items()})
    name = "x" + SUBSCRIPTS[i]
    return Problem(
        "batchnorm",
        f"Batch normalisation of three numbers: x\u0302 = (x \u2212 \u03bc)/\u03c3\u0302 with \u03c3\u0302 = "
        f"\u221a\u03c3\u00b2 and \u03c3\u00b2 = (1/n)\u03a3\u2c7c(x\u2c7c \u2212 \u03bc)\u00b2 (divided by n, not "
        f"n \u2212 1; \u03b5 = 0 here), and y = \u03b3x\u0302. Given \u0233 = \u2202L/\u2202y, "
        f"what is \u2202L/\u2202{name}?",
        [
            f"x = {list_text(xs)}, \u03b3 = {number_text(gamma)}",
            f"\u0233 = {list_text(y_bar)}",
        ],
        answer,
        [
            "x\u0304\u1d62 = (g\u1d62 \u2212 mean(g) \u2212 x\u0302\u1d62\u00b7mean(g\u00b7x\u0302))/\u03c3\u0302, "
            "where g = \u03b3\u0233 and the means are over the batch.",
            f"\u03bc = {number_text(m)}, \u03c3\u0302 = {number_text(s)}, x\u0302 = {list_text(hats)}.",
        ],
        [
            f"\u03bc = {number_text(m)}, \u03c3\u0302 = {number_text(s)}; g = \u03b3\u0233 = {list_text(g)}.",
            f"mean(g) = {number_text(mean_g)}, mean(g\u00b7x\u0302) = {number_text(mean_gh)}.",
            f"\u2202L/\u2202{name} = ({factor_text(g[i])} \u2212 {factor_text(mean_g)} \u2212 "
            f"{factor_text(hats[i])}\u00b7{factor_text(mean_gh)})/{number_text(s)} = {number_text(answer)}.",
        ],
        mistakes,
        data=instance,
    )


#: The words of each slip of :func:`_batchnorm_entry`, by the mistake's name.
BATCHNORM_WORDS = {
    "\u03bc and \u03c3 held fixed": "That holds \u03bc and \u03c3\u0302 fixed, but both depend on every x: add "
    "their terms.",
    "the variance term left out": "That has the mean's term but not the variance's: \u03c3\u0302 depends on "
    "x\u1d62 too.",
    "the mean term left out": "That has the variance's term but not the mean's: \u03bc depends on x\u1d62 too, "
    "so subtract mean(g).",
    "the variance term's sign": "The variance's term is subtracted: x\u0302\u1d62\u00b7mean(g\u00b7x\u0302) "
    "comes with a minus sign.",
    "1/(n \u2212 1)": "That uses \u03c3\u00b2 with 1/(n \u2212 1). Batch norm divides by n.",
    "\u03b3 left out": "That uses \u0233 for g: y = \u03b3x\u0302, so g = \u03b3\u0233 carries the \u03b3.",
    "\u00f7\u03c3\u00b2 for \u00f7\u03c3\u0302": "That divides by \u03c3\u00b2; x\u0302 divides by "
    "\u03c3\u0302 = \u221a\u03c3\u00b2, and so does its gradient.",
}


def _batchnorm_entry(d, at):
    """x̄_i = (g_i − mean(g) − x̂_i·Σ_j g_j x̂_j/n)/σ̂ with g = γȳ, derived by hand, with the slips of each step.

    With σ² = Σ(x − μ)²/m for a divisor m, ∂σ̂/∂x_i = x̂_i/m, so the variance's term is x̂_i·Σ g x̂/m."""
    said, xs, i = BATCHNORM_WORDS, d["x"], d["i"]
    n = len(xs)
    g = at.choose("g", [d["gamma"] * y for y in d["y_bar"]], {said["\u03b3 left out"]: list(d["y_bar"])})
    m = at.choose("the variance's divisor", n, {said["1/(n \u2212 1)"]: n - 1})
    mu = sum(xs) / n
    sigma = math.sqrt(sum((v - mu) ** 2 for v in xs) / m)
    hats = [(v - mu) / sigma for v in xs]
    mean_term = at.choose("the mean's term", sum(g) / n, {said["the mean term left out"]: 0.0})
    variance = hats[i] * sum(a * b for a, b in zip(g, hats, strict=True)) / m
    variance = at.choose(
        "the variance's term",
        variance,
        {said["the variance term left out"]: 0.0, said["the variance term's sign"]: -variance},
    )
    top = at.choose(
        "the paths through \u03bc and \u03c3\u0302",
        g[i] - mean_term - variance,
        {said["\u03bc and \u03c3 held fixed"]: g[i]},
    )
    return at.choose(
        "\u00f7\u03c3\u0302", top / sigma, {said["\u00f7\u03c3\u00b2 for \u00f7\u03c3\u0302"]: top / sigma**2}
    )


def _batchnorm_gradient(xs, g, i, divisor):
    """(∂L/∂x_i, μ, σ̂) for L = Σ g_j x̂_j, with σ² the sum of squares over ``divisor``, by ``backward()``."""
    x = [Value(v) for v in xs]
    mu = (x[0] + x[1] + x[2]) * (1 / len(xs))
    sigma = (((x[0] - mu) ** 2 + (x[1] - mu) ** 2 + (x[2] - mu) ** 2) * (1 / divisor)) ** 0.5
    loss = sum(((v - mu) / sigma) * weight for v, weight in zip(x, g, strict=True))
    loss.backward()
    return x[i].grad, mu.data, sigma.data

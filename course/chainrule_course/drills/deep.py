"""The depth chapter's drills: the factor a gradient gains through layers, and batch norm's backward pass.

Both are built from scalar :class:`~chainrule.value.Value` s and answered by ``backward()``:

* ``chain``: ∂h_k/∂x through k layers h_i = w·h_{i−1} (level 1) or h_i = tanh(w·h_{i−1})
  (level 2). Named mistakes: a sum of the factors instead of their product, w^k with the
  tanh′ factors left out, the tanh′ factors with w left out.
* ``batchnorm``: x̄_i for batch normalisation of three numbers, x̂ = (x − μ)/σ̂ with
  σ̂ = √σ², σ² divided by n (the question says so), ε = 0 here and y = γx̂. Named mistakes:
  μ and σ̂ held fixed (ȳ_i γ/σ̂), the mean term without the variance term, σ² with 1/(n − 1).
"""

import math
import random

from chainrule.value import Value

from .graphs import factor_text, number_text
from .problems import Mistake, Problem, distinct, list_text

__all__ = ["batchnorm", "chain"]

WEIGHTS = (-1.5, -0.5, 0.5, 1.5, 2.0)
SUBSCRIPTS = "\u2081\u2082\u2083"
TIMES = " \u00b7 "
STARTS = (-1.0, -0.5, 0.5, 1.0)


def chain(level, seed):
    """∂h_k/∂x through k = 3 layers of h = w·h (level 1) or h = tanh(w·h) (level 2)."""
    rng = random.Random(f"chainrule-drill-chain:{level}:{seed}")
    return distinct(lambda: _chain(rng, level))


def _chain(rng, level):
    k, w, x0 = 3, rng.choice(WEIGHTS), rng.choice(STARTS)
    ws = [w] * k if level == 2 else [rng.choice(WEIGHTS) for _ in range(k)]  # linear layers: one weight each
    x = Value(x0, "x")
    h, layers = x, []
    for weight in ws:
        h = (h * weight).tanh() if level == 2 else h * weight
        layers.append(h)
    h.backward()
    answer = x.grad
    slopes = [1.0 - layer.data**2 for layer in layers] if level == 2 else [1.0] * k
    factors = [weight * slope for weight, slope in zip(ws, slopes, strict=True)]
    layer = "h\u1d62 = tanh(w\u00b7h\u1d62\u208b\u2081)" if level == 2 else "h\u1d62 = w\u1d62\u00b7h\u1d62\u208b\u2081"
    mistakes = [Mistake(sum(factors), "The factors multiply, one per layer; they do not add.", "a sum, not a product")]
    if level == 2:
        mistakes += [
            Mistake(
                w**k,
                "That is w\u00b3: each layer also multiplies by tanh\u2032 = 1 \u2212 h\u1d62\u00b2.",
                "tanh\u2032 left out",
            ),
            Mistake(
                math.prod(slopes),
                "That is the tanh\u2032 factors alone: each layer also multiplies by w.",
                "w left out",
            ),
        ]
    values = ", ".join(f"h{SUBSCRIPTS[i]} = {number_text(layer.data)}" for i, layer in enumerate(layers))
    return Problem(
        "chain",
        f"Three layers {layer}, for i = 1, 2, 3, start at h\u2080 = x. What is \u2202h\u2083/\u2202x?",
        (
            [f"x = {number_text(x0)}, w = {number_text(w)}", f"forward: {values}"]
            if level == 2
            else [
                f"x = {number_text(x0)}, " + ", ".join(f"w{SUBSCRIPTS[i]} = {number_text(v)}" for i, v in enumerate(ws))
            ]
        ),
        answer,
        [
            "Each layer multiplies the gradient by its local derivative: the chain rule through three layers.",
            "Each factor is w" + (" \u00b7 (1 \u2212 h\u1d62\u00b2)." if level == 2 else "\u1d62, the layer's weight."),
        ],
        [
            "The factors, one per layer: " + ", ".join(number_text(f) for f in factors) + ".",
            f"\u2202h\u2083/\u2202x = {TIMES.join(factor_text(f) for f in factors)} = {number_text(answer)}.",
        ],
        mistakes,
        data={"w": ws, "x": x0, "tanh": level == 2},
    )


DATA = (-2.0, -1.0, 0.0, 1.0, 2.0, 3.0)
UPSTREAM = (-1.0, -0.5, 0.5, 1.0, 2.0)


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
    mistakes = [
        Mistake(
            g[i] / s,
            "That holds \u03bc and \u03c3\u0302 fixed, but both depend on every x: add their terms.",
            "\u03bc and \u03c3 held fixed",
        ),
        Mistake(
            (g[i] - mean_g) / s,
            "That has the mean's term but not the variance's: \u03c3\u0302 depends on x\u1d62 too.",
            "the variance term left out",
        ),
        Mistake(
            _batchnorm_gradient(xs, g, i, n - 1)[0],
            "That uses \u03c3\u00b2 with 1/(n \u2212 1). Batch norm divides by n.",
            "1/(n \u2212 1)",
        ),
    ]
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
        data={"x": xs, "y_bar": y_bar, "gamma": gamma, "i": i},
    )


def _batchnorm_gradient(xs, g, i, divisor):
    """(∂L/∂x_i, μ, σ̂) for L = Σ g_j x̂_j, with σ² the sum of squares over ``divisor``, by ``backward()``."""
    x = [Value(v) for v in xs]
    mu = (x[0] + x[1] + x[2]) * (1 / len(xs))
    sigma = (((x[0] - mu) ** 2 + (x[1] - mu) ** 2 + (x[2] - mu) ** 2) * (1 / divisor)) ** 0.5
    loss = sum(((v - mu) / sigma) * weight for v, weight in zip(x, g, strict=True))
    loss.backward()
    return x[i].grad, mu.data, sigma.data

"""A float64 answer is compared in float64's precision, so central differences fail where a formula is asked.

Each answer below differentiates by central differences, as a student who skips the derivation
would, at three steps: it is refused, and told that an approximation is not the formula.
Right float64 formulas written another way (the reference's own forms are elsewhere) pass.
"""

from __future__ import annotations

import pytest
from examples import NETWORK_ANSWER
from test_scalar_checks import as_cell

from chainrule_course.exercises import answers, feedback

#: The generic method, as a cell: the gradient of f at each array in ``at``, one entry at a time.
CENTRAL = """import numpy as np

STEP = {step}


def central(f, *at):
    grads = []
    for a in at:
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            old = a[i]
            a[i] = old + STEP
            up = f()
            a[i] = old - STEP
            down = f()
            a[i] = old
            g[i] = (up - down) / (2 * STEP)
        grads.append(g)
    return grads
"""
LAYERNORM = """

def layernorm_backward(x, gamma, y_bar, eps):
    x, gamma, beta = x.copy(), gamma.copy(), np.zeros(len(gamma))

    def f():
        x_hat = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + eps)
        return ((gamma * x_hat + beta) * y_bar).sum()

    return tuple(central(f, x, gamma, beta))
"""
WEIGHTS = """

def d2l_weight_grads(X, y, W1, W2, lam):
    W1, W2 = W1.copy(), W2.copy()

    def f():
        O = np.maximum(X @ W1.T, 0) @ W2.T
        O = O - O.max(1, keepdims=True)
        loss = (np.log(np.exp(O).sum(1)) - O[np.arange(len(y)), y]).mean()
        return loss + lam / 2 * ((W1**2).sum() + (W2**2).sum())

    return tuple(central(f, W1, W2))
"""
NEURON = """import math

H = {step}


def tanh_neuron_grads(x, w, b):
    def f(x, w, b):
        return math.tanh(w * x + b)

    return (
        (f(x + H, w, b) - f(x - H, w, b)) / (2 * H),
        (f(x, w + H, b) - f(x, w - H, b)) / (2 * H),
        (f(x, w, b + H) - f(x, w, b - H)) / (2 * H),
    )
"""


def network_by_differences(step: float) -> str:
    """ex-capstone-network-backward's forward pass, as the reference answer has it, differentiated by
    central differences."""
    forward = NETWORK_ANSWER.split("    O_bar =")[0].replace("def network_backward", "def loss")
    forward += "    return -np.log(P[np.arange(n), y]).mean()\n"
    return (
        CENTRAL.format(step=step)
        + forward.removeprefix("import numpy as np\n")
        + """

def network_backward(E, W1, b1, gamma, beta, W2, b2, tokens, y):
    at = [a.copy() for a in (E, W1, b1, gamma, beta, W2, b2)]
    return tuple(central(lambda: loss(*at, tokens, y), *at))
"""
    )


STEPS = (1e-4, 1e-5, 1e-6)


def cases(step: float):
    return [
        (feedback.check_layernorm_backward, CENTRAL.format(step=step) + LAYERNORM, "layernorm_backward"),
        (feedback.check_d2l_weight_grads_function, CENTRAL.format(step=step) + WEIGHTS, "d2l_weight_grads"),
        (feedback.check_tanh_neuron_grads_function, NEURON.format(step=step), "tanh_neuron_grads"),
        (feedback.check_network_backward, network_by_differences(step), "network_backward"),
    ]


@pytest.mark.parametrize("step", STEPS)
def test_central_differences_fail_where_a_formula_is_asked_and_are_told_why(step, monkeypatch):
    for check, cell, name in cases(step):
        with pytest.raises(answers.AnswerError) as raised:
            check(as_cell(cell, name))
        assert "a numerical approximation, such as central differences" in str(raised.value), (name, step)
    # They fail by their precision alone: judged as float32 answers are, they pass.
    monkeypatch.setattr(answers, "RTOL64", answers.RTOL)
    monkeypatch.setattr(answers, "ATOL64", answers.ATOL)
    for check, cell, name in cases(step):
        check(as_cell(cell, name))


def test_the_same_answers_pass_with_their_formulas():
    """The cells above are not wrong in another way: with the derivative's formula in place they pass."""
    formula = NEURON.format(step=0).split("def tanh_neuron_grads")[0] + (
        "def tanh_neuron_grads(x, w, b):\n"
        "    slope = 1 / math.cosh(w * x + b) ** 2\n"
        "    return slope * w, slope * x, slope\n"
    )
    feedback.check_tanh_neuron_grads_function(as_cell(formula, "tanh_neuron_grads"))
    feedback.check_network_backward(as_cell(NETWORK_ANSWER, "network_backward"))


#: Layer normalisation's backward pass in two honest forms. With d = 2 features its x_bar is the
#: difference of terms a thousand times larger, so its rounding is relative to them.
LAYERNORM_FORMS = (
    """import numpy as np

def layernorm_backward(x, gamma, y_bar, eps):
    s = np.sqrt(x.var(1, keepdims=True) + eps)
    x_hat, g = (x - x.mean(1, keepdims=True)) / s, gamma * y_bar
    x_bar = (g - g.mean(1, keepdims=True) - x_hat * (g * x_hat).mean(1, keepdims=True)) / s
    return x_bar, (y_bar * x_hat).sum(0), y_bar.sum(0)
""",
    """import numpy as np

def layernorm_backward(x, gamma, y_bar, eps):
    d, centred = x.shape[1], x - x.mean(1, keepdims=True)
    inverse = 1 / np.sqrt((centred**2).mean(1, keepdims=True) + eps)
    x_hat, g = centred * inverse, gamma * y_bar
    x_bar = inverse / d * (d * g - g.sum(1, keepdims=True) - x_hat * (g * x_hat).sum(1, keepdims=True))
    return x_bar, np.einsum("ij,ij->j", y_bar, x_hat), y_bar.sum(0)
""",
)


@pytest.mark.parametrize("secret", [b"s31", b"s36", b"s48"])
def test_honest_forms_pass_where_terms_cancel(secret):
    """Hidden inputs with d = 2 (found by a sweep) on which the rounding of either form exceeds 1e-12
    of the largest entry of x_bar: both pass, their rounding measured against the terms."""
    from chainrule_course.grading import contract

    for cell in LAYERNORM_FORMS:
        with contract.hidden_inputs(secret):
            feedback.check_layernorm_backward(as_cell(cell, "layernorm_backward"), seed=21)


def test_each_precision_is_allowed_its_own_rounding():
    """A float16 answer is held to its own precision, not float32's (a trial found a right float16 answer
    failing at 1e-5); float32 to 1e-5; float64 to its rounding."""
    import numpy as np

    right = np.linspace(-1.0, 1.0, 7) / 3
    answers.check_array("x", right.astype(np.float16), right)
    answers.check_array("x", right.astype(np.float32), right)
    with pytest.raises(answers.AnswerError, match="Your answer is float16; the check allows for its rounding"):
        answers.check_array("x", (right * 1.1).astype(np.float16), right)
    with pytest.raises(answers.AnswerError, match="It is close"):
        answers.check_array("x", right * (1 + 1e-9), right)

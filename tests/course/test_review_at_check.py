"""The notebook's check says what the grader will say: a reason to put an answer up for review is shown when
the answer is checked, in the grader's own words (chainrule_course.grading.review); float32 is none."""

import contextlib
import io
import linecache

from chainrule_course.exercises import feedback, verdicts
from chainrule_course.grading import grade, review, scoring

COMPLEX = "complex numbers (the complex step differentiates without a derivation)"

#: The complex step through cmath: the code says so, and so does what it does.
NEURON_COMPLEX_STEP = """import cmath

def tanh_neuron_grads(x, w, b):
    h = 1e-20

    def y(x, w, b):
        return cmath.tanh(w * x + b)

    return y(x + h * 1j, w, b).imag / h, y(x, w + h * 1j, b).imag / h, y(x, w, b + h * 1j).imag / h
"""

NEURON_DERIVED = """import math

def tanh_neuron_grads(x, w, b):
    slope = 1 - math.tanh(w * x + b) ** 2
    return slope * w, slope * x, slope
"""

#: The complex step spelled so that no pattern of the code finds it: only what it does tells.
HVP_COMPLEX_STEP = """import numpy as np

def tanh_hvp(W, x, v):
    h = 1e-20
    i = (-1) ** 0.5

    def gradient(x):
        t = np.tanh(W @ x)
        return W.T @ (1 - t * t)

    z = gradient(x + i * h * v)
    return np.real((z - np.conj(z)) / (2 * i * h))
"""


def as_cell(source: str, name: str):
    """``name`` as a notebook cell defines it: its source kept in linecache without a time, as IPython keeps it."""
    filename = f"<cell review-{abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - a notebook cell of the test's
    return namespace[name]


def printed(check, answer) -> str:
    """What ``check(answer)`` prints; it must pass."""
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        check(answer)
    return " ".join(shown.getvalue().split())  # the note is wrapped to the output's width


def test_a_complex_step_neuron_passes_and_the_check_says_the_grader_will_review_it():
    said = printed(feedback.check_tanh_neuron_grads_function, as_cell(NEURON_COMPLEX_STEP, "tanh_neuron_grads"))
    assert COMPLEX in review.REVIEW, "the code's reason keeps its words"
    assert said.count("Note: the grader will put tanh_neuron_grads up for review:") == 1, said
    assert COMPLEX in said and review.DID["complex"] in said, said
    assert grade.review_reasons([NEURON_COMPLEX_STEP]) == [COMPLEX], "the grader flags what the check said"


def test_a_complex_step_hvp_seen_only_by_what_it_does_is_shown_at_the_check():
    said = printed(feedback.check_tanh_hvp, as_cell(HVP_COMPLEX_STEP, "tanh_hvp"))
    assert grade.review_reasons([HVP_COMPLEX_STEP]) == [], "no pattern of the code finds it"
    note = verdicts.review_note("tanh_hvp", [review.DID["complex"]])
    assert " ".join(note.split()) in said and said.count("up for review") == 1, said


def test_a_derived_answer_gets_no_note():
    said = printed(feedback.check_tanh_neuron_grads_function, as_cell(NEURON_DERIVED, "tanh_neuron_grads"))
    assert "review" not in said, said


def test_the_check_everything_cell_says_it_under_the_verdict():
    summary = feedback.Summary("Chapter 1")
    with summary.exercise("1.2"):
        feedback.check_tanh_neuron_grads_function(as_cell(NEURON_COMPLEX_STEP, "tanh_neuron_grads"))
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        summary.show()
    said = " ".join(shown.getvalue().split())
    assert "Exercise 1.2: passes" in said, said
    after = said.split("Exercise 1.2: passes", 1)[1]
    assert "Note: the grader will put tanh_neuron_grads up for review: " + COMPLEX in after, said
    assert review.DID["complex"] in after, said


def test_an_honest_float32_answer_is_not_put_up_for_review():
    """The exercises invite float32 (it is compared within float32's rounding): the grader does not flag it."""
    honest = (
        "import numpy as np\n\ndef hidden_bias_grad(X, y, W1, b1, W2, lam):\n"
        "    X, W1 = X.astype(np.float32), W1.astype('float32')\n"
        "    Z = X @ W1.T + b1.astype(np.float16)\n"
        "    return np.ones(Z.shape[1], dtype=np.float32)\n"
    )
    assert grade.review_reasons([honest]) == []
    assert not any("float32" in reason for reason in [*grade.REVIEW, *scoring.DID.values()])

"""An assignment's handout in the simulated Colab (tests/colab_sim.py): the mlp assignment's student
notebook, as ``make assignments`` writes it, alone in an empty folder (no ``tests/`` beside it), installs
what it needs, passes its public checks when answered and names the mistake when not."""

from __future__ import annotations

import colab_sim
from handouts import ex, number, solutions, submission

BIAS, MEMORY, WEIGHTS = 0, 1, 2  # the answer cells of mlp


def check_cells(executed) -> dict[str, str]:
    """Question id -> the text its ``grader.check(...)`` cell printed."""
    return {
        cell.source.split('"')[1]: "\n".join(
            output.get("text", "") or output.get("data", {}).get("text/plain", "") for output in cell.outputs
        )
        for cell in executed.cells
        if cell.cell_type == "code" and cell.source.startswith("grader.check(")
    }


def test_student_notebook_in_simulated_colab(colab):
    venv, wheel, ipython_dir = colab
    right = dict(enumerate(solutions("mlp")))
    assert " + lam * W1," in right[WEIGHTS], right[WEIGHTS]
    wrong = {**right, WEIGHTS: right[WEIGHTS].replace(" + lam * W1,", ",")}
    result = colab_sim.run_notebook(submission("mlp", wrong), venv, wheel, ipython_dir)
    assert result.stopped_at is None and not result.errors, result.describe()[:4000]
    checks = check_cells(result.notebook)
    bias, memory, weights = ex("mlp-bias"), ex("mlp-memory"), ex("mlp-weight-grads")
    assert set(checks) == {bias, memory, weights}, checks
    assert f"{bias} results: All test cases passed!" in checks[bias], checks[bias]
    assert f"{memory} results: All test cases passed!" in checks[memory], checks[memory]
    failed = checks[weights]
    assert (
        "AnswerError: d2l_weight_grads on the batch" in failed
        and "WRONG: dJ/dW1 is wrong at entry" in failed
        and ("It matches a known mistake: the weight-decay term λ·W1 is missing." in failed)
    ), failed
    assert "Traceback" not in failed, failed
    # Handed out untouched, every check says the exercise is not answered yet.
    untouched = colab_sim.run_notebook(submission("mlp"), venv, wheel, ipython_dir)
    said = check_cells(untouched.notebook)
    assert set(said) == {bias, memory, weights}, said
    for label, question in (("mlp-bias", bias), ("mlp-memory", memory), ("mlp-weight-grads", weights)):
        assert f"NotAnswered: Exercise {number(label)} is not answered yet" in said[question], said[question]

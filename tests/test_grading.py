"""chainrule.exercises.grading: answers carried from the student's kernel to the grader as data.

* Every value a check can receive survives encode/decode: arrays keep dtype and shape,
  tuples stay tuples, and a value of another type becomes an object of the same type name.
* A replayed call gives back what was recorded, raises what the student's code raised (so
  "not answered yet" is still NotAnswered), and refuses inputs that were never recorded.
* A record that is missing, too large or not what ``record`` writes scores nothing, with why.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chainrule.exercises import answers, calling, grading

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
leaves = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | floats | st.text(max_size=5) | st.just(...)
arrays = hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.bool_]), hnp.array_shapes(max_dims=3))
values = st.recursive(
    leaves | arrays,
    lambda inner: (
        st.lists(inner, max_size=3) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


def same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return type(a) is type(b) and a == b


@given(values)
def test_values_survive_the_trip_as_json(value):
    assert same(value, grading.decode(json.loads(json.dumps(grading.encode(value)))))


def test_numpy_scalars_and_other_types():
    assert grading.decode(grading.encode(np.float32(1.5))).dtype == np.float32
    other = grading.decode(grading.encode(object()))
    assert type(other).__name__ == "object" or repr(other) == "<object>"
    with pytest.raises(answers.AnswerError, match="should be numbers"):
        answers.check_array("x", grading.decode(grading.encode({1, 2})), np.zeros(2))


def recorded(function, *calls):
    """Record ``function`` on each call's arguments as the kernel would; the replay of it."""
    log: list = []
    recorder = grading._Recorder("f", function, log)
    for args in calls:
        try:
            recorder(*args)
        except BaseException:  # noqa: BLE001 - recorded
            pass
    return grading._Replay("f", json.loads(json.dumps(log)))


def test_replay_returns_what_was_recorded_and_raises_what_was_raised():
    replay = recorded(lambda x: x * 2, (np.arange(3.0),))
    assert np.array_equal(replay(np.arange(3.0)), [0.0, 2.0, 4.0])
    with pytest.raises(grading.Unreadable, match="was not called with these inputs"):
        replay(np.arange(4.0))

    def unanswered(x):
        raise NotImplementedError("Exercise 6.2 is not answered yet: write f")

    with pytest.raises(answers.NotAnswered):
        calling.call("f", recorded(unanswered, (1,)), 1)

    def divides(x):
        return 1 / x

    with pytest.raises(
        answers.AnswerError,
        match=r"f raised ZeroDivisionError in line \d+ of divides \(`return 1 / x`\): division by zero$",
    ):
        calling.call("f", recorded(divides, (0,)), 0)

    def leaves(x):
        raise SystemExit(3)

    with pytest.raises(answers.AnswerError, match="f raised SystemExit"):
        calling.call("f", recorded(leaves, (0,)), 0)


def test_a_bad_record_scores_nothing(tmp_path):
    tests = {
        "q.py": "from otter.test_files import test_case\nOK_FORMAT = False\nname = 'q'\npoints = 2\n\n"
        "@test_case(points=None, hidden=False)\ndef test_q(f):\n    assert f(1) == 2\n"
    }
    assert grading.read_record(tmp_path / "none.json")[1].startswith("the notebook did not reach")
    (tmp_path / "bad.json").write_text("[1, 2]")
    data, problem = grading.read_record(tmp_path / "bad.json")
    assert data is None and "could not be read" in problem
    [result] = grading.score(tests, data, problem).values()
    assert result.score == 0 and problem in result.test_case_results[0].message
    good = {"values": {}, "calls": {"f": [{"key": grading.key((1,), {}), "result": 2}]}, "used": [], "changed": []}
    assert grading.score(tests, good)["q"].score == 2
    assert grading.score(tests, dict(good, used=["torch"]))["q"].score == 0


# --------------------------------------------------------------------------- points per part

HEAD = "from otter.test_files import test_case\n\nOK_FORMAT = False\n\nname = 'q'\npoints = 2\n\n"
WEIGHTS = (
    HEAD
    + """@test_case(points=None, hidden=False)
def test_q(d2l_weight_grads):
    from chainrule.exercises import feedback
    feedback.check_d2l_weight_grads_function(d2l_weight_grads, seed=0)
"""
)
RULES = (
    HEAD
    + """@test_case(points=None, hidden=False)
def test_q(matmul_vjp, ce_grad):
    from chainrule.exercises import feedback
    feedback.check_matmul_vjp(matmul_vjp)
    feedback.check_softmax_cross_entropy_vjp(ce_grad)
"""
)
REFERENCE = """import numpy as np


def matmul_vjp(A, B, G):
    return G @ B.T, A.T @ G


def ce_grad(logits, labels):
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return (P - np.eye(logits.shape[1])[labels]) / len(labels)
"""


@pytest.fixture(autouse=True)
def no_blocked_modules(monkeypatch):
    """This test process may have imported torch for other tests: the record must not count it here.

    (That a notebook which imports torch scores nothing is tested in test_assignments.py.)
    """
    monkeypatch.setattr(grading, "BLOCKED_MODULES", ())


def scored(source: str, namespace: dict, tmp_path) -> tuple[float, list[tuple[str, bool, str]]]:
    """Record ``namespace`` as the kernel would, score it as the grader does: points and (case, passed, message)."""
    tests = {"q.py": source}
    grading.record(namespace, tests, str(tmp_path / "record.json"))
    data, problem = grading.read_record(tmp_path / "record.json")
    (test_file,) = grading.score(tests, data, problem).values()
    return test_file.score, [(r.test_case.name, r.passed, r.message) for r in test_file.test_case_results]


def weight_grads(wrong_w2: bool):
    from chainrule.exercises import feedback

    def d2l_weight_grads(X, y, W1, W2, lam):
        g = feedback.d2l_gradients(X, y, W1, W2, lam)
        return g["W1"], g["W2"] - lam * W2 if wrong_w2 else g["W2"]

    return d2l_weight_grads


def test_each_quantity_earns_its_share(tmp_path):
    """One answer, two quantities: a right ∂J/∂W1 earns its point when ∂J/∂W2 misses λ·W2, on every batch."""
    parts = "\nchainrule_parts = [['d2l_weight_grads', 'dJ/dW1'], ['d2l_weight_grads', 'dJ/dW2']]\n"
    points, cases = scored(WEIGHTS + parts, {"d2l_weight_grads": weight_grads(wrong_w2=True)}, tmp_path)
    assert points == 1
    assert [(name, passed) for name, passed, _ in cases] == [("q - 1 (dJ/dW1)", True), ("q - 1 (dJ/dW2)", False)]
    assert "the weight-decay term λ·W2 is missing" in cases[1][2] and "dJ/dW1" not in cases[1][2]
    # Without parts the same answer earns nothing, and a right one everything, either way.
    assert scored(WEIGHTS, {"d2l_weight_grads": weight_grads(wrong_w2=True)}, tmp_path)[0] == 0
    assert scored(WEIGHTS + parts, {"d2l_weight_grads": weight_grads(wrong_w2=False)}, tmp_path)[0] == 2


def test_each_answer_earns_its_share(tmp_path):
    """Two answers: a right matmul_vjp earns its point while ce_grad is not answered (the reference stands in)."""

    def matmul_vjp(A, B, G):
        return G @ B.T, A.T @ G

    def ce_grad(logits, labels):
        raise NotImplementedError("Exercise 5.5 is not answered yet: write ce_grad")

    parts = f"\nchainrule_parts = [['matmul_vjp', None], ['ce_grad', None]]\nchainrule_reference = {REFERENCE!r}\n"
    points, cases = scored(RULES + parts, {"matmul_vjp": matmul_vjp, "ce_grad": ce_grad}, tmp_path)
    assert points == 1 and [passed for _, passed, _ in cases] == [True, False]
    assert "not answered yet" in cases[1][2]
    # The reference never stands in for the answer being scored: a wrong matmul_vjp fails its part.
    points, cases = scored(
        RULES + parts, {"matmul_vjp": lambda A, B, G: (G @ B.T, -A.T @ G), "ce_grad": ce_grad}, tmp_path
    )
    assert points == 0 and "dB is wrong" in cases[0][2]


def test_a_part_needs_what_the_kernel_recorded(tmp_path):
    """A record made without parts (the kernel stopped at the first wrong quantity) cannot earn a part's points."""
    parts = "\nchainrule_parts = [['d2l_weight_grads', 'dJ/dW1'], ['d2l_weight_grads', 'dJ/dW2']]\n"
    grading.record({"d2l_weight_grads": weight_grads(wrong_w2=True)}, {"q.py": WEIGHTS}, str(tmp_path / "r.json"))
    data, _ = grading.read_record(tmp_path / "r.json")
    (test_file,) = grading.score({"q.py": WEIGHTS + parts}, data).values()
    assert test_file.score == 0
    assert "was not called with these inputs" in test_file.test_case_results[0].message


def test_the_named_mistake_reaches_the_grader_as_data(tmp_path):
    """The grader counts the known mistakes from the checks' AnswerError.mistake, not from their prose."""
    tests = {"q.py": WEIGHTS}
    grading.record({"d2l_weight_grads": weight_grads(wrong_w2=True)}, tests, str(tmp_path / "record.json"))
    data, problem = grading.read_record(tmp_path / "record.json")
    (test_file,) = grading.score(tests, data, problem).values()
    assert test_file.mistakes == ["the weight-decay term λ·W2 is missing"]
    grading.record({"d2l_weight_grads": weight_grads(wrong_w2=False)}, tests, str(tmp_path / "right.json"))
    data, problem = grading.read_record(tmp_path / "right.json")
    assert grading.score(tests, data, problem)["q"].mistakes == []
    assert grading.score(tests, None, "no record")["q"].mistakes == []


def test_the_replay_says_what_the_kernel_said_of_a_function_that_changed_its_inputs(tmp_path):
    """A function that changes X in place fails in the grader as in the notebook, with the same named mistake."""
    from chainrule.exercises import feedback

    def scales_x_first(X, y, W1, W2, lam):
        X /= 255.0
        g = feedback.d2l_gradients(X, y, W1, W2, lam)
        return g["W1"], g["W2"]

    tests = {"q.py": WEIGHTS}
    grading.record({"d2l_weight_grads": scales_x_first}, tests, str(tmp_path / "record.json"))
    data, problem = grading.read_record(tmp_path / "record.json")
    result = grading.score(tests, data, problem)["q"]
    assert result.score == 0 and result.mistakes == ["an argument changed in place"]
    assert "d2l_weight_grads changed X in place" in result.test_case_results[0].message
    calls = data["calls"]["d2l_weight_grads"]
    assert calls[0]["changed"] == [0]  # the kernel wrote down which argument changed
    del calls[0]["changed"]  # without it, the replay judges the numbers alone (wrong: they are for X / 255)
    message = grading.score(tests, data, problem)["q"].test_case_results[0].message
    assert "in place" not in message and "is wrong" in message


class _Forged:
    """What a forged .OTTER_LOG would hold: unpickling it writes a file (it could run anything)."""

    def __init__(self, mark: str):
        self.mark = mark

    def __reduce__(self):
        return (Path.touch, (Path(self.mark),))


def test_a_forged_otter_log_is_gone_before_otter_would_unpickle_it(tmp_path, monkeypatch):
    """Gradescope takes every file of a submission; otter unpickles ./.OTTER_LOG after the plugin's before_grading."""
    import pickle
    import types

    from otter.check.notebook import OTTER_LOG_FILENAME

    from chainrule.exercises.otter_plugin import OTTER_LOG, TrustedScores

    assert OTTER_LOG == OTTER_LOG_FILENAME
    monkeypatch.chdir(tmp_path)
    mark = tmp_path / "ran"
    Path(OTTER_LOG).write_bytes(pickle.dumps(_Forged(str(mark))))
    config = types.SimpleNamespace(grade_from_log=True)
    TrustedScores(None, {}, {}).before_grading(config)
    assert not Path(OTTER_LOG).exists() and config.grade_from_log is False and not mark.exists()
    Path(OTTER_LOG).mkdir()  # nor a folder of that name
    TrustedScores(None, {}, {}).before_grading(config)
    assert not Path(OTTER_LOG).exists()

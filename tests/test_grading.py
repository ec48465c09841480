"""chainrule.grading: answers carried from the student's kernel to the grader as data.

* Every value a check can receive survives encode/decode: arrays keep dtype and shape,
  tuples stay tuples, and a value of another type becomes an object of the same type name.
* A replayed call gives back what was recorded, raises what the student's code raised (so
  "not answered yet" is still NotAnswered), and refuses inputs that were never recorded.
* A record that is missing, too large or not what ``record`` writes scores nothing, with why.
"""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chainrule import answers, grading

floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
leaves = st.none() | st.booleans() | st.integers(-2**70, 2**70) | floats | st.text(max_size=5) | st.just(...)
arrays = hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.bool_]), hnp.array_shapes(max_dims=3))
values = st.recursive(leaves | arrays, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                      | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=10)


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
        answers.call("f", recorded(unanswered, (1,)), 1)

    def divides(x):
        return 1 / x
    with pytest.raises(answers.AnswerError, match=r"f raised ZeroDivisionError: division by zero \(line \d+ of divides: return 1 / x\)"):
        answers.call("f", recorded(divides, (0,)), 0)

    def leaves(x):
        raise SystemExit(3)
    with pytest.raises(answers.AnswerError, match="f raised SystemExit"):
        answers.call("f", recorded(leaves, (0,)), 0)


def test_a_bad_record_scores_nothing(tmp_path):
    tests = {"q.py": "from otter.test_files import test_case\nOK_FORMAT = False\nname = 'q'\npoints = 2\n\n"
                     "@test_case(points=None, hidden=False)\ndef test_q(f):\n    assert f(1) == 2\n"}
    assert grading.read_record(tmp_path / "none.json")[1].startswith("the notebook did not reach")
    (tmp_path / "bad.json").write_text("[1, 2]")
    data, problem = grading.read_record(tmp_path / "bad.json")
    assert data is None and "could not be read" in problem
    [result] = grading.score(tests, data, problem).values()
    assert result.score == 0 and problem in result.test_case_results[0].message
    good = {"values": {}, "calls": {"f": [{"key": grading.key((1,), {}), "result": 2}]}, "used": [], "changed": []}
    assert grading.score(tests, good)["q"].score == 2
    assert grading.score(tests, dict(good, used=["torch"]))["q"].score == 0

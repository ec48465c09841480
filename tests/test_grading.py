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

from chainrule.exercises import answer_code, answers, calling, grading, kernel

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
    """Call ``function`` on each call's arguments as the kernel would; the replay of it."""
    data = kernel.record({"f": function}, {"calls": {"f": [grading.key(args, {}) for args in calls]}}, show=False)
    return grading._Replay("f", json.loads(json.dumps(data))["calls"]["f"])


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
REFERENCE = """import numpy as np


def matmul_vjp(A, B, G):
    return G @ B.T, A.T @ G


def ce_grad(logits, labels):
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return (P - np.eye(logits.shape[1])[labels]) / len(labels)
"""
WEIGHTS_REFERENCE = """from chainrule.exercises import feedback


def d2l_weight_grads(X, y, W1, W2, lam):
    g = feedback.d2l_gradients(X, y, W1, W2, lam)
    return g["W1"], g["W2"]
"""
WEIGHTS += f"chainrule_reference = {WEIGHTS_REFERENCE!r}\n"
RULES = (
    HEAD
    + """@test_case(points=None, hidden=False)
def test_q(matmul_vjp, ce_grad):
    from chainrule.exercises import feedback
    feedback.check_matmul_vjp(matmul_vjp)
    feedback.check_softmax_cross_entropy_vjp(ce_grad)
"""
    + f"chainrule_reference = {REFERENCE!r}\n"
)
SECRET = b"the grader's secret"


@pytest.fixture(autouse=True)
def no_blocked_modules(monkeypatch):
    """This test process may have imported torch for other tests: the record must not count it here.

    (That a notebook which imports torch scores nothing is tested in test_assignments.py.)
    """
    monkeypatch.setattr(grading, "BLOCKED_MODULES", ())
    monkeypatch.setattr(kernel, "BLOCKED_MODULES", ())


def recorded_and_scored(tests: dict, namespace: dict, secret: bytes = SECRET, cells=None) -> dict:
    """Inputs chosen, answers called as the kernel would, scored as the grader does: test name -> test file."""
    data = kernel.record(namespace, grading.inputs(tests, secret), show=False)
    return grading.score(tests, json.loads(json.dumps(data)), "", secret, cells)


def scored(source: str, namespace: dict, tmp_path) -> tuple[float, list[tuple[str, bool, str]]]:
    """Record ``namespace`` as the kernel would, score it as the grader does: points and (case, passed, message)."""
    (test_file,) = recorded_and_scored({"q.py": source}, namespace).values()
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

    parts = "\nchainrule_parts = [['matmul_vjp', None], ['ce_grad', None]]\n"
    points, cases = scored(RULES + parts, {"matmul_vjp": matmul_vjp, "ce_grad": ce_grad}, tmp_path)
    assert points == 1 and [passed for _, passed, _ in cases] == [True, False]
    assert "not answered yet" in cases[1][2]
    # The reference never stands in for the answer being scored: a wrong matmul_vjp fails its part.
    points, cases = scored(
        RULES + parts, {"matmul_vjp": lambda A, B, G: (G @ B.T, -A.T @ G), "ce_grad": ce_grad}, tmp_path
    )
    assert points == 0 and "dB is wrong" in cases[0][2]


def test_the_named_mistake_reaches_the_grader_as_data():
    """The grader counts the known mistakes from the checks' AnswerError.mistake, not from their prose."""
    tests = {"q.py": WEIGHTS}
    wrong = recorded_and_scored(tests, {"d2l_weight_grads": weight_grads(wrong_w2=True)})
    assert wrong["q"].mistakes == ["the weight-decay term λ·W2 is missing"]
    assert recorded_and_scored(tests, {"d2l_weight_grads": weight_grads(wrong_w2=False)})["q"].mistakes == []
    assert grading.score(tests, None, "no record")["q"].mistakes == []


def test_the_replay_says_what_the_kernel_said_of_a_function_that_changed_its_inputs():
    """A function that changes X in place fails in the grader as in the notebook, with the same named mistake."""
    from chainrule.exercises import feedback

    def scales_x_first(X, y, W1, W2, lam):
        X /= 255.0
        g = feedback.d2l_gradients(X, y, W1, W2, lam)
        return g["W1"], g["W2"]

    tests = {"q.py": WEIGHTS}
    data = json.loads(
        json.dumps(kernel.record({"d2l_weight_grads": scales_x_first}, grading.inputs(tests, SECRET), show=False))
    )
    result = grading.score(tests, data, "", SECRET)["q"]
    assert result.score == 0 and result.mistakes == ["an argument changed in place"]
    assert "d2l_weight_grads changed X in place" in result.test_case_results[0].message
    calls = data["calls"]["d2l_weight_grads"]
    assert calls[0]["changed"] == [0]  # the kernel wrote down which argument changed
    del calls[0]["changed"]  # without it, the replay judges the numbers alone (wrong: they are for X / 255)
    message = grading.score(tests, data, "", SECRET)["q"].test_case_results[0].message
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


# --------------------------------------------------------------------------- the answer key out of the kernel

NEURON = """import math


def tanh_neuron_grads(x, w, b):
    slope = 1 - math.tanh(w * x + b) ** 2
    return slope * w, slope * x, slope
"""
NEURON_TESTS = {
    "q.py": HEAD
    + """@test_case(points=None, hidden=False)
def test_q(tanh_neuron_grads):
    from chainrule.exercises import feedback
    feedback.check_tanh_neuron_grads_function(tanh_neuron_grads)

@test_case(points=None, hidden=True)
def test_q_hidden(tanh_neuron_grads):
    from chainrule.exercises import feedback
    for seed in (11, 12):
        feedback.check_tanh_neuron_grads_function(tanh_neuron_grads, seed=seed)
"""
    + f"chainrule_reference = {NEURON!r}\nchainrule_not_allowed = ['chainrule.Value.backward']\n"
}


def neuron_right():
    namespace: dict = {}
    exec(NEURON, namespace)  # noqa: S102 - the test's own reference
    return namespace["tanh_neuron_grads"]


def test_the_kernel_is_given_inputs_and_nothing_else():
    """No check, reference, seed or expected value reaches the kernel; the hidden inputs come from the secret."""
    from chainrule.exercises import scalar

    given = grading.inputs(NEURON_TESTS, SECRET)
    text = json.dumps(given)
    assert set(given) == {"calls", "values", "not_allowed"} and list(given["calls"]) == ["tanh_neuron_grads"]
    assert given["not_allowed"] == {"tanh_neuron_grads": ["chainrule.Value.backward"]}
    for secret_part in ("math.tanh", "feedback", "seed", "check", "slope"):
        assert secret_part not in text
    points = [tuple(grading.decode(json.loads(k)[0])) for k in given["calls"]["tanh_neuron_grads"]]
    public = scalar.neuron_points(0)
    assert points[:2] == public and len(points) == 6  # the public points, then two for each hidden seed
    unsalted = scalar.neuron_points(11) + scalar.neuron_points(12)
    assert not set(points[2:]) & set(unsalted), "the hidden inputs are not those of the seeds in the source"
    other = grading.inputs(NEURON_TESTS, b"another run")["calls"]["tanh_neuron_grads"]
    assert other[:2] == given["calls"]["tanh_neuron_grads"][:2] and other[2:] != given["calls"]["tanh_neuron_grads"][2:]
    assert recorded_and_scored(NEURON_TESTS, {"tanh_neuron_grads": neuron_right()})["q"].score == 2


def test_an_answer_right_only_on_the_public_inputs_earns_nothing():
    """A table of the public points' answers passes the public test and fails the hidden one: 0 points."""
    from chainrule.exercises import scalar

    right = neuron_right()
    table = {point: right(*point) for point in scalar.neuron_points(0)}
    (result,) = recorded_and_scored(NEURON_TESTS, {"tanh_neuron_grads": lambda *point: table[point]}).values()
    assert result.score == 0
    public = [r.message for r in result.test_case_results if not r.test_case.hidden]
    assert public and all(grading.PUBLIC_ONLY in message for message in public)
    hidden = [r.message for r in result.test_case_results if r.test_case.hidden]
    assert all("KeyError" in message for message in hidden)


def test_the_checker_s_frames_hold_nothing_while_the_kernel_calls_an_answer():
    """The kernel calls an answer from kernel.record, whose frames hold the inputs and no expected value."""
    import sys

    def peeks(x, w, b):
        frame, seen = sys._getframe(1), []
        while frame is not None:
            seen += [value for value in frame.f_locals.values() if isinstance(value, (tuple, float))]
            frame = frame.f_back
        right = neuron_right()(x, w, b)
        return next((value for value in seen if value == right), (0.0, 0.0, 0.0))

    assert recorded_and_scored(NEURON_TESTS, {"tanh_neuron_grads": peeks})["q"].score == 0


def test_what_an_exercise_does_not_allow_earns_nothing():
    """Value.backward in Exercise 1.2: found in the answer's code by the grader, and refused in the kernel."""
    engine = (
        "from chainrule import Value\n\n\ndef helper(x, w, b):\n"
        "    leaves = [Value(v) for v in (x, w, b)]\n    (leaves[1] * leaves[0] + leaves[2]).tanh().backward()\n"
        "    return tuple(leaf.grad for leaf in leaves)\n\n\n"
        "def tanh_neuron_grads(x, w, b):\n    return helper(x, w, b)\n"
    )
    namespace: dict = {}
    exec(engine, namespace)  # noqa: S102
    (result,) = recorded_and_scored(NEURON_TESTS, {"tanh_neuron_grads": namespace["tanh_neuron_grads"]}).values()
    assert result.score == 0 and "Value.backward is not allowed in this exercise" in result.test_case_results[0].message
    (result,) = recorded_and_scored(NEURON_TESTS, {"tanh_neuron_grads": neuron_right()}, cells=[engine]).values()
    assert result.score == 0
    assert "tanh_neuron_grads uses Value.backward, which this exercise does not allow" in (
        result.test_case_results[0].message
    )
    # The engine's own method is back once the answer has been called.
    from chainrule import Value

    assert Value.backward.__name__ == "backward"


def test_answer_uses_reads_only_the_answers_code():
    cells = [
        "import chainrule.graph as g\nfrom chainrule.graph import topological_order as order",
        "def helper(v):\n    return order(v)\n\n\ndef unrelated(v):\n    return v.backward()",
        "def answer(x):\n    '''backward, not used'''\n    backward = 2 * x\n    return helper(x) + [backward]",
        "%timeit answer(1)\ndef other(v):\n    return getattr(v, 'backward')()",
    ]
    names, attributes = answer_code.answer_uses(cells, ["answer"])
    assert {"helper", "order", "topological_order", "graph", "chainrule"} <= names and "unrelated" not in names
    assert "backward" not in attributes  # a local variable and a docstring are not the method
    assert answer_code.not_allowed_used(cells, ["answer"], ["chainrule.Value.backward"]) == []
    assert answer_code.not_allowed_used(cells, ["answer"], ["chainrule.graph.topological_order"]) == [
        "graph.topological_order"
    ]
    assert answer_code.not_allowed_used(cells, ["other"], ["chainrule.Value.backward"]) == ["Value.backward"]
    assert answer_code.not_allowed_used(["def f():\n    from chainrule.exercises import feedback"], ["f"], []) == [
        "exercises"
    ]
    # A definition inside an if block, and the framework the blocker refuses, imported once it is removed:
    swapped = "import sys\nif '_grader_kernel' in globals():\n    sys.meta_path.pop(0)\n    import torch as t\n"
    swapped += "    def f(x):\n        return t.tensor(x)"
    assert answer_code.not_allowed_used([swapped], ["f"], []) == ["torch"]


def test_the_first_cell_refuses_the_checks_and_the_frameworks():
    """In a fresh interpreter, as in a kernel: after the grader's first cell no answer key can be imported."""
    import subprocess
    import sys

    probe = (
        kernel.FIRST_CELL
        + "\nimport sys\nprint(sorted(m for m in sys.modules if m.startswith('chainrule.exercises.')))\n"
        + "for name in ('chainrule.exercises.feedback', 'chainrule.exercises.scalar', 'torch'):\n"
        + "    try:\n        __import__(name)\n    except ModuleNotFoundError as error:\n        print(error)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded, *refused = run.stdout.splitlines()
    assert "feedback" not in loaded and "scalar" not in loaded and "kernel" in loaded
    assert [line.split(":")[0] for line in refused] == [
        "No module named 'chainrule.exercises.feedback'",
        "No module named 'chainrule.exercises.scalar'",
        "No module named 'torch'",
    ]


def test_no_process_of_the_notebook_outlives_it(tmp_path):
    """A daemon that left its parent's session is adopted, and stopped, before the record is read."""
    import subprocess
    import sys

    pid_file = tmp_path / "daemon"
    script = (
        "import os, sys, time\nfrom chainrule.exercises import processes\n"
        "assert processes.adopt_orphans()\n"
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n        time.sleep(60)\n    os._exit(0)\n"
        f"while not os.path.exists({str(pid_file)!r}):\n    time.sleep(0.05)\n"
        "time.sleep(0.2)\nprint(processes.stop_descendants())\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert int(run.stdout.strip() or 0) >= 1, run.stderr  # the daemon (and its parent, a zombie)
    import psutil

    pid = int(pid_file.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_one_answer_that_is_too_large_or_crashes_costs_only_itself():
    """A 150 MB answer fails alone; an answer that kills the kernel leaves the others' parts of the record."""
    import nbformat

    tests = {"q.py": RULES + "\nchainrule_parts = [['matmul_vjp', None], ['ce_grad', None]]\n"}
    given = grading.inputs(tests, SECRET)
    right = grading.reference_names(REFERENCE)
    huge = {"matmul_vjp": lambda A, B, G: (np.zeros(20_000_000), A.T @ G), "ce_grad": right["ce_grad"]}
    data = json.loads(json.dumps(kernel.record(huge, given, show=False)))
    results = grading.score(tests, data, "", SECRET)["q"].test_case_results
    assert [r.passed for r in results] == [False, True]
    assert "returned more than 1,000,000 numbers" in results[0].message
    # The kernel died while it called ce_grad: what it showed before is read, part by part.
    shown = [
        {"output_type": "display_data", "metadata": {}, "data": {kernel.RECORD_TYPE: json.dumps(part)}}
        for part in (
            {"values": {}, "calls": {}, "used": [], "defined": ["matmul_vjp", "ce_grad"]},
            {"calls": {"matmul_vjp": kernel.record(right, given, show=False)["calls"]["matmul_vjp"]}},
        )
    ]
    cell = nbformat.v4.new_code_cell("", outputs=[nbformat.from_dict(output) for output in shown])
    data, problem = grading.parse_record(kernel.shown_record(cell))
    results = grading.score(tests, data, problem, SECRET)["q"].test_case_results
    assert [r.passed for r in results] == [True, False]
    assert "the kernel stopped while the grader called ce_grad" in results[1].message
    assert kernel.shown_record(nbformat.v4.new_code_cell("")) is None
    assert grading.parse_record(None) == (None, grading.NO_RECORD)


def test_the_otter_plugin_imports_the_checks_before_the_kernel_runs(tmp_path):
    """Under otter run (Gradescope) the plugin imports all that scoring needs before the kernel starts, and
    gives the kernel the inputs alone: a notebook that rewrites the installed checks changes nothing."""
    import subprocess
    import sys

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "q.py").write_text(NEURON_TESTS["q.py"])
    script = (
        "import sys, nbformat\nfrom chainrule.exercises.otter_plugin import TrustedScores\n"
        "before = 'chainrule.exercises.feedback' in sys.modules\n"
        f"plugin = TrustedScores({str(tmp_path / 's.ipynb')!r}, {{}}, {{}})\n"
        "graded = plugin.before_execution(nbformat.v4.new_notebook())\n"
        "print(before, 'chainrule.exercises.feedback' in sys.modules, 'chainrule.exercises.scalar' in sys.modules)\n"
        "print(graded.cells[-1].source)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    said = "".join(line + "\n" for line in run.stdout.splitlines() if not line.startswith("chainrule: "))
    imported, last_cell = said.split("\n", 1)
    assert imported == "False True True"
    assert "_grader_kernel.record(" in last_cell
    for secret_part in ("math.tanh", "feedback", "seed", "chainrule_reference"):
        assert secret_part not in last_cell

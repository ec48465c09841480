"""chainrule_course.grading.scoring: each answer's cell runs apart, with only what its exercise allows; scores as data.

* Every value a check can receive survives encode/decode: arrays keep dtype and shape, tuples
  stay tuples, a deque, a dict's values, a generator or a Fraction arrive as a check reads them,
  and a value of another type becomes an object of the same type name. No student object
  crosses: a float subclass arrives as its plain value.
* The answer cell runs alone: what the notebook's other cells do (a stash of a forbidden
  function, a magic line, a hook, a forged record) never reaches it, and a name it takes from
  another cell is said to be there.
* Only the exercise's modules exist: torch, jax, sympy, chainrule and numpy are refused where
  not allowed, with the rule's message; the recursion limit is Python's default.
* Inputs reach the answer only after its cell has run, one call at a time, each under its limit.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from examples import GENERIC, UNLOCK, UNLOCKS
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chainrule_course.exercises import answers, calling
from chainrule_course.grading import apart, grade, runner, scoring, wire

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
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return type(a) is type(b) and a == b


@given(values)
def test_values_survive_the_trip_as_json(value):
    assert same(value, scoring.decode(json.loads(json.dumps(scoring.encode(value)))))


def test_what_a_check_reads_as_a_sequence_arrives_as_a_list_and_no_student_object_crosses():
    from collections import deque

    class Sneaky(float):
        def __float__(self):
            raise AssertionError("a student's method ran")

    assert scoring.decode(scoring.encode(deque([1, 2]))) == [1, 2]
    assert scoring.decode(scoring.encode({"a": 1.5}.values())) == [1.5]
    assert scoring.decode(scoring.encode(x * 2 for x in range(3))) == [0, 2, 4]
    assert scoring.decode(scoring.encode((Fraction(1, 4), Sneaky(2.5)))) == (0.25, 2.5)
    assert type(scoring.decode(scoring.encode(Sneaky(2.5)))) is float
    assert scoring.decode(scoring.encode(np.float32(1.5))).dtype == np.float32
    other = scoring.decode(scoring.encode(object()))
    assert repr(other) == "<object>"
    with pytest.raises(answers.AnswerError, match="should be numbers"):
        answers.check_array("x", scoring.decode(scoring.encode({1, 2})), np.zeros(2))


# --------------------------------------------------------------------------- one answer, apart


def called(cell: str, name: str, *args, allowed=(), limit=apart.TIME_LIMIT, others=()):
    """``name`` of ``cell`` called apart on ``args``, through calling.call as a check calls it."""
    rule = apart.AnswerRule(tuple(allowed), apart.carried([*others, cell], cell, [name], allowed))
    answer = apart.Answer(apart.answer_code(cell, [name]), rule, limit=limit)
    try:
        elsewhere = scoring.elsewhere([*others, cell], cell)

        class Stand:
            __name__ = name

            def __call__(self, *given):
                return apart.result_of(name, answer.call(name, apart.key(given, {})), elsewhere)

        return calling.call(name, Stand(), *args, time_limit=limit)
    finally:
        answer.close()


def test_a_call_returns_what_the_answer_returned_and_raises_what_it_raised():
    assert called("def f(x):\n    return x * 2\n", "f", 4) == 8
    with pytest.raises(answers.NotAnswered):
        called("def f(x):\n    raise NotImplementedError('Exercise 6.2 is not answered yet: write f')\n", "f", 1)
    with pytest.raises(
        answers.AnswerError, match=r"f raised ZeroDivisionError in line 2 of f \(`return 1 / x`\): division by zero$"
    ):
        called("def f(x):\n    return 1 / x\n", "f", 0)
    with pytest.raises(answers.AnswerError, match="f raised SystemExit"):
        called("import sys\ndef f(x):\n    sys.exit(3)\n", "f", 0)
    with pytest.raises(answers.AnswerError, match="f changed its argument 1 in place"):
        calling.call("f", lambda x: apart.result_of("f", _entry("def f(x):\n    x[0] = 1\n", x), {}), np.zeros(2))


def _entry(cell, *args, allowed=("numpy",)):
    answer = apart.Answer(cell, apart.AnswerRule(allowed))
    try:
        return answer.call("f", apart.key(args, {}))
    finally:
        answer.close()


@pytest.mark.parametrize(
    "cell, allowed, refused",
    [
        ("import torch\ndef f(x):\n    return torch.tensor(x)", ("numpy",), "torch"),
        ("def f(x):\n    import jax.numpy as jnp\n    return x", ("numpy",), "jax.numpy"),
        ("import sympy\ndef f(x):\n    return sympy.diff(x)", ("numpy",), "sympy"),
        ("from chainrule import grad\ndef f(x):\n    return grad(x)", ("numpy",), "chainrule.grad"),
        ("from chainrule import Value\ndef f(x):\n    return Value(x)", ("math",), "chainrule.Value"),
        ("import numpy as np\ndef f(x):\n    return np.tanh(x)", ("math",), "numpy"),
        (
            "import importlib\ndef f(x):\n"
            "    return importlib.import_module('chainrule_course.exercises.scalar_checks')",
            (),
            "chainrule_course",
        ),
        # The engine allowed is not the grader's code: the course is another package, never shown.
        (
            "from chainrule_course.exercises import answers\ndef f(x):\n    return answers",
            ("chainrule",),
            "chainrule_course.exercises.answers",
        ),
        ("def f(x):\n    return __import__('networkx')", (), "networkx"),
    ],
)
def test_only_what_the_exercise_allows_exists(cell, allowed, refused):
    """The answer cell's process has the standard library and the allowed modules: what the answer uses beyond
    them is refused, by name, in the rule's words (before, the ast search missed a built name or importlib)."""
    with pytest.raises(answers.AnswerError) as error:
        called(cell, "f", 1, allowed=allowed)
    assert str(error.value).startswith(f"Your answer uses {refused}, which this exercise does not allow"), error.value
    assert error.value.mistake == apart.NOT_ALLOWED


def test_the_answer_cell_runs_alone():
    """A stash of Value.backward, a magic line and a hook in other cells never run; their names are said to be
    there. A function of another cell and the standard library's imports are carried with the answer."""
    others = [
        "from chainrule import Value\n_bw = Value.backward",
        "%time stash = Value.backward",
        "get_ipython().events.register('post_run_cell', lambda result: None)",
        "import math\nimport numpy as np\nSCALE = 2",
        "def helper(x):\n    return 2 * twice(x)\n\ndef twice(x):\n    return math.sqrt(x) * 2",
        "def scaled(x):\n    return x * SCALE",
    ]
    for name, said in (
        ("_bw", "`_bw`, which is defined in another cell"),
        ("stash", "`stash`, which is defined in another cell"),
        ("Value", "`Value`, which another cell imports"),
        ("np.sqrt", "`np`, which another cell imports"),
        ("scaled", "`SCALE`, which is defined in another cell: the answer cell runs on its own, so move `SCALE`"),
    ):
        with pytest.raises(answers.AnswerError, match=said) as error:
            called(f"def f(x):\n    return {name}(x)\n", "f", 1, others=others)
        assert error.value.mistake == apart.ANOTHER_CELL
    assert called("def f(x):\n    return helper(x)\n", "f", 4.0, others=others) == 8.0
    carried = apart.carried(others, "def f(x):\n    return helper(x)\n", ["f"], ())
    expected = ["import math", "", "def helper(x):", "    return 2 * twice(x)", "", "def twice(x):"]
    assert carried.splitlines() == [*expected, "    return math.sqrt(x) * 2"]


def test_the_answer_is_every_statement_that_defines_or_fills_it():
    """Honest cells that lost every point when only definitions ran: a table filled by a loop, an import with a
    fallback, a function under an ``if``; the statements that neither define nor fill it do not run."""
    cells = {
        "filled by a loop": "TABLE = {}\nfor k in range(4):\n    TABLE[k] = k * k\nTABLE.update({9: 81})\n"
        "def f(x):\n    return TABLE[x]\n",
        "a fallback": "try:\n    from math import comb\nexcept ImportError:\n    def comb(n, k):\n        return 0\n"
        "def f(x):\n    return 3 * comb(x, 2)\n",
        "under an if": "import sys\nif sys.version_info >= (3, 8):\n    def f(x):\n        return x * x\n"
        "else:\n    def f(x):\n        return 0\n",
    }
    for name, cell in cells.items():
        assert called(cell + "print(f(3))\nimport torch\n", "f", 3) == 9, name
    assert apart.top_level(cells["under an if"]).keys() >= {"sys", "f"}


IPYTHON_CELL = """import math
math.sqrt?
def f(x):
    same = (x
            != 0)
    return x * x if same else 0.0
x_other = 7
%timeit f(2.0)
%time g = f
files = !ls
print(f(X_FROM_ANOTHER_CELL))
"""


def test_ipython_syntax_in_an_answer_cell_is_read_as_ipython_reads_it():
    """A help line (``math.sqrt?``) left in the answer cell, a continuation line that starts with ``!=``, a
    shell escape and a test print of another cell's variable: the cell is the answer, as IPython reads it
    (the help line passed the check and scored 0; the ``!=`` line blamed the print's variable)."""
    python = apart.as_python(IPYTHON_CELL).splitlines()
    assert len(python) == len(IPYTHON_CELL.splitlines())
    assert python[1] == "pass" and python[4] == "            != 0)" and python[8:10] == ["g = f", "pass"]
    assert apart.top_level(IPYTHON_CELL).keys() == {"math", "f", "x_other", "g"}  # a shell runs nothing here
    assert called(IPYTHON_CELL, "f", 3.0) == 9.0
    graded = scoring.record_apart([IPYTHON_CELL], {"calls": {"f": [apart.key((3.0,), {})]}}, apart.Answer)
    assert apart.result_of("f", graded["calls"]["f"][0]) == 9.0
    assert apart.as_python("%%capture\nx = 1\n!ls\n") == "\nx = 1\n\n"  # a cell magic: its own lines


def test_of_the_answer_cell_only_what_the_answer_reaches_runs():
    """A check of the answer against the engine in the same cell, a print, a plot: they do not run apart;
    the answer's helpers, constants and imports in its cell do, and keep their line numbers."""
    cell = (
        "import math\nK = 3\n\ndef helper(v):\n    return K * v\n\n"
        "def f(x):\n    return helper(math.sqrt(x)), [x for x in range(2)]\n\n"
        "x = Value(1.3)\n(x * x).backward()\nprint(f(4))\n"
    )
    code = apart.answer_code(cell, ["f"])
    assert "Value" not in code and "print" not in code and code.splitlines()[6] == "def f(x):"
    assert called(cell, "f", 4.0, allowed=("math",)) == (6.0, [0, 1])
    with pytest.raises(answers.AnswerError, match=r"in line 8 of f \(`return helper\(math.sqrt\(x\)\)"):
        called(cell, "f", -1.0, allowed=("math",))


def test_the_recursion_limit_is_python_s_default_whatever_the_cell_sets():
    cell = "import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
    assert called(cell, "f", 500) == 500
    with pytest.raises(answers.AnswerError, match="RecursionError.* 1,000 calls deep. Keep the path"):
        called(cell, "f", 5000)


def test_generic_differentiators_are_seen_by_what_they_do_and_put_up_for_review():
    """Extrapolated differences, the complex step and dual numbers, written so that the review's scan of the
    code misses them, are seen doing what no derivation does; a derivation written any way is not. Only the
    reasons' own words are read of what the answer's process says."""
    right = (-1.2694791799649168, 0.3173697949912292, 0.6347395899824584)
    for kind, (cell, seen) in GENERIC.items():
        assert seen == [] or grade.review_reasons([cell]) == [], (kind, grade.review_reasons([cell]))
        answer = apart.Answer(cell, apart.AnswerRule(("math",)))
        try:
            entry = answer.call("grads", apart.key((0.5, -2.0, 0.3), {}))
        finally:
            answer.close()
        assert entry.get("did", []) == seen, (kind, entry)
        tolerance = 1e-4 if "nearby" in seen else 1e-15  # the others are exact
        got = apart.result_of("grads", entry)[: 1 if kind == "richardson-inline" else 3]
        assert all(abs(a - b) <= tolerance for a, b in zip(got, right, strict=False)), (kind, entry)
        reasons = scoring.seen_doing({"calls": {"grads": [entry]}})
        assert reasons == [scoring.DID[word] for word in seen], (kind, reasons)
    # An array's numerical derivative, extrapolated; and one that is not (the tensors chapter asks for it).
    richardson = (
        "import numpy as np\ndef f(W):\n    return float(np.tanh(W).sum())\n"
        "def grads(W, steps):\n    G = np.zeros_like(W)\n    for i in range(W.size):\n"
        "        E = np.zeros_like(W)\n        E.flat[i] = 1.0\n"
        "        d = [(f(W + h * E) - f(W - h * E)) / (2 * h) for h in steps]\n"
        "        G.flat[i] = (4 * d[-1] - d[0]) / 3 if len(d) > 1 else d[0]\n    return G\n"
    )
    complex_step = (
        "import numpy as np\ndef f(W):\n    return np.tanh(W).sum()\ndef grads(W, steps):\n"
        "    G = np.zeros_like(W)\n    for i in range(W.size):\n        E = np.zeros(W.shape, complex)\n"
        "        E.flat[i] = steps[0] * (-1) ** 0.5\n        G.flat[i] = f(W + E).imag / steps[0]\n    return G\n"
    )
    W = np.linspace(-1, 1, 6).reshape(2, 3)
    cases = [(richardson, (1e-3, 5e-4), ["nearby"]), (richardson, (1e-5,), []), (complex_step, (1e-20,), ["complex"])]
    for cell, steps, seen in cases:
        answer = apart.Answer(cell, apart.AnswerRule(("numpy",)))
        try:
            entry = answer.call("grads", apart.key((W, steps), {}))
        finally:
            answer.close()
        assert entry.get("did", []) == seen, (steps, entry)
        np.testing.assert_allclose(apart.result_of("grads", entry), 1 - np.tanh(W) ** 2, rtol=1e-5)
    forged = {"calls": {"grads": [{"did": ["<script>", 7, "complex"]}, {"did": "nearby"}, "x"]}, "values": None}
    assert scoring.seen_doing(forged) == [scoring.DID["complex"]]


RAISES_IN_CALL = """import sys
def f(n):
    sys.setrecursionlimit(10**6)
    return 0 if n == 0 else 1 + f(n - 1)
"""
RAISES_BY_CTYPES = """import ctypes
def f(n):
    ctypes.pythonapi.Py_SetRecursionLimit(10**6)
    return g(n)
def g(n):
    return 0 if n == 0 else 1 + g(n - 1)
"""
UNLOCKED = (
    UNLOCK
    + """def f(n):
    unlock()
    return g(n)
def g(n):
    return 0 if n == 0 else 1 + g(n - 1)
"""
)
IN_A_CHILD = """import subprocess, sys
def f(n):
    code = "import sys; sys.setrecursionlimit(10**6); print(%d)" % n
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout)
"""


def test_a_call_cannot_raise_the_recursion_limit_so_without_recursion_holds_by_construction():
    """Raising the limit inside the call changes nothing (and the message says so); raising it another way fails."""
    assert called(RAISES_IN_CALL, "f", 500) == 500
    with pytest.raises(answers.AnswerError, match=r"Its sys.setrecursionlimit\(1000000\) changed nothing"):
        called(RAISES_IN_CALL, "f", 5000)
    with pytest.raises(answers.AnswerError, match="f raised PermissionError.*may not use ctypes.dlsym"):
        called(RAISES_BY_CTYPES, "f", 5)
    for route, reach in UNLOCKS.items():  # the interpreter's own limit holds: nothing reaches its setter
        assert called(UNLOCKED.replace("{route}", reach), "f", 500) == 500, route
        with pytest.raises(answers.AnswerError, match="RecursionError.*1,000 calls deep"):
            called(UNLOCKED.replace("{route}", reach), "f", 5000)
    with pytest.raises(answers.AnswerError, match="may not import _posixsubprocess: it starts processes"):
        called(IN_A_CHILD, "f", 5)
    page = apart.InProcess(RAISES_IN_CALL, apart.AnswerRule(()))
    limit, trace = sys.getrecursionlimit(), sys.gettrace()
    with pytest.raises(RecursionError) as raised:
        apart.result_of("f", page.call("f", apart.key((5000,), {})))
    assert raised.value.asked_limit == "1000000"
    assert sys.getrecursionlimit() == limit and type(sys.setrecursionlimit).__name__ == "builtin_function_or_method"
    assert sys.gettrace() is trace  # the page's Python gets its trace function back


#: A thread started in one call that starts processes between calls (by os.fork, and by subprocess's C
#: part, which skips the event Popen raises), and a call that asks for more memory than a submission has.
FORKS_BETWEEN_CALLS = """import os, threading, time
done = []
def later():
    time.sleep(0.2)
    for start in (os.fork, lambda: __import__("_posixsubprocess")):
        try:
            done.append(start() != 0 and "started")
        except Exception as error:
            done.append(type(error).__name__)
def f(n):
    if n == 0:
        threading.Thread(target=later).start()
        return []
    if n == 1:
        time.sleep(0.5)
        return done
    return len(bytearray(n))
"""


def test_an_answer_starts_no_process_even_between_calls_and_has_one_submission_s_memory():
    """A thread can fork between calls (the audit hook refused processes only during a call), and a trial's
    answer held 4.6 GB in 9 processes where no cgroup capped the submission: one process, within its limit."""
    from chainrule_course.grading import sandbox

    answer = apart.Answer(FORKS_BETWEEN_CALLS, apart.AnswerRule(()), popen=sandbox.answer_popen(60))
    try:
        assert apart.result_of("f", answer.call("f", apart.key((0,), {}))) == []
        assert apart.result_of("f", answer.call("f", apart.key((1,), {}))) == ["PermissionError"] * 2
        assert apart.result_of("f", answer.call("f", apart.key((2**20,), {}))) == 2**20
        with pytest.raises(MemoryError):
            apart.result_of("f", answer.call("f", apart.key((sandbox.SUBMISSION_MEMORY + 2**20,), {})))
    finally:
        answer.close()


def test_the_inputs_reach_the_answer_only_after_its_cell_has_run():
    """A cell that reads the process's input while it runs finds nothing there: it waits, and runs out of time."""
    cell = "import sys\nSEEN = sys.stdin.readline()\ndef f(x):\n    return SEEN\n"
    with pytest.raises(answers.AnswerError, match="did not return within 0.5 s"):
        called(cell, "f", 1, limit=0.5)


def test_each_call_has_its_own_limit():
    """Five calls of 0.3 s each under a 1 s limit are all kept, though together they take 1.5 s (before, a
    part shared one cell's limit). The 0.7 s to spare per call keep it so on a busy machine."""
    answer = apart.Answer(
        "import time\ndef f(x):\n    time.sleep(0.3)\n    return x\n", apart.AnswerRule(()), limit=1.0
    )
    try:
        assert [apart.result_of("f", answer.call("f", apart.key((i,), {}))) for i in range(5)] == list(range(5))
    finally:
        answer.close()
    slow = apart.Answer("import time\ndef f(x):\n    time.sleep(5)\n", apart.AnswerRule(()), limit=0.5)
    try:
        entries = [slow.call("f", apart.key((i,), {})) for i in range(3)]
    finally:
        slow.close()
    assert [entry["error"]["type"] for entry in entries] == ["_TimeUp"] * 3


def test_a_crash_costs_the_call_that_crashed():
    answer = apart.Answer(
        "import os\ndef f(x):\n    if x == 1:\n        os._exit(9)\n    return x\n", apart.AnswerRule(())
    )
    try:
        entries = [answer.call("f", apart.key((x,), {})) for x in (0, 1, 2)]
    finally:
        answer.close()
    assert entries[0] == {"result": 0} and entries[2] == {"result": 2}
    assert entries[1]["error"]["message"] == "the answer's process stopped during this call (exit code 9)"


def test_too_large_an_answer_fails_alone():
    entry = _entry("import numpy as np\ndef f(x):\n    return np.zeros(2_000_000)\n", 1)
    assert entry["error"]["type"] == "AnswerTooLarge"


def test_the_web_page_s_python_runs_the_same_rule_in_a_namespace_of_its_own():
    answer = apart.InProcess("import math\ndef f(x):\n    return math.sqrt(x)\n", apart.AnswerRule(("math",)))
    assert apart.result_of("f", answer.call("f", apart.key((4.0,), {}))) == 2.0
    refused = apart.InProcess("import numpy\ndef f(x):\n    return x\n", apart.AnswerRule(("math",)))
    with pytest.raises(apart.Refused, match="uses numpy, which this exercise does not allow"):
        apart.result_of("f", refused.call("f", apart.key((1,), {})))


# --------------------------------------------------------------------------- scoring

HEAD = "from otter.test_files import test_case\n\nOK_FORMAT = False\n\nname = 'q'\npoints = 2\n\n"
NEURON = """def tanh_neuron_grads(x, w, b):
    slope = 1 - math.tanh(w * x + b) ** 2
    return slope * w, slope * x, slope
"""
NEURON_TESTS = {
    "q.py": HEAD
    + """@test_case(points=None, hidden=False)
def test_q(tanh_neuron_grads):
    from chainrule_course.exercises import feedback
    feedback.check_tanh_neuron_grads_function(tanh_neuron_grads)

@test_case(points=None, hidden=True)
def test_q_hidden(tanh_neuron_grads):
    from chainrule_course.exercises import feedback
    for seed in (11, 12):
        feedback.check_tanh_neuron_grads_function(tanh_neuron_grads, seed=seed)
"""
    + f"chainrule_reference = {'import math' + chr(10) + NEURON!r}\nchainrule_allowed = ['math']\n"
}
SECRET = b"the grader's secret"


def graded(tests: dict, cells: list[str], secret: bytes = SECRET) -> dict:
    """Inputs chosen, each answer's cell run apart, scored as the grader does: test name -> test file."""
    given = scoring.inputs(tests, secret)
    data = scoring.record_apart(cells, given, lambda source, rule, values: apart.Answer(source, rule, values))
    return scoring.score(tests, json.loads(json.dumps(data)), "", secret)


def test_the_inputs_hold_nothing_but_inputs():
    """No check, reference, seed or expected value is among the inputs; the hidden ones come from the secret."""
    from chainrule_course.exercises import scalar_checks as scalar

    given = scoring.inputs(NEURON_TESTS, SECRET)
    text = json.dumps(given)
    assert set(given) == {"calls", "values", "allowed"} and given["allowed"] == {"tanh_neuron_grads": ["math"]}
    for secret_part in ("math.tanh", "feedback", "seed", "check", "slope"):
        assert secret_part not in text
    points = [tuple(scoring.decode(json.loads(k)[0])) for k in given["calls"]["tanh_neuron_grads"]]
    assert points[:2] == scalar.neuron_points(0) and len(points) == 6
    unsalted = scalar.neuron_points(11) + scalar.neuron_points(12)
    assert not set(points[2:]) & set(unsalted), "the hidden inputs are not those of the seeds in the source"
    assert graded(NEURON_TESTS, ["import math\n" + NEURON])["q"].score == 2


def test_an_answer_right_only_on_the_public_inputs_earns_nothing():
    from chainrule_course.exercises import scalar_checks as scalar

    table = {}
    for x, w, b in scalar.neuron_points(0):
        slope = 1 - np.tanh(w * x + b) ** 2
        table[(x, w, b)] = (float(slope * w), float(slope * x), float(slope))
    cell = f"TABLE = {table!r}\ndef tanh_neuron_grads(x, w, b):\n    return TABLE[(x, w, b)]\n"
    (result,) = graded(NEURON_TESTS, [cell]).values()
    assert result.score == 0
    public = [r.message for r in result.test_case_results if not r.test_case.hidden]
    assert public and all(scoring.PUBLIC_ONLY in message for message in public)


def test_the_last_cell_that_defines_an_answer_is_its_cell():
    first = "def tanh_neuron_grads(x, w, b):\n    return 0.0, 0.0, 0.0\n"
    assert graded(NEURON_TESTS, [first, "import math\n" + NEURON])["q"].score == 2
    assert graded(NEURON_TESTS, ["import math\n" + NEURON, first])["q"].score == 0
    assert graded(NEURON_TESTS, ["x = 1"])["q"].score == 0  # no cell defines it


def test_a_broken_cell_fails_with_where_it_broke():
    (result,) = graded(NEURON_TESTS, ["def tanh_neuron_grads(x, w, b):\n    return (\n"]).values()
    assert result.score == 0 and "SyntaxError" in result.test_case_results[0].message
    assert "while its cell ran" in result.test_case_results[0].message


def test_a_record_that_is_missing_scores_nothing_with_why():
    [result] = scoring.score(NEURON_TESTS, None, "not a readable notebook").values()
    assert result.score == 0 and "not a readable notebook" in result.test_case_results[0].message


WEIGHTS = (
    HEAD
    + """@test_case(points=None, hidden=False)
def test_q(d2l_weight_grads):
    from chainrule_course.exercises import feedback
    feedback.check_d2l_weight_grads_function(d2l_weight_grads, seed=0)
"""
)
WEIGHTS_ANSWER = """def d2l_weight_grads(X, y, W1, W2, lam):
    Z = X @ W1.T
    H = np.maximum(Z, 0)
    O = H @ W2.T
    P = np.exp(O - O.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    dO = (P - np.eye(W2.shape[0])[y]) / len(X)
    dZ = (dO @ W2) * (Z > 0)
    return dZ.T @ X + lam * W1, dO.T @ H + lam * W2{wrong}
"""
WEIGHTS += f"chainrule_reference = {'import numpy as np' + chr(10) + WEIGHTS_ANSWER.format(wrong='')!r}\n"
WEIGHTS += "chainrule_allowed = ['numpy']\n"


def test_each_quantity_earns_its_share():
    """One answer, two quantities: a right ∂J/∂W1 earns its point when ∂J/∂W2 misses λ·W2."""
    parts = "\nchainrule_parts = [['d2l_weight_grads', 'dJ/dW1'], ['d2l_weight_grads', 'dJ/dW2']]\n"
    wrong = WEIGHTS_ANSWER.format(wrong=" - lam * W2")
    (result,) = graded({"q.py": WEIGHTS + parts}, [wrong]).values()
    assert result.score == 1 and [r.passed for r in result.test_case_results] == [True, False]
    assert "the weight-decay term λ·W2 is missing" in result.test_case_results[1].message
    assert result.mistakes == ["the weight-decay term λ·W2 is missing"]
    assert graded({"q.py": WEIGHTS}, [wrong])["q"].score == 0
    assert graded({"q.py": WEIGHTS + parts}, [WEIGHTS_ANSWER.format(wrong="")])["q"].score == 2


def test_a_function_that_changed_its_inputs_fails_as_in_the_notebook():
    scales = WEIGHTS_ANSWER.format(wrong="").replace("    Z = X @ W1.T", "    X /= 255.0\n    Z = X @ W1.T")
    (result,) = graded({"q.py": WEIGHTS}, [scales]).values()
    assert result.score == 0 and result.mistakes == ["an argument changed in place"]
    assert "d2l_weight_grads changed X in place" in result.test_case_results[0].message


# --------------------------------------------------------------------------- the notebook's check, the same way


def run_cells(cells: list[str]) -> list[str]:
    """Run ``cells`` in a fresh kernel, as a student does; what each printed or raised."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(notebook, timeout=120, allow_errors=True).execute()
    said = []
    for cell in notebook.cells:
        outputs = cell.get("outputs", [])
        said.append(" ".join(o.get("text", "") or f"{o.get('ename')}: {o.get('evalue')}" for o in outputs))
    return said


def test_the_notebook_s_check_and_the_grader_give_the_same_verdict():
    """A deque, dict.values() and a Fraction; a helper in another cell; chainrule where 1.2 allows math only."""
    check = (
        "from chainrule_course.exercises import feedback\n"
        "feedback.check_tanh_neuron_grads_function(tanh_neuron_grads)\n"
    )
    body = "    s = 1 - math.tanh(w * x + b) ** 2\n"
    answers_ = {
        "deque": "import math\nfrom collections import deque\ndef tanh_neuron_grads(x, w, b):\n"
        + body
        + "    return deque([s * w, s * x, s])\n",
        "values": "import math\ndef tanh_neuron_grads(x, w, b):\n"
        + body
        + "    return {1: s * w, 2: s * x, 3: s}.values()\n",
        "fraction": "import math\nfrom fractions import Fraction\ndef tanh_neuron_grads(x, w, b):\n"
        + body
        + "    return Fraction(s * w), Fraction(s * x), Fraction(s)\n",
        "helper": "def tanh_neuron_grads(x, w, b):\n    return helper(x, w, b)\n",
        "engine": "from chainrule import Value\ndef tanh_neuron_grads(x, w, b):\n    return Value(1.0), 0.0, 0.0\n",
    }
    helper = "import math\ndef helper(x, w, b):\n" + body + "    return s * w, s * x, s\n"
    cells = [helper]
    for answer in answers_.values():
        cells += [answer, check + "print('right')"]
    said = run_cells(cells)
    in_the_notebook = dict(zip(answers_, said[2::2], strict=True))
    for name, answer in answers_.items():
        (result,) = graded(NEURON_TESTS, [helper, answer]).values()
        right = in_the_notebook[name].strip() == "right"
        assert right == (result.score == 2), (name, in_the_notebook[name], result.test_case_results[0].message)
        if not right:
            notebook_message = in_the_notebook[name].split("AnswerError: ", 1)[1].strip()
            assert notebook_message in result.test_case_results[0].message, (notebook_message, result)
    assert [name for name in answers_ if in_the_notebook[name].strip() == "right"] == [
        "deque",
        "values",
        "fraction",
        "helper",
    ]
    assert "uses chainrule.Value, which this exercise does not allow" in in_the_notebook["engine"]


# --------------------------------------------------------------------------- the sandbox's user, and Gradescope's


def test_an_answer_in_the_sandbox_is_not_root_on_the_host_and_sees_no_site_packages():
    from chainrule_course.grading import sandbox

    assert sandbox.sandbox_available() == "", sandbox.sandbox_available()
    cell = textwrap.dedent(
        """\
        import os, sys, time
        def f(x):
            if x == 1:
                time.sleep(2)
            seen = [p for p in sys.path if os.path.isdir(p)]
            found = [p for p in ('/work', os.path.expanduser('~'), sys.base_prefix + '/lib') if os.path.isdir(p)]
            return os.getuid(), sorted(os.listdir(sys.base_prefix + '/lib/python3.11/site-packages')), seen
        """
    )
    answer = apart.Answer(cell, apart.AnswerRule(("numpy",)), sandbox=sandbox.answer_command)
    try:
        answer.start()
        uid, packages, _ = apart.result_of("f", answer.call("f", apart.key((0,), {})))
        on_the_host = subprocess.run(["ps", "-o", "uid=", "-p", str(_runner_pid(answer))], capture_output=True)
    finally:
        answer.close()
    assert uid == sandbox.NOBODY and packages == []
    assert on_the_host.stdout.strip() == str(sandbox.NOBODY).encode(), on_the_host.stdout


def test_the_sandbox_shows_what_is_allowed_from_a_conda_style_site_packages(tmp_path, monkeypatch):
    """A conda-style Python keeps its packages under its own prefix: the allowed package and the runner's
    files shown from its site-packages are there in the sandbox, and only they (an empty folder was
    mounted over them, and every answer exited 2): the runner answers, and the grader's module beside
    its files is not there."""
    from chainrule_course.grading import sandbox

    packages = tmp_path / "conda" / "lib" / "python3.11" / "site-packages"
    grading = packages / "grader" / "grading"
    for name in ("allowed/deep", "grader/grading", "secret"):
        (packages / name).mkdir(parents=True)
    (packages / "allowed" / "deep" / "kept.py").write_text("")
    for path in apart.RUNNER_FILES:
        shutil.copyfile(path, grading / path.name)
    (grading / "scoring.py").write_text("KEY = 'the answer key'\n")  # beside the runner, never shown
    subprocess.run(["chmod", "-R", "a+rX", str(tmp_path)], check=True)
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path / "conda"))
    sandbox.hidden_packages.cache_clear()
    shown = [packages / "allowed", *(grading / path.name for path in apart.RUNNER_FILES)]
    folders = [str(packages), str(shown[0] / "deep"), str(grading)]
    cell = f"import os\n\ndef f(x):\n    return [sorted(os.listdir(p)) for p in {folders!r}]\n"
    runner_copy = ["/usr/bin/python3", "-I", "-S", str(grading / "runner.py")]
    run = _protocol(sandbox.answer_command(shown, runner_copy), cell)
    sandbox.hidden_packages.cache_clear()
    assert run.returncode == 0, run.stderr[-500:]
    reply = json.loads(run.stdout.splitlines()[-1])
    assert wire.decode(reply["result"]) == [["allowed", "grader"], ["kept.py"], ["runner.py", "wire.py"]], reply


def _runner_pid(answer) -> int:
    """The runner's process under bwrap (bwrap's own child), found by its command line."""
    import psutil

    for child in psutil.Process(answer.process.pid).children(recursive=True):
        command = child.cmdline()
        if command and "python" in Path(command[0]).name and command[-1].endswith("runner.py"):
            return child.pid
    raise AssertionError("no runner process under bwrap")


def test_the_otter_plugin_grades_nothing_as_root_when_no_sandbox_can_run_its_python(tmp_path, monkeypatch):
    """Gradescope's zip put its Python under /root (0700), where bubblewrap cannot run: every part gets 0
    with why, not 6/6, and otter's kernel would get a notebook with no cell."""
    from chainrule_course.grading import otter_plugin

    if os.geteuid() != 0:
        pytest.fail("this test plays Gradescope's autograder, which runs as root")
    hidden = tmp_path / "root-only"
    hidden.mkdir(mode=0o700)
    python = hidden / "python3"
    python.symlink_to(os.path.realpath(sys.executable))
    monkeypatch.setattr(apart.sys, "executable", str(python))
    monkeypatch.setattr(otter_plugin.permissions.sys, "executable", str(python))
    monkeypatch.setenv("CHAINRULE_SANDBOX", "permissions")
    monkeypatch.setattr(otter_plugin.permissions, "elsewhere", lambda: [])  # the checkout stays as it is
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "q.py").write_text(NEURON_TESTS["q.py"])
    plugin = otter_plugin.TrustedScores(None, {}, {})
    plugin.submission_path = str(tmp_path / "s.ipynb")
    plugin.tests = {"q.py": NEURON_TESTS["q.py"]}
    import nbformat

    submission = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import math\n" + NEURON)])
    assert plugin.before_execution(submission).cells == [], "a kernel would run none of the student's code"
    results = type("Results", (), {"results": None})()
    plugin.containerized = True
    plugin.after_grading(results)
    (result,) = results.results.values()
    assert result.score == 0
    assert "not graded: user" in result.test_case_results[0].message
    assert "cannot run" in result.test_case_results[0].message


def launched(command: list[str], popen: dict) -> subprocess.CompletedProcess:
    """``command`` run as :class:`chainrule_course.grading.apart.Answer` starts it: its launcher first."""
    popen = dict(popen)
    return subprocess.run([*popen.pop("launcher"), *command], capture_output=True, text=True, timeout=30, **popen)


def test_no_grading_module_runs_python_in_a_forked_child():
    """No process of the grading is started with ``preexec_fn``: Python in the forked child of a grader
    with threads (JAX's) can deadlock. The launcher (chainrule_course.grading.launch) sets the limits."""
    import ast

    import chainrule_course.grading

    used = []
    for path in sorted(Path(chainrule_course.grading.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = isinstance(node, ast.keyword) and node.arg == "preexec_fn"
            if named or (isinstance(node, ast.Constant) and node.value == "preexec_fn"):
                used.append(f"{path.name}:{getattr(node, 'lineno', '?')}")
    assert used == [], f"preexec_fn in {used}"


GETRLIMITS = (
    "import resource\nnames = ('RLIMIT_CPU', 'RLIMIT_AS', 'RLIMIT_FSIZE', 'RLIMIT_CORE', 'RLIMIT_NPROC')\n"
    "print([list(resource.getrlimit(getattr(resource, name))) for name in names])\n"
)


def test_the_launcher_sets_the_limits_before_the_command_and_stops_when_it_cannot():
    """A process started as the grader starts an answer's (its launcher first) sees its CPU, memory,
    file-size and core limits, and as root its task limit; a setting the launcher cannot apply (a soft
    limit above its hard one, a cgroup that is not there) stops it with a message and a non-zero exit,
    and the command never runs."""
    from chainrule_course.grading import apart, launch, sandbox

    run = launched([sys.executable, "-I", "-S", "-c", GETRLIMITS], sandbox.answer_popen(3.7))
    assert run.returncode == 0, run.stderr
    cpu, memory, size, core, tasks = json.loads(run.stdout)
    assert cpu == [3, 8] and memory == [sandbox.MEMORY_LIMIT] * 2 and size == [sandbox.FILE_LIMIT] * 2, run.stdout
    assert core == [0, 0] and (tasks == [sandbox.SUBMISSION_TASKS] * 2 or os.geteuid() != 0), run.stdout
    if os.geteuid() == 0:  # a task limit of the permission sandbox's size, set as root before the command
        popen = dict(sandbox.answer_popen(60), launcher=launch.command(sandbox.limit_settings(60, tasks=7)))
        assert json.loads(launched([sys.executable, "-I", "-S", "-c", GETRLIMITS], popen).stdout)[4] == [7, 7]
    assert launch.FAILED == apart.LAUNCH_FAILED  # launch.py runs with -I -S: it cannot import apart's
    for impossible in ({"limits": [["RLIMIT_CPU", 10, 5]]}, {"cgroups": ["/nonexistent-chainrule-cgroup"]}):
        popen = dict(sandbox.answer_popen(60), launcher=launch.command(impossible))
        run = launched(["sh", "-c", "echo ran"], popen)
        assert run.returncode == launch.FAILED and "ran" not in run.stdout, run
        assert run.stderr.startswith("launch: ") and "not run" in run.stderr, run.stderr
        # The grader's failure, never the answer's: its cell is not scored as stopped, the grader raises.
        answer = apart.Answer("def f():\n    return 1\n", apart.AnswerRule(()), popen=popen)
        try:
            with pytest.raises(subprocess.SubprocessError, match="for review, not scored"):
                answer.start()
        finally:
            answer.close()


def test_the_permission_sandbox_hides_folders_isolates_the_network_and_leaves_nothing(tmp_path):
    """Where bubblewrap cannot run: an answer's process is a user of its own that cannot read a hidden
    folder, has a network of its own where the kernel allows one, and nothing it started (a detached
    child) outlives the sandbox; the hidden folder gets its mode back."""
    from chainrule_course.grading import permissions

    if os.geteuid() != 0:
        pytest.fail("the permission sandbox is root's: it runs answers as another user")
    import tempfile

    tmp_mode = Path("/tmp").stat().st_mode & 0o7777
    secret = Path(tempfile.mkdtemp(prefix="chainrule-test-source-"))  # in /tmp: every user may enter
    secret.chmod(0o755)
    (secret / "key.txt").write_text("the answer key")
    (secret / "key.txt").chmod(0o644)
    script = f"id -u; cat {secret}/key.txt || echo unread; readlink /proc/self/ns/net; "
    script += "ls /tmp >/dev/null 2>&1 && echo listed || echo unlisted; "
    script += "sleep 4712.5 >/dev/null 2>&1 & echo started"
    reader = permissions.PermissionSandbox([], 10, outside=False)  # the checkout stays as it is
    with reader:  # the key is readable to the sandbox's user when its folder is not hidden
        shown = launched(["cat", f"{secret}/key.txt"], reader.popen())
    assert shown.stdout == "the answer key", shown
    with permissions.PermissionSandbox([secret], 10, outside=False) as jail:
        run = launched(["sh", "-c", script], jail.popen())
        inside = run.stdout.split()
        assert (secret.stat().st_mode & 0o777) == 0o700
    assert inside[0] == str(jail.uid) and inside[1] == "unread" and inside[-1] == "started", run
    assert inside[2] != os.readlink("/proc/self/ns/net"), "the answer shares the grader's network"
    assert inside[3] == "unlisted", "the answer can list /tmp"
    assert (secret.stat().st_mode & 0o777) == 0o755 and (Path("/tmp").stat().st_mode & 0o7777) == tmp_mode
    left = subprocess.run(["pgrep", "-f", "sleep 4712.5"], capture_output=True, text=True).stdout.split()
    assert left == [], "a process the answer started outlived the sandbox"
    shutil.rmtree(secret)


class _Forged:
    """What a forged .OTTER_LOG would hold: unpickling it writes a file (it could run anything)."""

    def __init__(self, mark: str):
        self.mark = mark

    def __reduce__(self):
        return (Path.touch, (Path(self.mark),))


def test_otter_s_kernel_finds_nothing_of_the_student_s_in_the_submission_s_folder(tmp_path):
    """Before otter starts its kernel in the submission's folder (``python -m ipykernel_launcher``, as root on
    Gradescope), the plugin keeps the notebook and leaves there only otter's tests, an empty ``__init__.py``
    and a blank notebook: a module handed in beside it, a forged ``.OTTER_LOG`` (otter unpickles it next),
    a folder and a link are gone, and the link's target is left alone."""
    import pickle
    import types

    import nbformat
    from otter.check.notebook import OTTER_LOG_FILENAME

    from chainrule_course.grading.otter_plugin import OTTER_LOG, TrustedScores

    assert OTTER_LOG == OTTER_LOG_FILENAME
    folder, mark, outside = tmp_path / "submission", tmp_path / "ran", tmp_path / "outside.txt"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "q.py").write_text(NEURON_TESTS["q.py"])
    cells = [nbformat.v4.new_code_cell("import math\n" + NEURON), nbformat.v4.new_markdown_cell("why")]
    notebook = folder / "intro.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata={"otter": {"assignment_name": "intro"}}), notebook)
    (folder / OTTER_LOG).write_bytes(pickle.dumps(_Forged(str(mark))))
    for name in ("ipykernel_launcher.py", "sitecustomize.py", "evil.pth"):
        (folder / name).write_text(f"open({str(mark)!r}, 'w')\n")
    (folder / "__init__.py").write_text(f"open({str(mark)!r}, 'w')\n")  # otter's, appended to by nobody
    (folder / "helpers").mkdir()
    (folder / "helpers" / "__init__.py").write_text("")
    outside.write_text("kept")
    (folder / "link.py").symlink_to(outside)
    plugin = TrustedScores(str(notebook), {}, {"assignment": "intro"})
    config = types.SimpleNamespace(grade_from_log=True, otter_run=False)
    plugin.before_grading(config)
    assert sorted(path.name for path in folder.iterdir()) == ["__init__.py", "intro.ipynb", "tests"]
    assert (folder / "__init__.py").read_text() == "" and (folder / "tests" / "q.py").is_file()
    blank = nbformat.read(notebook, as_version=4)
    assert blank.cells == [] and blank.metadata.kernelspec.name == "python3"
    assert outside.read_text() == "kept" and not mark.exists()
    assert config.grade_from_log is False and plugin.containerized
    given = plugin.before_execution(blank)
    assert given.cells == [] and plugin.cells == [cells[0].source] and not plugin.unreadable


def test_a_script_an_unreadable_notebook_and_another_otter_are_not_graded(tmp_path, monkeypatch):
    """otter grades a ``.py`` when there is no notebook: as make grade does, it gets 0 with the reason, and is
    left empty on disk; so does a notebook that cannot be read (blanked all the same), and every submission
    under an otter-grader other than the one the plugin was read against."""
    import types

    import nbformat

    from chainrule_course.grading import otter_plugin
    from chainrule_course.grading.otter_plugin import TrustedScores

    config = types.SimpleNamespace(grade_from_log=False)
    script = tmp_path / "a" / "ipykernel_launcher.py"
    script.parent.mkdir()
    script.write_text("x = 1\n")
    (script.parent / "helper.py").write_text("")
    plugin = TrustedScores(str(script), {}, {})
    plugin.before_grading(config)
    assert script.read_text() == "" and plugin.handed_in is None
    assert plugin.unreadable == "not graded: a .py file, not a notebook (ask the student for the .ipynb)"
    assert plugin.generate_report().endswith("deleted unread, handed in beside the notebook: helper.py")
    broken = tmp_path / "b" / "s.ipynb"
    broken.parent.mkdir()
    broken.write_text('{"cells": [')
    plugin = TrustedScores(str(broken), {}, {})
    plugin.before_grading(config)
    assert plugin.unreadable.startswith("not graded: s.ipynb is not a readable notebook"), plugin.unreadable
    assert nbformat.read(broken, as_version=4).cells == []
    nbformat.write(nbformat.v4.new_notebook(), broken)
    monkeypatch.setattr(otter_plugin, "OTTER_READ", "6.9.9")
    plugin = TrustedScores(str(broken), {}, {})
    plugin.before_grading(config)
    assert "read against otter-grader 6.9.9, and this is 7.0.0" in plugin.unreadable, plugin.unreadable


def test_gradescope_s_report_gives_the_reasons_for_review_that_make_grade_gives():
    from chainrule_course.grading.otter_plugin import TrustedScores

    plugin = TrustedScores(None, {}, {})
    plugin.guarantee = "a sandbox"
    assert plugin.generate_report() == "chainrule: the answers ran in a sandbox"
    from otter.test_files import GradingResults

    failed = RuntimeError("no kernel")
    assert GradingResults.without_results(failed).catastrophic_error is failed  # what after_grading reads
    plugin.kernel_failed = str(failed)
    assert "otter's own kernel failed (no kernel), so otter scores this submission 0" in plugin.generate_report()
    plugin.kernel_failed = ""
    plugin.review = scoring.seen_doing({"calls": {"grads": [{"did": ["numbers", "nearby"]}]}})
    assert plugin.generate_report().splitlines()[1] == (
        f"For review by the instructor: {scoring.DID['nearby']}; {scoring.DID['numbers']}."
    )


def _module_imports(tree):
    """The imports of a module's own body (those of an ``if`` at its top included), not its functions'."""
    import ast

    found, statements = [], list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            statements += [*node.body, *node.orelse]
    return found


def test_the_runner_needs_only_the_standard_library():
    """The runner starts as ``python -I -S``: its files import nothing of chainrule's, nor numpy, and of its
    own package only each other (the runner its wire module, which it loads from its path as a script)."""
    import ast

    own = {path.stem for path in apart.RUNNER_FILES}
    assert [path.name for path in apart.RUNNER_FILES] == ["runner.py", "wire.py"]
    for path in apart.RUNNER_FILES:
        source = path.read_text(encoding="utf-8")
        assert "from chainrule" not in source and "\nimport numpy" not in source, path.name
        for node in _module_imports(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 and not node.module and {a.name for a in node.names} <= own, path.name
            else:
                tops = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert {top.partition(".")[0] for top in tops} <= runner.STANDARD, (path.name, tops)


def _protocol(command: list[str], cell: str = "import sys\n\ndef f(x):\n    return [x * 2, (x,), sys.path]\n"):
    """``command`` (a runner) sent ``cell``, then the call ``f(21)``, as the runner's docstring says."""
    lines = [{"source": cell, "nonce": "cell"}, {"name": "f", "key": apart.key((21,), {}), "nonce": "call"}]
    given = "".join(json.dumps(line) + "\n" for line in lines)
    return subprocess.run(command, input=given, capture_output=True, text=True, timeout=60)


def test_the_runner_runs_as_a_script_from_its_copies_and_needs_its_wire_module_beside_it():
    """The Gradescope path: :class:`~chainrule_course.grading.permissions.Copies` copies the runner's files, and
    ``python -I -S <copies>/runner.py`` answers from a folder that holds only them (its folder kept off
    sys.path, so nothing beside it is importable); an Answer given the copies runs the copy. A runner
    without wire.py beside it does not start, and a bubblewrap sandbox is shown every file of the runner."""
    from chainrule_course.grading import permissions

    copies = permissions.Copies()
    try:
        assert sorted(path.name for path in copies.folder.iterdir()) == sorted(p.name for p in apart.RUNNER_FILES)
        run = _protocol(apart.python_command(os.path.realpath(sys.executable), copies.runner))
        assert run.returncode == 0, run.stderr[-2000:]
        ready, reply = (json.loads(line) for line in run.stdout.splitlines())
        assert ready == {"ready": True, "values": {}, "nonce": "cell"}
        assert reply["nonce"] == "call", reply
        doubled, tupled, path = wire.decode(reply["result"])
        assert doubled == 42 and tupled == (21,)
        assert str(copies.folder) not in path and str(apart.RUNNER.parent) not in path, path
        answer = apart.Answer("def f(x):\n    return x + 1\n", apart.AnswerRule(()), copies=copies)
        try:
            assert answer.command[-1] == str(copies.runner)
            assert apart.result_of("f", answer.call("f", apart.key((1,), {}))) == 2
        finally:
            answer.close()
        (copies.folder / "wire.py").unlink()
        alone = _protocol(apart.python_command(os.path.realpath(sys.executable), copies.runner))
        assert alone.returncode != 0 and alone.stdout == "" and "wire.py" in alone.stderr, alone
    finally:
        copies.remove()
    shown: list[Path] = []
    apart.Answer("x = 1\n", apart.AnswerRule(()), sandbox=lambda paths, command: shown.extend(paths) or command).close()
    assert set(apart.RUNNER_FILES) <= set(shown), shown


def test_the_notebook_check_fails_when_the_grader_would_run_a_later_draft(tmp_path, monkeypatch):
    """Where Jupyter says which notebook the kernel runs, or in Colab, the check finds the answer by the
    grader's rule: the last cell that defines it."""
    import nbformat
    from test_scalar_checks import as_cell

    from chainrule_course.exercises import feedback

    right = (
        "import math\n\ndef tanh_neuron_grads(x, w, b):\n"
        "    s = 1 - math.tanh(w * x + b) ** 2\n    return s * w, s * x, s\n"
    )
    draft = "def tanh_neuron_grads(x, w, b):\n    return 0.0, 0.0, 0.0\n"
    path = tmp_path / "intro.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    for cells, fails in (([right, draft], True), ([draft, right], False), ([right], False)):
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
        nbformat.write(notebook, path)
        os.utime(path, (1, len(cells) + fails))  # a new time: the saved cells are read again
        if fails:
            with pytest.raises(
                answers.AnswerError,
                match=r"2 cells of intro.ipynb define tanh_neuron_grads, and the grader runs the last",
            ):
                feedback.check_tanh_neuron_grads_function(as_cell(right, "tanh_neuron_grads"))
        else:
            feedback.check_tanh_neuron_grads_function(as_cell(right, "tanh_neuron_grads"))
    # In Colab, the notebook as its editor holds it (unsaved and unrun cells included).
    monkeypatch.delenv("JPY_SESSION_NAME")
    import types

    message = types.ModuleType("google.colab._message")
    held = {"cells": [{"cell_type": "code", "source": right.splitlines(True)}, {"cell_type": "code", "source": draft}]}
    message.blocking_request = lambda kind, timeout_sec=0, **ignored: {"ipynb": held} if kind == "get_ipynb" else {}
    colab = types.ModuleType("google.colab")
    colab._message = message
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    with pytest.raises(answers.AnswerError, match=r"2 cells of this notebook define tanh_neuron_grads"):
        feedback.check_tanh_neuron_grads_function(as_cell(right, "tanh_neuron_grads"))
    held["cells"].pop()
    feedback.check_tanh_neuron_grads_function(as_cell(right, "tanh_neuron_grads"))


#: Runs cells in an IPython shell as a kernel runs them (numbered, kept in its history); prints each cell's number.
SHELL = """import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
for cell in json.loads(sys.argv[1]):
    print(f"<{shell.execution_count}>")
    shell.run_cell(cell, store_history=True)
"""


def in_a_shell(cells: list[str], notebook: Path | None = None) -> str:
    """What running ``cells`` in IPython prints (a notebook file named as Jupyter names it, or none)."""
    import json

    environment = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    environment |= {"JPY_SESSION_NAME": str(notebook)} if notebook else {}
    ran = subprocess.run(
        [sys.executable, "-c", SHELL, json.dumps(cells)], capture_output=True, text=True, env=environment, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    return " ".join(ran.stdout.split())


def test_the_check_everything_cell_checks_the_cell_the_grader_runs_and_says_which(tmp_path):
    """A wrong draft below a passing answer is what the grader runs: the chapter's last cell checks that cell,
    whether the draft ran (Run All where no notebook is named) or not (Jupyter names the notebook), and says
    which cell it checked. A help line in the answer cell (IPython compiles it as a call) passes, as graded."""
    import nbformat

    right = (
        "import math\ndef tanh_neuron_grads(x, w, b):\n    math.tanh?\n"
        "    s = 1 - math.tanh(w * x + b) ** 2\n    return s * w, s * x, s\n"
    )
    draft = "def tanh_neuron_grads(x, w, b):  # first go\n    return w, x, 1.0\n"
    check = (
        "from chainrule_course.exercises import feedback\nwith feedback.exercise('1.4'):\n"
        "    feedback.check_tanh_neuron_grads_function(tanh_neuron_grads)\n    print('it passes')\n"
    )
    everything = (
        "summary = feedback.Summary('Chapter 1')\nwith summary.exercise('1.4'):\n"
        "    feedback.check_tanh_neuron_grads_function(tanh_neuron_grads)\nsummary.show()\n"
    )
    assert scoring.answer_cells([right, check, draft, everything], ["tanh_neuron_grads"]) == {
        "tanh_neuron_grads": draft
    }
    shown = in_a_shell([right, check, draft, everything])
    assert (
        "<2> it passes <3> <4> Chapter 1: 0 of 1 checked exercises pass. "
        "Exercise 1.4: WRONG: tanh_neuron_grads(0.5, -2.0," in shown
    )
    assert "graded: tanh_neuron_grads from `def tanh_neuron_grads(x, w, b): # first go`, run as [3]." in shown
    path = tmp_path / "intro.ipynb"
    stub = "def tanh_neuron_grads(x, w, b):\n    raise NotImplementedError('not answered yet')\n"
    saved = {"draft": [right, check, draft, everything], "one": [right, check, everything], "stale": [stub, everything]}
    for kind, cells in saved.items():
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
        shown = in_a_shell([right, check, everything], path)
        verdict = "WRONG" if kind == "draft" else "passes"
        assert f"Chapter 1: {verdict == 'passes':d} of 1 checked exercises pass. Exercise 1.4: {verdict}" in shown
        if kind == "stale":  # Jupyter saves every two minutes: what ran is checked, and the file must be saved
            assert "run as [1], once you save intro.ipynb: save it." in shown, shown
        elif kind == "draft":
            assert "<2> AnswerError: 2 cells of intro.ipynb define tanh_neuron_grads, and the grader" in shown
            assert (
                "graded: tanh_neuron_grads from `def tanh_neuron_grads(x, w, b): # first go`, the last of the 2 "
                "cells of intro.ipynb that define it, not the cell you ran last ([1]). Delete the drafts of "
                "tanh_neuron_grads and save, then run this cell again." in shown
            ), shown
        else:
            assert "<2> it passes" in shown
            assert (
                "graded: tanh_neuron_grads from `def tanh_neuron_grads(x, w, b):` in intro.ipynb, run as [1]." in shown
            )


PRINTS = "def f(x):\n    for i in range(20_000):\n        print('line', i)\n    return x\n"


def test_what_an_answer_prints_is_shown_capped_the_same_in_the_notebook_and_the_page(capsys):
    """20,000 printed lines: the notebook's check and the page's show the same first lines, then say the rest is cut."""
    from chainrule_course.exercises.calling import show_printed

    shown = []
    for answer in (apart.Answer(PRINTS, apart.AnswerRule(())), apart.InProcess(PRINTS, apart.AnswerRule(()))):
        try:
            for x in (1, 2):
                entry = answer.call("f", apart.key((x,), {}))
                assert len(entry["printed"]) == runner.PRINT_LIMIT and entry["cut"] > 200_000
                show_printed("f", entry, answer)
        finally:
            answer.close()
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1], shown
    lines = shown[0].splitlines()
    assert lines[:3] == ["f printed:", "  line 0", "  line 1"] and len(lines) == calling.PRINT_LINES + 2, lines
    assert lines[-1].startswith("  ... and more, not shown: the check calls f many times"), lines


def test_a_class_from_another_cell_is_carried_as_the_grader_carries_it():
    """The notebook's check carries a helper class defined in another cell, as the grader does (a trial
    found the check refusing it while the grade was full)."""
    import linecache

    from chainrule_course.grading.contract import allowed

    helper = "class Doubler:\n    def __call__(self, x):\n        return 2 * x\n"
    answer = "def f(x):\n    return Doubler()(x)\n"
    namespace = {"__name__": "__main__"}
    for index, source in enumerate((helper, answer)):
        filename = f"<cell class-{index}-{abs(hash(source))}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - two notebook cells

    @allowed()
    def check(f):
        return calling.call("f", f, 4.0)

    assert check(namespace["f"]) == 8.0
    graded = scoring.record_apart([helper, answer], {"calls": {"f": [apart.key((4.0,), {})]}}, apart.Answer)
    assert apart.result_of("f", graded["calls"]["f"][0]) == 8.0


FORGES = """import os
def f(x):
    for descriptor in range(3, 20):
        try:
            os.write(descriptor, b'{"result": {"t": "tuple", "v": []}}\\n')
        except OSError:
            pass
    return x * 2
"""


def test_a_line_the_answer_writes_to_the_reply_channel_is_not_taken_as_its_reply():
    """A trial's answer wrote a reply line to every descriptor it had, and that line was read as its result:
    each request now carries a nonce that only the runner's reply repeats."""
    assert called(FORGES, "f", 4) == 8


def test_a_cell_s_set_up_of_what_it_imports_runs_with_the_answer():
    """``getcontext().prec = 60`` binds no name the answer reads, but sets up what its import gives: it
    runs, in the check and the grade alike (a trial's answer lost its digits). A demo line does not."""
    cell = (
        "from decimal import Decimal, getcontext\ngetcontext().prec = 60\nprint(f(1))\n\n"
        "def f(x):\n    return str(Decimal(1) / Decimal(x))\n"
    )
    kept = apart.answer_code(cell, ["f"])
    assert "getcontext().prec = 60" in kept and "print(f(1))" not in kept
    assert len(called(cell, "f", 3)) == 62  # "0." and 60 digits

"""The checks of ex-intro-derive, ex-graph-dfs-by-hand and ex-backward-cube, whose answers are
functions of their inputs.

Right answers in other forms pass; each planted wrong answer fails with its own mistake
named; an answer that returns the numbers of the public check (pasted from its message)
passes nothing on the hidden tests' inputs.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import io
import json
import math
import re
import sys

import numpy as np
import pytest
import torch
from examples import RECURSIVE_ORDER

from chainrule import topological_order
from chainrule_course.exercises import answers, feedback
from chainrule_course.exercises import scalar_checks as scalar

SEEDS = (0, 11, 12, 21, 22, 31, 32)


def raises(check, answer, seed=0, match=""):
    with pytest.raises(answers.AnswerError, match=match) as caught:
        check(answer, seed=seed)
    return caught.value


# --------------------------------------------------------------------------- ex-intro-derive


def neuron(x, w, b):
    slope = 1 - math.tanh(w * x + b) ** 2
    return slope * w, slope * x, slope


def neuron_torch(x, w, b):
    leaves = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, w, b)]
    torch.tanh(leaves[1] * leaves[0] + leaves[2]).backward()
    return [leaf.grad for leaf in leaves]  # tensors of shape (), which numpy reads


def neuron_mistake(factor):
    return lambda x, w, b: (factor(x, w, b) * w, factor(x, w, b) * x, factor(x, w, b))


NEURON_RIGHT = [
    neuron,
    neuron_torch,
    lambda x, w, b: np.array(neuron(x, w, b), dtype=np.float32),
    lambda x, w, b: list(map(np.float64, neuron(x, w, b))),
]
NEURON_WRONG = {
    "tanh\\(z\\) was used for tanh'\\(z\\)": neuron_mistake(lambda x, w, b: math.tanh(w * x + b)),
    "not 1 - z²": neuron_mistake(lambda x, w, b: 1 - (w * x + b) ** 2),
    "the sign is flipped": lambda x, w, b: tuple(-v for v in neuron(x, w, b)),
    "are swapped": lambda x, w, b: (neuron(x, w, b)[1], neuron(x, w, b)[0], neuron(x, w, b)[2]),
    "not 1 - tanh\\(x\\)²": neuron_mistake(lambda x, w, b: 1 - math.tanh(x) ** 2),
    "is missing": lambda x, w, b: (w, x, 1.0),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("answer", range(len(NEURON_RIGHT)))
def test_right_neuron_grads_pass_every_check(answer, seed):
    feedback.check_tanh_neuron_grads_function(NEURON_RIGHT[answer], seed=seed)


@pytest.mark.parametrize("mistake", NEURON_WRONG)
def test_each_neuron_mistake_is_named_on_public_and_hidden_points(mistake):
    for seed in (0, 11, 12):
        error = raises(feedback.check_tanh_neuron_grads_function, NEURON_WRONG[mistake], seed, mistake)
        assert str(error).startswith("tanh_neuron_grads("), error


def test_a_pasted_neuron_answer_passes_nothing_hidden():
    """The public point's numbers, returned for any input: the second public point and the hidden ones fail."""
    pasted = neuron(*scalar.NEURON_POINT)
    raises(feedback.check_tanh_neuron_grads_function, lambda x, w, b: pasted, 0, r"0 of 3 right")
    for seed in (11, 12):
        raises(feedback.check_tanh_neuron_grads_function, lambda x, w, b: pasted, seed, r"0 of 3 right")
    rounded = lambda x, w, b: tuple(round(v, 4) for v in neuron(x, w, b))  # noqa: E731
    raises(feedback.check_tanh_neuron_grads_function, rounded, 0, "rounded")


def test_neuron_points_keep_the_mistakes_apart():
    for seed in range(50):
        for x, w, b in scalar.neuron_points(seed):
            z = w * x + b
            assert abs(abs(x) - abs(w)) > 0.3 and 0.3 < abs(z) < 1.5
    assert scalar.neuron_points(0)[0] == (0.5, -2.0, 0.5)
    assert scalar.neuron_points(11) != scalar.neuron_points(12)


def reordered(order):
    """tanh_neuron_grads returning the right three derivatives in ``order`` (the index each place holds)."""
    return lambda x, w, b: tuple(neuron(x, w, b)[i] for i in order)


@pytest.mark.parametrize(
    "order, named",
    [
        ((1, 2, 0), r"the derivatives are returned rotated, as \(dy/dw, dy/db, dy/dx\)"),
        ((2, 0, 1), r"the derivatives are returned rotated, as \(dy/db, dy/dx, dy/dw\)"),
        ((2, 1, 0), r"dy/dx and dy/db are swapped: return them in the order"),
        ((0, 2, 1), r"dy/dw and dy/db are swapped: return them in the order"),
        ((1, 0, 2), r"dy/dx and dy/dw are swapped: dy/dx carries w and dy/dw carries x"),
    ],
)
def test_neuron_grads_in_another_order_are_named_by_that_order(order, named):
    """The whole answer names its order: a rotation's dy/dx alone fits the swap of dy/dx and dy/dw, not made."""
    for seed in (0, 11, 12):
        error = raises(feedback.check_tanh_neuron_grads_function, reordered(order), seed, named)
        if order != (1, 0, 2):
            assert "dy/dx and dy/dw are swapped" not in str(error), error
            assert "return them in the order (dy/dx, dy/dw, dy/db)" in str(error), error


def test_what_a_neuron_function_returns_is_explained():
    raises(feedback.check_tanh_neuron_grads_function, lambda x, w, b: neuron(x, w, b)[:2], 0, "returned 2\\.")
    raises(feedback.check_tanh_neuron_grads_function, lambda x, w, b: 0.25, 0, r"returned one float \(0\.25\)")
    raises(feedback.check_tanh_neuron_grads_function, lambda x, w, b: None, 0, "is a `return` missing")
    raises(feedback.check_tanh_neuron_grads_function, 0.2, 0, "should be a function")


# --------------------------------------------------------------------------- ex-backward-cube


def cube(x):
    return x, 3 * x**2


CUBE_WRONG = {
    "lost fan-out contribution: x also feeds y directly": lambda x: (x, 2 * x**2),
    "backward\\(\\) ran twice": lambda x: (2 * x, 6 * x**2),
    "s.grad = x, not the value s": lambda x: (x * x, 3 * x**2),
    "the sign is flipped": lambda x: (-x, -3 * x**2),
}


@pytest.mark.parametrize("seed", SEEDS)
def test_right_cube_grads_pass_every_check(seed):
    feedback.check_cube_grads_function(cube, seed=seed)
    feedback.check_cube_grads_function(lambda x: np.array(cube(x)), seed=seed)
    feedback.check_cube_grads_function(lambda x: (x, x * x + x * x + x**2), seed=seed)


@pytest.mark.parametrize("mistake", CUBE_WRONG)
def test_each_cube_mistake_is_named_on_public_and_hidden_values(mistake):
    for seed in (0, 31, 32):
        raises(feedback.check_cube_grads_function, CUBE_WRONG[mistake], seed, mistake)


def test_a_pasted_cube_answer_passes_nothing_hidden():
    pasted = cube(scalar.CUBE_POINT)
    for seed in (0, 31, 32):
        raises(feedback.check_cube_grads_function, lambda x: pasted, seed, "0 of 2 right|dy/d. is wrong")
    for seed in range(50):
        assert all(min(abs(x), abs(abs(x) - 1)) > 0.3 for x in scalar.cube_points(seed))


# --------------------------------------------------------------------------- ex-graph-dfs-by-hand


def defined(source: str, name: str):
    """The function ``name`` that an answer cell's ``source`` defines."""
    namespace = {}
    exec(source, namespace)
    return namespace[name]


recursive = defined(RECURSIVE_ORDER, "dfs_order_with_stack")


def with_stack(root, parents):
    order, seen, path, unexplored = [], {root}, [root], [iter(parents[root])]
    while path:
        for parent in unexplored[-1]:
            if parent not in seen:
                seen.add(parent)
                path.append(parent)
                unexplored.append(iter(parents[parent]))
                break
        else:
            unexplored.pop()
            order.append(path.pop())
    return order


def pushed_all_at_once(root, parents):
    """The common iterative post-order: push a node's parents, emit on the second visit. Parents come last first."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
        elif node not in seen:
            seen.add(node)
            stack.append((node, True))
            stack.extend((parent, False) for parent in parents[node] if parent not in seen)
    return order


def pre_order(root, parents):
    order, seen, stack = [], set(), [root]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            order.append(node)
            stack.extend(reversed(parents[node]))
    return order


def breadth_first(root, parents):
    """A breadth-first search with a queue: the nodes in the order it first reaches them, root first."""
    order, seen, queue = [], {root}, collections.deque([root])
    while queue:
        node = queue.popleft()
        order.append(node)
        for parent in parents[node]:
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)
    return order


def reversed_breadth_first(root, parents):
    """Breadth-first search, reversed so that the root comes last: from e, parents last first give this order too."""
    return breadth_first(root, parents)[::-1]


def no_seen_set(root, parents):
    order, path, unexplored = [], [root], [iter(parents[root])]
    while path:
        for parent in unexplored[-1]:
            path.append(parent)
            unexplored.append(iter(parents[parent]))
            break
        else:
            unexplored.pop()
            order.append(path.pop())
    return order


def pops_the_parents(root, parents):
    """Right order, but it uses the caller's lists as its stacks and empties them."""
    order, seen, path = [], {root}, [root]
    while path:
        waiting = parents[path[-1]]
        while waiting and waiting[0] in seen:
            waiting.pop(0)
        if waiting:
            seen.add(waiting[0])
            path.append(waiting.pop(0))
        else:
            order.append(path.pop())
    return order


@pytest.mark.parametrize("seed", (0, 21, 22, 5))
def test_a_right_dfs_with_a_stack_passes_and_matches_the_engine(seed):
    feedback.check_dfs_order_function(with_stack, seed=seed)
    feedback.check_dfs_order_function(lambda root, parents: tuple(with_stack(root, parents)), seed=seed)
    for _, parents, root in scalar.dfs_graphs(seed):
        assert with_stack(root, parents) == topological_order(root, parents_of=parents.__getitem__)


@pytest.mark.parametrize(
    "answer, match",
    [
        (recursive, f"RecursionError.*Python stops a recursion {sys.getrecursionlimit():,} calls deep"),
        (pushed_all_at_once, "a search that takes each node's parents last first"),
        (pre_order, "first visits the nodes \\(pre-order\\)"),
        (reversed_breadth_first, "this is a breadth-first search \\(a queue\\), reversed"),
        (breadth_first, "this is the order in which a breadth-first search \\(a queue\\) first reaches the nodes"),
        (no_seen_set, "appear more than once: a node that two paths reach joins the order once"),
        (lambda root, parents: with_stack(root, parents)[::-1], "the order is reversed"),
        (pops_the_parents, "changed parents in place"),
    ],
)
def test_each_dfs_mistake_is_named_in_public_and_hidden_checks(answer, match):
    for seed in (0, 21, 22):
        raises(feedback.check_dfs_order_function, answer, seed, match)


@pytest.mark.parametrize("answer", [reversed_breadth_first, breadth_first])
def test_a_breadth_first_order_is_not_named_as_the_depth_first_mistake_it_matches_on_one_graph(answer):
    """From e, a reversed breadth-first order is also what parents taken last first give, and a plain one is the
    pre-order: the check's other graphs tell them apart, so neither depth-first mistake is named."""
    for seed in (0, 21, 22):
        error = raises(feedback.check_dfs_order_function, answer, seed, "this is .*a breadth-first search")
        assert "last first" not in str(error) and "pre-order" not in str(error), error


def test_a_graph_that_cannot_tell_two_mistakes_apart_names_both():
    order = reversed_breadth_first("e", scalar.EXAMPLE_GRAPH)
    assert order == pushed_all_at_once("e", scalar.EXAMPLE_GRAPH)
    with pytest.raises(answers.AnswerError, match="2 known mistakes give this order on this graph") as caught:
        feedback.check_topological_order(order, scalar.EXAMPLE_GRAPH, "e")
    message = str(caught.value)
    assert "(1) a search that takes each node's parents last first" in message, message
    assert "or (2) a breadth-first search (a queue), reversed" in message, message


def test_a_pre_order_that_is_the_reversed_order_on_one_graph_is_named_pre_order():
    """On the first graph of seed 41 the pre-order is the right order reversed; the other graphs say which it is."""
    _, parents, root = scalar.dfs_graphs(41)[0]
    assert pre_order(root, parents) == topological_order(root, parents_of=parents.__getitem__)[::-1]
    error = raises(feedback.check_dfs_order_function, pre_order, 41, "first visits the nodes \\(pre-order\\)")
    assert "reversed" not in str(error), error


def test_pasted_orders_pass_nothing_hidden_and_long_orders_are_shortened():
    def pasted(root, parents):
        if root == "f":
            return list("xabcdf") if parents["d"] == ["x", "c"] else list("abcxdf")
        return {"e": list("abce"), "d": list("acbd")}.get(root, [root])

    error = raises(feedback.check_dfs_order_function, pasted, 0, "a chain of 5,000 nodes")
    assert len(str(error)) < 700 and "... 4992 more ..." in str(error), error
    for seed in (21, 22):
        raises(feedback.check_dfs_order_function, pasted, seed, "dfs_order_with_stack on a graph of 9 nodes")


def test_a_summary_names_the_mistake_of_a_multi_quantity_answer():
    summary = feedback.Summary("Chapter 3")
    with summary.exercise("3.2"):
        feedback.check_cube_grads_function(CUBE_WRONG["backward\\(\\) ran twice"])
    with summary.exercise("3.3"):
        undefined_answer  # noqa: B018, F821 - the answer cell was not run
    with summary.exercise("3.4"):
        feedback.check_cube_grads_function(lambda x: (x, 4 * x**2))
    with contextlib.redirect_stdout(io.StringIO()) as shown:
        summary.show()
    text = " ".join(shown.getvalue().split())
    assert "Exercise 3.2: WRONG: cube_grads(1.3): every gradient is doubled: backward() ran twice" in text, text
    assert "Exercise 3.3: not answered yet" in text, text
    assert "Exercise 3.4: WRONG: dy/dx is wrong: expected 5.07, received 6.76" in text, text


def test_an_error_in_the_students_code_shows_their_line_first_and_numpys_signature_cut():
    def matmul_vjp(A, B, G):
        return A @ G, B  # shapes that do not fit

    message = str(raises(feedback.check_matmul_vjp, matmul_vjp, 0, "matmul_vjp raised ValueError in line"))
    assert "(`return A @ G, B  # shapes that do not fit`): matmul: Input operand 1" in message, message
    assert "gufunc" not in message and "(size " in message, message


# --------------------------------------------------------------------------- the grader's replay


def source_of(function, name: str) -> str:
    """An answer cell that defines ``name`` as ``function`` (a top-level function of this file)."""
    return f"import math\n\n{inspect.getsource(function)}\n{name} = {function.__name__}\n"


NEURON_CELL = "def tanh_neuron_grads(x, w, b):\n    factor = {}\n    return factor * w, factor * x, factor\n"
#: Answer cells, right ("") and wrong, as a notebook holds them.
REPLAYED = {
    "tanh_neuron_grads": (
        "check_tanh_neuron_grads_function",
        (11, 12),
        {
            "tanh\\(z\\) was used for tanh'\\(z\\)": "import math\n" + NEURON_CELL.format("math.tanh(w * x + b)"),
            "not 1 - z²": NEURON_CELL.format("1 - (w * x + b) ** 2"),
            "": source_of(neuron, "tanh_neuron_grads"),
        },
    ),
    "cube_grads": (
        "check_cube_grads_function",
        (31, 32),
        {
            "lost fan-out contribution: x also feeds y directly": "def cube_grads(x):\n    return x, 2 * x**2\n",
            "backward\\(\\) ran twice": "def cube_grads(x):\n    return 2 * x, 6 * x**2\n",
            "": source_of(cube, "cube_grads"),
        },
    ),
    "dfs_order_with_stack": (
        "check_dfs_order_function",
        (21, 22),
        {
            "first visits": source_of(pre_order, "dfs_order_with_stack"),
            "RecursionError": f"import math\n\n{RECURSIVE_ORDER}",
            "last first": source_of(pushed_all_at_once, "dfs_order_with_stack"),
            "breadth-first search \\(a queue\\), reversed": "import collections\n"
            + inspect.getsource(breadth_first)
            + source_of(reversed_breadth_first, "dfs_order_with_stack"),
            "": source_of(with_stack, "dfs_order_with_stack"),
        },
    ),
}


def as_cell(source: str, name: str):
    """``name`` as a notebook cell defines it: its source kept in linecache without a time, as IPython keeps it."""
    import linecache

    filename = f"<cell {abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


@pytest.mark.parametrize("answer", REPLAYED)
def test_the_grader_and_the_notebook_give_the_same_verdicts(answer):
    """Each planted mistake, its cell run apart, fails the public and the hidden test in the grader's process,
    named as the notebook's check names it, and the right answer earns every point in both."""
    from chainrule_course.grading import apart, scoring

    check, seeds, cells = REPLAYED[answer]
    head = "from otter.test_files import test_case\n\nOK_FORMAT = False\n\nname = 'q'\npoints = 2\n\n"
    tests = {
        "q.py": head
        + f"@test_case(points=None, hidden=False)\ndef test_public({answer}):\n"
        + f"    from chainrule_course.exercises import feedback\n    feedback.{check}({answer})\n\n"
        + f"@test_case(points=None, hidden=True)\ndef test_hidden({answer}):\n"
        + f"    from chainrule_course.exercises import feedback\n    for seed in {seeds}:\n"
        + f"        feedback.{check}({answer}, seed=seed)\n"
        + f"chainrule_reference = {cells['']!r}\n"
        + f"chainrule_allowed = {list(getattr(feedback, check).allowed)!r}\n"
    }
    inputs = scoring.inputs(tests, b"secret")
    for mistake, cell in cells.items():
        data = scoring.record_apart([cell], inputs, lambda source, rule, values: apart.Answer(source, rule, values))
        result = scoring.score(tests, data, "", b"secret")["q"]
        messages = [r.message for r in result.test_case_results]
        if not mistake:
            assert result.score == 2, messages
            getattr(feedback, check)(as_cell(cell, answer))
            continue
        assert result.score == 0, (mistake, messages)
        with pytest.raises(answers.AnswerError) as in_the_notebook:
            getattr(feedback, check)(as_cell(cell, answer))
        assert str(in_the_notebook.value) in messages[0], (messages[0], str(in_the_notebook.value))
        assert all(re.search(mistake, message) for message in messages), (mistake, messages)


# --------------------------------------------------------------------------- without numpy

#: Answers to ex-intro-derive, ex-backward-cube and ex-graph-dfs-by-hand, right and wrong in the ways
#: a reader's are, as source.
WITHOUT_NUMPY = """
import math
from chainrule import Value


def neuron(x, w, b):
    slope = 1 - math.tanh(w * x + b) ** 2
    return slope * w, slope * x, slope


ANSWERS = {
    "check_tanh_neuron_grads_function": [
        neuron,
        lambda x, w, b: tuple(-v for v in neuron(x, w, b)),
        lambda x, w, b: ("0.5", 1, 2),
        lambda x, w, b: ([1.0, 2.0], 1.0, 2.0),
        lambda x, w, b: (None, 1.0, 2.0),
        lambda x, w, b: (Value(1.0), 1.0, 2.0),
        lambda x, w, b: tuple(round(v, 2) for v in neuron(x, w, b)),
        lambda x, w, b: 3.0,
    ],
    "check_cube_grads_function": [lambda x: (x, 3 * x**2), lambda x: (x, 2 * x**2), lambda x: (x, 1 / 0)],
    "check_dfs_order_function": [lambda root, parents: [root], lambda root, parents: None],
}


def verdicts(feedback):
    found = []
    for check, answers in ANSWERS.items():
        for answer in answers:
            for seed in (0, 11):
                try:
                    getattr(feedback, check)(answer, seed=seed)
                    found.append("passes")
                except feedback.AnswerError as error:
                    found.append(str(error))
    return found
"""
NO_NUMPY = """
import importlib.abc, json, sys


class NoNumpy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numpy", "torch"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


sys.meta_path.insert(0, NoNumpy())
from chainrule_course.exercises import feedback

namespace = {}
exec(sys.argv[1], namespace)
found = namespace["verdicts"](feedback)
with feedback.exercise("1.2"):
    feedback.check_tanh_neuron_grads_function(namespace["neuron"])
print(json.dumps({"verdicts": found, "numpy": "numpy" in sys.modules}))
"""


def test_the_scalar_chapters_checks_need_no_numpy():
    """As in the page's Python, which has no numpy: feedback imports, and the checks of ex-intro-derive,
    ex-graph-dfs-by-hand and ex-backward-cube give the verdicts, word for word, that they give where numpy is."""
    import subprocess

    run = subprocess.run([sys.executable, "-c", NO_NUMPY, WITHOUT_NUMPY], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    without = json.loads(run.stdout.splitlines()[-1])
    assert without["numpy"] is False
    namespace: dict = {}
    exec(WITHOUT_NUMPY, namespace)  # noqa: S102 - the test's own answers
    expected = namespace["verdicts"](feedback)
    assert without["verdicts"] == expected
    assert expected.count("passes") == 4 and len(set(expected)) > 12  # right twice each; the mistakes all differ


def test_a_fraction_answer_is_checked_where_there_is_no_numpy():
    """The page's Python has no numpy: a Fraction (a number) is read without it, right or wrong."""
    code = """
import math, sys
class NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "numpy":
            raise ModuleNotFoundError("No module named 'numpy'")
sys.meta_path.insert(0, NoNumpy())
from fractions import Fraction
from chainrule_course.exercises import feedback
def right(x, w, b):
    s = 1 - math.tanh(w * x + b) ** 2
    return Fraction(s * w), Fraction(s * x), Fraction(s)
feedback.check_tanh_neuron_grads_function(right)
try:
    feedback.check_tanh_neuron_grads_function(lambda x, w, b: (Fraction(w), Fraction(x), Fraction(1)))
except Exception as error:
    print(type(error).__name__, str(error).splitlines()[0])
"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("AnswerError tanh_neuron_grads(0.5, -2.0, 0.5): 0 of 3 right"), done.stdout

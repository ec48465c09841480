"""The graph and backward chapters' drills: fresh graphs from a seed, answers from the engine, named
mistakes, and what a reader types (the later chapters' kinds: test_drills_by_chapter.py)."""

import json
import math

import pytest
import torch

from chainrule.graph import VISIT, depth_first_events
from chainrule_course.drills import KINDS, LEVELS, ask, check, make_graph, question, steps
from chainrule_course.drills.reading import ReadingError, close, read_names, read_number, read_numbers

SEEDS = range(1000)
GRAPH_KINDS = [name for name, kind in KINDS.items() if kind.chapter in ("graph", "backward")]


def number(x):
    return repr(float(x))


def answer_text(q):
    """The expected answer as a reader would type it."""
    if isinstance(q.answer, list):
        return ", ".join(number(a) if isinstance(a, float) else a for a in q.answer)
    return number(q.answer)


@pytest.mark.parametrize("kind", GRAPH_KINDS)
def test_each_kind_takes_its_answer_and_refuses_another_on_1000_seeds(kind):
    for seed in SEEDS:
        q = question(kind, 1 + seed % 4, seed)
        assert q.check(answer_text(q))["right"], (kind, seed, q.prompt, q.answer)
        if isinstance(q.answer, float):
            assert not q.check(number(q.answer + 0.5))["right"]
        elif isinstance(q.answer, list) and isinstance(q.answer[0], float):
            assert not q.check(", ".join(number(a + 0.5) for a in q.answer))["right"]


def replay_in_torch(graph):
    """The graph rebuilt op by op in PyTorch (float64): every node's value and gradient."""
    made = {}
    for node in graph.order:
        if not node.parents:
            made[node.label] = torch.tensor(node.data, dtype=torch.float64, requires_grad=True)
            continue
        args = [made[p.label] for p in node.parents]
        ops = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div}
        made[node.label] = ops[node.op](*args) if node.op in ops else getattr(torch, node.op)(args[0])
        made[node.label].retain_grad()
    made["L"].backward()
    return {name: (t.item(), t.grad.item()) for name, t in made.items()}


@pytest.mark.parametrize("level", LEVELS)
def test_the_engine_s_values_and_gradients_agree_with_pytorch(level):
    for seed in range(0, 1000, 5):
        graph = question("adjoints", level, seed).graph
        torch_numbers = replay_in_torch(graph)
        for node in graph.order:
            value, gradient = torch_numbers[node.label]
            assert math.isclose(node.data, value, rel_tol=1e-12, abs_tol=1e-12), (seed, node.label)
            assert math.isclose(node.grad, gradient, rel_tol=1e-12, abs_tol=1e-12), (seed, node.label)


def test_the_orders_are_the_search_s_and_reach_follows_the_edges():
    for seed in range(300):
        graph = question("finish", 2, seed).graph
        finished = [node.label for event, node in depth_first_events(graph.root) if event != VISIT]
        assert question("finish", 2, seed).answer == finished
        leaf = question("reach", 2, seed)
        children = {n.label: {c.label for c in graph.order if n in c.parents} for n in graph.order}
        reached, frontier = set(), [leaf.target]
        while frontier:
            for child in children[frontier.pop()]:
                if child not in reached:
                    reached.add(child)
                    frontier.append(child)
        assert sorted(reached) == leaf.answer
        # what is asked is what the answer is: the nodes a path of edges leads to, not the values a change
        # moves (at level 2, seed 233, g = -a + ... + a, so a change to a leaves g as it is)
        assert f"computed from {leaf.target}, directly or through other nodes" in leaf.prompt, leaf.prompt


def test_a_seed_gives_one_graph_and_five_seeds_give_different_ones():
    for level in LEVELS:
        assert make_graph(7, level).description() == make_graph(7, level).description()
        assert json.loads(ask("adjoint", level, 7)) == json.loads(ask("adjoint", level, 7))
        assert len({tuple(make_graph(seed, level).description()) for seed in range(5)}) >= 4


def test_each_level_has_its_shape():
    for seed in range(200):
        fans = {}
        for level in LEVELS:
            graph = make_graph(seed, level)
            fan = {n.label: len(graph.uses(n)) for n in graph.order}
            fans[level] = fan
            twice = any(len(n.parents) == 2 and n.parents[0] is n.parents[1] for n in graph.order)
            if level == 1:
                assert max(fan.values()) == 1 and not twice
            if level == 2:
                assert any(fan[n.label] >= 2 for n in graph.leaves())
            if level == 3:
                assert twice or any(fan[n.label] >= 2 for n in graph.results())
            if level == 4:
                assert any(n.op in ("tanh", "exp", "log", "/") for n in graph.order)


def find(kind, wanted):
    """The first question of ``kind`` (levels 2 to 4) for which ``wanted(q)`` holds."""
    for seed in range(500):
        for level in (2, 3, 4):
            q = question(kind, level, seed)
            if wanted(q):
                return q
    raise AssertionError(f"no {kind} question found")


def questions(kind):
    return [question(kind, level, seed) for seed in range(100) for level in (2, 3, 4)]


def fanned_to_two(q):
    children = [child for child, _ in q.graph.uses(q.graph.nodes[q.target])]
    return len(children) == 2 and children[0] is not children[1]


def contributions(q):
    return [child.grad * child.local_grads[i] for child, i in q.graph.uses(q.graph.nodes[q.target])]


def far_from_answer(q, guess):
    return not close(guess, q.answer)


@pytest.mark.parametrize(
    ("mistake", "kind", "wanted", "typed"),
    [
        ("product for sum", "adjoint", fanned_to_two, lambda q: contributions(q)[0] * contributions(q)[1]),
        ("a contribution missing", "adjoint", fanned_to_two, lambda q: contributions(q)[0]),
        (
            "local for global",
            "adjoint",
            lambda q: True,
            lambda q: q.graph.uses(q.graph.nodes[q.target])[0][0].local_grads[
                q.graph.uses(q.graph.nodes[q.target])[0][1]
            ],
        ),
        ("global for local", "local", lambda q: True, lambda q: q.graph.nodes[q.target.split("->")[0]].grad),
        ("another node's value", "value", lambda q: True, lambda q: q.graph.nodes["a"].data),
    ],
)
def test_a_planted_numeric_mistake_is_named(mistake, kind, wanted, typed):
    q = find(kind, lambda q: wanted(q) and far_from_answer(q, typed(q)))
    found = find(kind, lambda q: wanted(q) and q.check(number(typed(q)))["mistake"] == mistake)
    named = [q for q in questions(kind) if wanted(q) and q.check(number(typed(q)))["mistake"] == mistake]
    planted = [q for q in questions(kind) if wanted(q) and far_from_answer(q, typed(q))]
    assert found and len(named) >= len(planted) // 2, (mistake, len(named), len(planted))
    result = q.check(number(typed(q)))
    assert not result["right"] and result["mistake"] == mistake, (q.prompt, result)


def test_planted_order_and_reach_mistakes_are_named():
    q = find("finish", lambda q: True)
    visits = [node.label for event, node in depth_first_events(q.graph.root) if event == VISIT]
    assert q.check(", ".join(q.answer[::-1]))["mistake"] == "reversed"
    if visits != q.answer:
        assert q.check(", ".join(visits[::-1]))["mistake"] in ("visit order", "node before its input")
    swapped = q.answer[:]
    child = next(n.label for n in q.graph.order if n.parents)
    parent = q.graph.nodes[child].parents[0].label
    i, j = swapped.index(parent), swapped.index(child)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    result = q.check(", ".join(swapped))
    assert result["mistake"] == "node before its input" and f"{child} comes before its input" in result["message"]
    assert q.check(", ".join(q.answer[:-1]))["mistake"] == "not every node once"
    topo = question("topological", 2, 3)
    assert topo.check(", ".join(topo.answer[::-1]))["mistake"] == "reversed"
    reach = find("reach", lambda q: len(q.answer) >= 2)
    assert reach.check(", ".join(reach.answer[1:]))["mistake"] == "a node missing"
    outside = [n for n in reach.graph.nodes if n not in reach.answer and n != reach.target]
    assert reach.check(", ".join(reach.answer + outside[:1]))["mistake"] == "a node it does not reach"


def test_every_gradient_in_backward_order_names_the_first_wrong_one():
    q = find("adjoints", lambda q: any(abs(g) > 0.2 for g in q.answer[1:]))
    typed = [number(a) for a in q.answer]
    i = next(k for k, g in enumerate(q.answer) if k and abs(g) > 0.2)
    typed[i] = number(q.answer[i] + 1)
    result = q.check(", ".join(typed))
    name = q.graph.order[::-1][i].label
    assert not result["right"] and f"the first is \u2202L/\u2202{name}" in result["message"]
    assert "give 7 numbers" in q.check("1, 2, 3, 4, 5, 6, 7, 8")["message"] or len(q.answer) == 8


@pytest.mark.parametrize(
    ("typed", "value"),
    [
        ("0.42", 0.42), ("-.5", -0.5), ("1/3", 1 / 3), ("1 / 3", 1 / 3), ("2e-3", 0.002), ("\u22120.5", -0.5),
        ("0,5", 0.5), (" 3 ", 3.0), ("(\u22121.5)", -1.5),
    ],
)  # fmt: skip
def test_a_number_is_read_as_a_person_writes_it(typed, value):
    assert read_number(typed) == pytest.approx(value)


@pytest.mark.parametrize(
    ("typed", "values"),
    [
        ("0,5; 1,5", [0.5, 1.5]), ("0,5 1,5", [0.5, 1.5]), ("0,5, 1,5", [0.5, 1.5]), ("0.5,1.5", [0.5, 1.5]),
        ("1 / 3, (\u22120.5)", [1 / 3, -0.5]),
    ],
)  # fmt: skip
def test_a_list_is_read_the_same_way_decimal_commas_included(typed, values):
    assert read_numbers(typed, 2) == pytest.approx(values)


def test_a_thousands_comma_is_refused_not_read_as_one():
    with pytest.raises(ReadingError, match="could be 1000 or 1.000"):
        read_number("1,000")


def test_what_cannot_be_read_gets_a_verdict_not_an_exception():
    q = question("adjoint", 2, 1)
    for typed in ("", "two", "1/0", "1..2"):
        result = q.check(typed)
        assert not result["right"] and result["mistake"] == "unreadable" and result["message"]
    with pytest.raises(ReadingError, match="'z' is not a node of this graph"):
        read_names("a, z", {"a", "L"})
    assert read_names("a -> l", {"a", "L"}) == ["a", "L"]
    assert json.loads(check("finish", 1, 2, "x"))["mistake"] == "unreadable"


def test_bad_input_names_the_drill_and_the_value():
    with pytest.raises(ValueError, match="level must be one of"):
        make_graph(1, 5)
    with pytest.raises(ValueError, match="seed must be a whole number"):
        make_graph(-1, 1)
    with pytest.raises(ValueError, match="kind must be one of"):
        question("gradient", 1, 1)


def test_the_page_gets_a_question_a_figure_and_the_steps():
    asked = json.loads(ask("adjoint", 3, 11))
    assert asked["figure"].startswith("<svg") and 'role="img"' in asked["figure"]
    assert asked["answer"] == "number" and len(asked["hints"]) == 2 and asked["lines"]
    assert "data-explorable" in steps("adjoint", 3, 11) and "data-explorable" in steps("finish", 1, 11)
    assert '"right": true' in check("value", 1, 4, number(question("value", 1, 4).answer))


def test_a_missing_node_that_uses_one_input_twice_names_it_once():
    q = next(
        q
        for seed in SEEDS
        for q in [question("reach", 3, seed)]
        if any(q.graph.nodes[n].parents[0] is q.graph.nodes[n].parents[-1] for n in q.answer if n != "L")
    )
    twice = next(n for n in q.answer if n != "L" and q.graph.nodes[n].parents[0] is q.graph.nodes[n].parents[-1])
    message = q.check(", ".join(n for n in q.answer if n != twice))["message"]
    used = q.graph.nodes[twice].parents[0].label
    assert f"{twice} is missing: it uses {used}." in message, message


def test_a_local_gradient_with_its_sign_flipped_is_named_where_no_other_slip_gives_it():
    named = 0
    for seed in range(200):
        q = question("local", 3, seed)
        if q.answer == 0:
            continue
        verdict = q.check(repr(-q.answer))
        assert not verdict["right"]
        if verdict["mistake"] == "the sign":
            named += 1
            assert verdict["message"].startswith("The sign is wrong: \u2202"), verdict
    assert named >= 60, named

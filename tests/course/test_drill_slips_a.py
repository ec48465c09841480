"""The drills of the tensors, forward and depth chapters (matmul, broadcast, tangent, dual, chain, batchnorm) draw
their named mistakes from a hand derivation of the answer (drills.problems.derived): the derivation agrees with the
engine on every seed, and its slips include the mistakes the old lists lacked."""

import math

import pytest

from chainrule_course.drills import KINDS, deep, matrices, question, tangents
from chainrule_course.drills.graphs import make_graph
from chainrule_course.exercises.mistakes import Derivation, Slips

SEEDS = range(200)


def level_of(kind, seed):
    levels = list(KINDS[kind].levels)
    return levels[seed % len(levels)]


def typed(value):
    return ", ".join(repr(float(v)) for v in value) if isinstance(value, list) else repr(float(value))


def instance_of(kind, q, seed):
    """The instance a kind's derivation reads, rebuilt from the question's data."""
    d = dict(q.data)
    if kind == "matmul":
        d["i"], d["j"] = d.pop("entry")
    if kind == "tangent":
        return tangents.tangent_instance(make_graph(seed, level_of(kind, seed)), d["direction"], d["node"])
    return d


DERIVE = {
    "matmul": matrices._matmul_entry,
    "broadcast": matrices._broadcast_sum,
    "tangent": tangents._carry,
    "dual": tangents._dual_tangent,
    "chain": deep._chain_factor,
    "batchnorm": deep._batchnorm_entry,
}

NEW = {
    "matmul": {"the factors in the other order", "the row and column swapped"},
    "broadcast": {"every entry summed", "b for X"},
    "tangent": {
        "the subtracted tangent added",
        "the tangents multiplied",
        "one term of the product rule",
        "the divisor, not its square",
        "the numerator reversed",
        "the local derivative left out",
        "tanh\u2032 at the input",
        "log\u2032 as x, not 1/x",
    },
    "dual": {
        "\u1e8f subtracted",
        "the \u03b4\u00b2 term kept",
        "the 2 left out",
        "tanh\u2032 at the input",
        "the sign of tanh\u00b2",
        "x\u1e8b for \u1e8b/x",
    },
    "chain": {"one layer short", "h\u2083's value", "tanh\u2032 at the pre-activation"},
    "batchnorm": {
        "the mean term left out",
        "the variance term's sign",
        "\u03b3 left out",
        "\u00f7\u03c3\u00b2 for \u00f7\u03c3\u0302",
    },
}


@pytest.mark.parametrize("kind", sorted(DERIVE))
def test_the_derivation_gives_the_engine_s_answer_and_its_slips_include_the_new_mistakes(kind):
    names = set()
    for seed in SEEDS:
        q = question(kind, level_of(kind, seed), seed)
        got = Derivation(DERIVE[kind]).right(instance_of(kind, q, seed))
        want = q.answer if isinstance(q.answer, list) else [q.answer]
        got = got if isinstance(got, list) else [got]
        assert all(math.isclose(g, w, abs_tol=1e-12) for g, w in zip(got, want, strict=True)), (seed, got, want)
        names |= {m.name for m in q.mistakes}
    assert NEW[kind] <= names, NEW[kind] - names


def test_the_old_mistakes_keep_their_names():
    """Progress records and tests read the names the drills already used."""
    old = {
        "matmul": {"B not transposed", "C\u0304 transposed", "the other input's rule", "one term of the sum"},
        "broadcast": {"not summed", "the wrong axis", "a mean", "the factor left out"},
        "tangent": {"the value", "the reverse-mode gradient", "one input only"},
        "dual": {"the tangents multiplied", "one term of the product rule", "y, not y\u00b2", "the primal"},
        "chain": {"a sum, not a product", "tanh\u2032 left out", "w left out"},
        "batchnorm": {"\u03bc and \u03c3 held fixed", "the variance term left out", "1/(n \u2212 1)"},
    }
    for kind, wanted in old.items():
        names = {m.name for seed in range(60) for m in question(kind, level_of(kind, seed), seed).mistakes}
        assert wanted <= names, (kind, wanted - names)
    dual_names = {m.name for seed in range(300) for m in question("dual", 2, seed).mistakes}
    assert {"the tangents divided", "the numerator reversed"} <= dual_names
    assert "\u1e8f added" in {m.name for seed in range(300) for m in question("dual", 1, seed).mistakes}


def planted(kind, q, seed, step, short):
    """The answer the derivation gives with one slip, its words found by the mistake's short name."""
    instance = instance_of(kind, q, seed)
    words = next(m.message for m in q.mistakes if m.name == short)
    return DERIVE[kind](instance, Slips({step: words})), words


def test_a_slip_in_a_node_s_rule_is_named_where_it_was_only_not_quite():
    """The forward chapter's tangent at level 4 (tanh, exp, log, division), and a subtraction's sign at any level:
    a wrong answer one slip of a node's rule explains is named, with the node it happened at."""
    seen = set()
    for seed in range(300):
        level = 4 if seed % 2 else 2
        q = question("tangent", level, seed)
        if not q.told_apart():
            continue
        graph = make_graph(seed, level)
        for node in graph.results():
            for m in q.mistakes:
                if m.message.startswith(f"At {node.label} = "):
                    result = q.check(typed(m.value))
                    assert result["mistake"] == m.name and result["message"] == m.message, (seed, m, result)
                    assert "Not quite" not in result["message"]
                    seen.add(m.name)
    assert {"the subtracted tangent added", "the divisor, not its square", "tanh\u2032 at the input"} <= seen


def test_a_planted_slip_gives_the_named_mistake_s_number():
    """The mistakes are the derivation's variants: planting one slip by hand gives the mistake's number."""
    questions = (question("dual", 3, seed) for seed in range(300))
    q = next(q for q in questions if "tanh\u2032 at the input" in {m.name for m in q.mistakes})
    x0, dx = q.data["x"]
    value, words = planted("dual", q, 0, "the rule of tanh", "tanh\u2032 at the input")
    assert math.isclose(value, (1 - x0**2) * dx) and q.check(typed(value))["mistake"] == "tanh\u2032 at the input"
    q = question("chain", 2, 1)
    d = q.data
    value, words = planted("chain", q, 1, "the layers", "one layer short")
    h1 = math.tanh(d["w"][0] * d["x"])
    assert math.isclose(value * d["w"][0] * (1 - h1**2), q.answer)
    result = q.check(typed(value))
    assert result["mistake"] == "one layer short" and "\u2202h\u2083/\u2202h\u2081" in result["message"]


def test_a_sum_over_the_wrong_axis_is_offered_only_where_it_has_b_s_shape():
    for level, offered in ((1, False), (2, True), (3, False)):
        names = {m.name for seed in range(40) for m in question("broadcast", level, seed).mistakes}
        assert ("the wrong axis" in names) == offered, level


def test_one_slip_at_two_nodes_giving_one_tangent_is_said_at_both():
    """The answer cannot tell a subtraction's sign slipped at f from the same slip at g: the message gives both."""
    q = question("tangent", 2, 28)
    both = [m for m in q.mistakes if m.name == "the subtracted tangent added"]
    assert len(both) == 1 and both[0].message.startswith("At f = ") and " Or: At g = " in both[0].message
    assert q.check(typed(both[0].value))["message"] == both[0].message

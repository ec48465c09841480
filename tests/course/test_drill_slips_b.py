"""The drills whose mistakes are generated from a hand derivation (drills.problems.derived), in the layers,
sequences, capstone and cost chapters: on 200 seeds each derivation gives the engine's answer, and the slips
the old lists lacked are among the kind's mistakes."""

import math

import pytest

from chainrule_course.drills import KINDS, costs, network, question, recurrences, windows
from chainrule_course.exercises.mistakes import Derivation


def level_of(kind, seed):
    levels = list(KINDS[kind].levels)
    return levels[seed % len(levels)]


def _bptt_instance(d):
    hs, pre = [d["h0"]], []
    for x in d["x"]:
        pre.append(d["w"] * hs[-1] + d["u"] * x)
        hs.append(math.tanh(pre[-1]))
    return {"w": d["w"], "h": hs, "pre": pre}


# kind: (its derivation, the instance it reads from a question's data, the slips new to its mistakes)
KINDS_DERIVED = {
    "conv": (windows._conv_entry, lambda d: d, {"the kernel transposed"}),
    "maxpool": (windows._maxpool_row, lambda d: d, {"the largest value sent"}),
    "embedding": (windows._embedding_row, lambda d: d, {"every example's \u0232"}),
    "bptt": (
        recurrences._bptt_sum,
        _bptt_instance,
        {"tanh\u2032 at the pre-activation", "h\u209c for h\u209c\u208b\u2081", "the w's left out"},
    ),
    "jacobian": (
        recurrences._jacobian_entry,
        lambda d: d,
        {"the scores for p", "p\u1d62 left out", "p\u2c7c for p\u1d62"},
    ),
    "bias": (network._bias_sum, lambda d: d | {"q": 3}, {"\u00f7 classes for \u00f7 n", "P alone", "the sign"}),
    "hidden": (
        network._hidden_row,
        lambda d: d,
        {"1 \u2212 U\u00b2", "sigmoid\u2032 for tanh\u2032", "example 2's row"},
    ),
    "flops": (costs._flops_count, lambda d: d, {"k \u2212 1 additions"}),
    "revolve": (costs._revolve_count, lambda d: d, {"F(1, c) shifted", "F(D, 1) shifted"}),
}


@pytest.mark.parametrize("kind", list(KINDS_DERIVED))
def test_a_drill_s_derivation_gives_the_engine_s_answer_and_offers_the_new_slips(kind):
    derive, instance_of, new = KINDS_DERIVED[kind]
    names = set()
    for seed in range(200):
        q = question(kind, level_of(kind, seed), seed)
        got = Derivation(derive).right(instance_of(q.data))
        want = q.answer if isinstance(q.answer, list) else [q.answer]
        got = got if isinstance(got, list) else [got]
        assert all(math.isclose(g, a, rel_tol=1e-12, abs_tol=1e-12) for g, a in zip(got, want, strict=True)), (
            kind,
            seed,
            got,
            want,
        )
        names |= {m.name for m in q.mistakes}
    assert new <= names, (kind, names)


@pytest.mark.parametrize("kind", list(KINDS_DERIVED))
def test_each_mistake_s_message_is_its_slip_s_words_and_a_planted_one_is_named(kind):
    """A mistake's message is the words its slip is described by, and typing its number names it."""
    for seed in range(20):
        q = question(kind, level_of(kind, seed), seed)
        if not q.told_apart():
            continue
        for mistake in q.mistakes:
            assert mistake.message.endswith("."), (kind, mistake)
            typed = ", ".join(repr(float(v)) for v in mistake.value) if q.form == "numbers" else repr(mistake.value)
            result = q.check(typed)
            assert not result["right"] and result["mistake"] == mistake.name
            assert result["message"] == mistake.message


def test_the_tangent_like_slips_now_name_what_only_got_not_quite():
    """Answers that used to get only "Not quite…" are named now: tanh′ at the pre-activation in bptt, the
    base case of revolve's recursion, k − 1 additions in a flop count."""
    for kind, name in (
        ("bptt", "tanh\u2032 at the pre-activation"),
        ("revolve", "F(D, 1) shifted"),
        ("flops", "k \u2212 1 additions"),
    ):
        q = next(
            q
            for seed in range(100)
            if (q := question(kind, level_of(kind, seed), seed)).told_apart() and name in {m.name for m in q.mistakes}
        )
        value = next(m.value for m in q.mistakes if m.name == name)
        assert q.check(repr(float(value)))["mistake"] == name

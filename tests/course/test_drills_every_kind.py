"""What every drill kind of the registry owes a reader, a new kind included: questions that do not repeat
(40 different ones in 100 seeds, at every level), an answer box that states the tolerance its check
accepts, and a wrong answer that reads "Not right." once, whether or not a named mistake fits it."""

import json
import re

import pytest

from chainrule_course.drills import KINDS, Question, ask, question

DIFFERENT = 40  # different questions at least, in the first 100 seeds of each kind and level
LEVELS = [(kind, level) for kind in KINDS for level in KINDS[kind].levels]
NUMERIC = [kind for kind in KINDS if KINDS[kind].form in ("number", "numbers")]


def shown(q):
    """The question as a reader sees it: the prompt and the instance in words (a graph's, for the graph kinds)."""
    lines = q.graph.description() if isinstance(q, Question) else q.lines
    return (q.prompt, *lines)


def test_every_kind_and_level_offers_40_different_questions_in_100_seeds():
    counts = {(kind, level): len({shown(question(kind, level, seed)) for seed in range(100)}) for kind, level in LEVELS}
    table = "\n".join(f"{kind:12} {level}  {n}/100" for (kind, level), n in counts.items())
    few = [f"{kind} level {level}: {n}" for (kind, level), n in counts.items() if n < DIFFERENT]
    assert not few, f"fewer than {DIFFERENT} different questions in 100 seeds: {few}\n{table}"


# The answer box's words for the tolerance (drills.page.CLOSE_ENOUGH): the three numbers a reader is told.
STATED = re.compile(r"within ([\d.]+) of the answer, or ([\d.]+) % of it when the answer is beyond \u00b1([\d.]+)\.")


def typed(form, answer):
    """An answer of ``form`` as a reader types it."""
    if form == "names":
        return ", ".join(answer)
    return ", ".join(repr(float(a)) for a in answer) if form == "numbers" else repr(float(answer))


@pytest.mark.parametrize("kind", NUMERIC)
def test_every_numeric_kind_states_the_tolerance_its_check_accepts(kind):
    """Just inside the stated tolerance is right and just outside is not, on each side, at every level."""
    form = KINDS[kind].form
    for level in KINDS[kind].levels:
        said = json.loads(ask(kind, level, 0))["tolerance"]
        found = STATED.search(said)
        assert found, (kind, said)
        absolute, percent, beyond = map(float, found.groups())
        assert beyond == pytest.approx(absolute / (percent / 100)), said
        for seed in range(6):
            q = question(kind, level, seed)
            answer = list(q.answer) if form == "numbers" else [q.answer]
            bound = max(absolute, percent / 100 * abs(answer[0]))
            for side in (1, -1):
                for share, right in ((0.98, True), (1.02, False)):
                    moved = [answer[0] + side * share * bound, *answer[1:]]
                    result = q.check(typed(form, moved if form == "numbers" else moved[0]))
                    assert result["right"] is right, (kind, level, seed, answer[0], side * share * bound, result)


COUNTS = [kind for kind, entry in KINDS.items() if entry.form == "count"]


def test_the_counts_are_the_kinds_whose_answer_is_a_number_of_flops_or_steps():
    assert {"flops", "revolve"} <= set(COUNTS)


@pytest.mark.parametrize("kind", COUNTS)
def test_a_count_is_right_only_when_exact_as_its_answer_box_says(kind):
    """A whole number of flops or steps: one off is wrong (a slip, such as a base case shifted by one, gives
    exactly that), whatever the answer's size."""
    for level in KINDS[kind].levels:
        assert json.loads(ask(kind, level, 0))["tolerance"] == "Counted right only when exact."
        for seed in range(20):
            q = question(kind, level, seed)
            assert q.check(str(q.answer))["right"], (kind, level, seed)
            assert not any(q.check(str(q.answer + off))["right"] for off in (-1, 1)), (kind, level, seed, q.answer)


def page_text(result):
    """The verdict as drill.js words it: "Not right." before a wrong verdict's message."""
    return ("" if result["right"] else "Not right. ") + result["message"]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_wrong_answer_reads_not_right_once_named_or_not(kind):
    """The page says "Not right." itself: no wrong verdict's message opens with a verdict of its own (it read
    "Not right. Not quite. …" where no named mistake fitted)."""
    form, unnamed = KINDS[kind].form, 0
    for level in KINDS[kind].levels:
        for seed in range(10):
            q = question(kind, level, seed)
            if form == "names":
                wrong = q.answer[:-1] or ["none"]
            elif form == "numbers":
                wrong = [*q.answer[:-1], q.answer[-1] + 7.25]
            else:
                wrong = q.answer + 7.25
            for result in (q.check(typed(form, value)) for value in [wrong, *q.slip_answers()]):
                if result["right"] or result["mistake"] == "unreadable":
                    continue
                said = page_text(result)
                assert re.match(r"Not right\. (?!(Not|No|Wrong|Right|Correct|Almost)\b)", said), (kind, seed, said)
                unnamed += result["mistake"] is None
    assert form == "names" or unnamed, f"{kind}: no wrong answer without a named mistake was tried"

"""Next for you (chainrule_course.drills.schedule): a kind missed comes back two questions later, at a
lower level after two misses, on an instance where the mistake shows; three right in a row move a
kind on and raise its level; a spaced review brings it back; a record edited by hand is read as far
as it makes sense. The page keeps the record (progress.js); ``answer`` below updates it the same way,
and the browser test (tests/browser/test_drills_browser.py) checks the page's own record."""

import itertools
import json
import re

import pytest

from chainrule_course.drills import KINDS, question
from chainrule_course.drills.page import next_for_you
from chainrule_course.drills.schedule import COMEBACK, REVIEW, STREAK, plan, showing, wrong_again


def answer(record, kind, right, level, mistake=None):
    """The record after one drill answer, as progress.js's drill() updates it."""
    entry = record["drills"].setdefault(kind, {"attempts": 0, "right": 0})
    if entry.get("level") != level:
        entry["streak"] = entry["misses"] = 0
    entry["level"] = level
    entry["attempts"] += 1
    entry["right"] += bool(right)
    entry["streak"] = entry["streak"] + 1 if right else 0
    entry["misses"] = 0 if right else entry["misses"] + 1
    entry["mistake"] = None if right else mistake
    if mistake and not right:
        entry.setdefault("mistakes", {})[mistake] = entry.get("mistakes", {}).get(mistake, 0) + 1
    record["answered"] = record.get("answered", 0) + 1
    entry["at"] = record["answered"]
    return record


def fresh():
    return {"format": 2, "answered": 0, "drills": {}, "exercises": {}}


def next_plan(record, kinds, seed=0):
    return plan(record["drills"], record["answered"], kinds, seed)


def test_a_new_reader_starts_with_the_book_s_first_kind_at_its_first_level():
    chosen = next_plan(fresh(), ["dual", "tangent"], seed=12)
    assert chosen == {"kind": "tangent", "level": 1, "seed": 12, "reason": "new to you."}


def test_a_kind_offered_before_it_is_due_says_so():
    record = answer(fresh(), "neuron", False, 1)
    chosen = next_plan(record, ["neuron"])
    assert chosen["kind"] == "neuron" and "early, since no other kind here is due" in chosen["reason"]


def test_a_kind_missed_comes_back_two_questions_later():
    kinds = ["softmax", "decay"]
    record = answer(fresh(), "softmax", False, 1)
    assert next_plan(record, kinds)["kind"] == "decay", "it came back at once"
    answer(record, "decay", True, 1)
    assert record["answered"] + 1 == record["drills"]["softmax"]["at"] + COMEBACK
    chosen = next_plan(record, kinds)
    assert chosen["kind"] == "softmax" and chosen["reason"].startswith("you missed it")


def test_three_misses_in_one_kind_bring_it_back_each_time_on_an_instance_that_shows_the_mistake():
    kinds = ["matmul", "broadcast"]
    record = fresh()
    record["drills"]["broadcast"] = {"attempts": 4, "right": 4, "streak": 1, "misses": 0, "level": 1, "at": 0}
    offered, levels = [], []
    seed = 100
    while len(offered) < 4:
        chosen = next_plan(record, kinds, seed)
        seed += 1
        q = question(chosen["kind"], chosen["level"], chosen["seed"])
        if chosen["kind"] == "broadcast":
            answer(record, "broadcast", True, chosen["level"])
            continue
        offered.append(chosen)
        levels.append(chosen["level"])
        before = record["drills"].get("matmul", {}).get("mistake")
        if before:  # the mistake of the last answer gives a different number here, and the check names it
            assert wrong_again(q, before) is not None, chosen
            assert before in chosen["reason"]
        typed = wrong_again(q, "B not transposed") or wrong_again(q, q.mistakes[0].name)
        mistake = q.check(typed)["mistake"]
        assert mistake and not q.check(typed)["right"]
        answer(record, "matmul", False, chosen["level"], mistake)
    assert [c["kind"] for c in offered] == ["matmul"] * 4
    assert record["drills"]["matmul"]["attempts"] == 4
    assert levels[0] == 1 and all(level == 1 for level in levels), levels


def test_two_misses_lower_the_level_and_three_right_raise_it():
    record = fresh()
    for _ in range(2):
        answer(record, "dual", False, 3)
    chosen = next_plan(record, ["dual"])
    assert chosen["level"] == 2 and "two misses in a row: its level goes down one" in chosen["reason"]
    for _ in range(STREAK):
        answer(record, "dual", True, 2)
    chosen = next_plan(record, ["dual"])
    assert chosen["level"] == 3 and "3 right in a row" in chosen["reason"] and "goes up one" in chosen["reason"]


def test_what_next_for_you_says_repeats_no_words():
    """The status the page shows (drill.js's askNext: the kind, level and seed, then the reason) says each thing
    once, for every state of a kind's record: it said "three right in a row" twice, and the level twice."""
    for streak, misses, level, at, answered in itertools.product(range(5), range(3), (1, 2, 3), (0, 4), (4, 40)):
        entry = {"attempts": 5, "right": streak, "streak": streak, "misses": misses, "level": level, "at": at}
        chosen = next_plan({"answered": answered, "drills": {"dual": entry}}, ["dual", "tangent"])
        status = (
            f"Next for you: {KINDS[chosen['kind']].title}, level {chosen['level']}, seed {chosen['seed']}. "
            f"{chosen['reason']}"
        )
        words = re.findall(r"\w+", status.lower())
        pairs = list(itertools.pairwise(words))
        assert len(set(pairs)) == len(pairs), status


def test_a_kind_answered_right_three_times_in_a_row_moves_on_and_comes_back_spaced():
    kinds = ["flops", "revolve"]
    record = fresh()
    for _ in range(STREAK):
        chosen = next_plan(record, kinds)
        assert chosen["kind"] == "flops"
        answer(record, "flops", True, chosen["level"])
    mastered_at = record["answered"]
    reviews = []
    for _ in range(3 * REVIEW):
        chosen = next_plan(record, kinds)
        if chosen["kind"] == "flops":
            reviews.append(record["answered"] + 1 - mastered_at)
            assert chosen["reason"].startswith("a spaced review") and chosen["level"] == 2
            break
        answer(record, "revolve", True, chosen["level"])
    assert reviews == [REVIEW], reviews


def test_the_kind_got_wrong_most_comes_first():
    record = fresh()
    record["drills"] = {
        "chain": {"attempts": 10, "right": 9, "misses": 1, "streak": 0, "level": 1, "at": 1},
        "batchnorm": {"attempts": 10, "right": 2, "misses": 1, "streak": 0, "level": 1, "at": 2},
    }
    record["answered"] = 5
    assert next_plan(record, ["chain", "batchnorm"])["kind"] == "batchnorm"


@pytest.mark.parametrize(
    "drills",
    [
        {"adjoint": "lots"},
        {"adjoint": {"attempts": "1000", "right": -3, "level": 99, "at": 1.5, "mistake": 7}},
        {"adjoint": {"attempts": True, "misses": [1]}},
        [],
    ],
)
def test_a_record_edited_by_hand_is_read_as_far_as_it_makes_sense(drills):
    chosen = plan(drills, "ten", ["adjoint", "local"], 3)
    assert chosen["kind"] == "local" and chosen["level"] == 1  # new to the reader: the book's order


def test_an_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError, match="no known kind"):
        plan({}, 0, ["nonsense"], 1)


@pytest.mark.parametrize(
    ("kind", "level", "mistake"),
    [
        ("adjoint", 2, "product for sum"),
        ("local", 3, "global for local"),
        ("softmax", 1, "one-hot at another class"),
        ("neuron", 2, "tanh\u2032 as 1 \u2212 y"),
        ("finish", 2, "visit order"),
    ],
)
def test_the_instance_drawn_after_a_mistake_shows_it(kind, level, mistake):
    found = showing(kind, level, 0, mistake)
    assert found is not None
    typed = wrong_again(question(kind, level, found), mistake)
    verdict = question(kind, level, found).check(typed)
    assert not verdict["right"] and verdict["mistake"] == mistake
    earlier = [wrong_again(question(kind, level, seed), mistake) for seed in range(found)]
    assert earlier == [None] * found, "an earlier seed showed it"


def test_a_mistake_no_instance_shows_draws_as_usual():
    assert showing("neuron", 1, 0, "tanh\u2032 left out") is None
    record = answer(fresh(), "neuron", False, 1, "tanh\u2032 left out")
    answer(record, "finish", True, 1)
    chosen = next_plan(record, ["neuron", "finish"], 77)
    assert (chosen["kind"], chosen["seed"]) == ("neuron", 77) and "tanh" not in chosen["reason"]


def test_the_page_s_call_reads_the_record_as_progress_js_keeps_it():
    record = answer(fresh(), "neuron", False, 2, "tanh\u2032 left out")
    answer(record, "neuron", True, 1)
    asked = json.loads(next_for_you(json.dumps(record), ["neuron", "finish"], 9))
    assert asked["kind"] in KINDS and asked["prompt"] and asked["reason"]
    assert json.loads(next_for_you("", ["neuron"], 9))["reason"] == "new to you."

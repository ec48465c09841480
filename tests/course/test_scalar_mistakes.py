"""The scalar and tape checks name a mistake only when it fits every input they tried (issue cases).

Each planted answer is a function, checked through its exercise's function check: 2.2 parents taken
in sorted order, 3.2 an edge lost, 4.4 a missing seed and a wrong index, 7.3 a number hard-coded
from one point, 11.2 a search that tests only for inf.
"""

from __future__ import annotations

import functools
import math

import pytest
from test_feedback import _first_bad_entry, _tape_grads
from test_scalar_checks import raises, with_stack

from chainrule_course.exercises import feedback
from chainrule_course.exercises import scalar_checks as scalar


def sorted_parents(root, parents):
    """The right search, but it visits each node's parents sorted by name."""
    return with_stack(root, {node: sorted(listed) for node, listed in parents.items()})


@pytest.mark.parametrize("seed", (0, 21, 22))
def test_parents_taken_in_sorted_order_fail_the_public_check_and_are_named(seed):
    error = raises(feedback.check_dfs_order_function, sorted_parents, seed, "in sorted order")
    assert "visited in the order each node lists them" in str(error), error
    assert any(  # the public graphs show it: some parents are listed out of sorted order
        sorted_parents(root, parents) != with_stack(root, parents) for _, parents, root in scalar.dfs_graphs(seed)
    )


def test_a_lost_edge_of_cube_grads_names_both_edges_it_can_be():
    error = raises(feedback.check_cube_grads_function, lambda x: (x, 2 * x**2), 0, "dy/dx is wrong")
    assert "(1) a lost fan-out contribution: x feeds s twice" in str(error), error
    assert "(2) a lost fan-out contribution: x also feeds y directly" in str(error), error
    feedback.check_cube_grads_function(lambda x: [x, 2 * x * x + x**2])  # right, another form


def no_seed(tape, k):
    grads = [0.0] * (k + len(tape))
    for i in reversed(range(len(tape))):
        for parent, local in zip(*tape[i], strict=True):
            grads[parent] += grads[k + i] * local
    return grads


def wrong_index(tape, k):
    grads = [0.0] * (k + len(tape))
    grads[-1] = 1.0
    for i in reversed(range(len(tape))):
        for parent, local in zip(*tape[i], strict=True):
            grads[parent] += grads[i] * local
    return grads


@pytest.mark.parametrize("seed", (0, 31, 32))
def test_a_tape_mistake_is_named_once_from_all_values_of_both_tapes(seed):
    error = raises(feedback.check_tape_grads_function, no_seed, seed, "WRONG")
    assert "It matches a known mistake: the last value's own gradient is 1" in str(error), error
    assert "forwards" not in str(error) and "written over" not in str(error), error
    error = raises(feedback.check_tape_grads_function, wrong_index, seed, "WRONG")
    assert "entry i's value is value k + i" in str(error), error
    assert "forwards" not in str(error) and "written over" not in str(error), error
    error = raises(feedback.check_tape_grads_function, lambda t, k: _tape_grads(t, k, forwards=True), seed, "WRONG")
    assert "the tape run forwards" in str(error) and "written over" not in str(error), error
    feedback.check_tape_grads_function(lambda t, k: tuple(_tape_grads(t, k)), seed)


def test_a_number_hard_coded_from_one_point_is_located_not_called_rounded():
    hard_coded = lambda a, ad, b, bd: (math.hypot(a, b), -1.3)  # noqa: E731 - right at the first point
    error = raises(feedback.check_hypot_jvp, hard_coded, 0, r"c_dot is wrong: expected -1\.29412, received -1\.3\.")
    assert "round" not in str(error) and "known mistake" not in str(error), error
    rounded = lambda a, ad, b, bd: (round(math.hypot(a, b), 3), round((a * ad + b * bd) / math.hypot(a, b), 3))  # noqa: E731
    raises(feedback.check_hypot_jvp, rounded, 0, "rounded to 3 decimals")
    error = raises(
        feedback.check_hypot_jvp,
        lambda a, ad, b, bd: (math.hypot(a, b), 2 * (a * ad + b * bd) / math.hypot(a, b)),
        0,
        "c_dot",
    )
    assert "it is twice the tangent" in str(error), error


def test_a_search_for_inf_only_is_told_what_was_expected_where_it_returned_none():
    for seed in (0, 31, 32):
        error = raises(feedback.check_first_bad_entry_function, _inf_only, seed, "returned None, where the expected")
        message = str(error)
        assert "the pass first makes nan there" in message and "return` missing" not in message, message
        assert "It matches a known mistake: only inf was looked for" in message, message
    error = raises(feedback.check_first_bad_entry_function, lambda t, k: None, 0, "returned None, where")
    assert "returned None on every tape: is a `return` missing" in str(error), error


def _inf_only(tape, k):
    grads = [0.0] * (k + len(tape))
    grads[-1] = 1.0
    for i in reversed(range(len(tape))):
        made = [grads[k + i] * local for local in tape[i][1]]
        if any(map(math.isinf, made)):
            return i
        for parent, contribution in zip(tape[i][0], made, strict=True):
            grads[parent] += contribution
    return None


def test_an_earliest_entry_is_still_named_and_a_mistake_that_fits_one_tape_only_is_located():
    earliest = functools.partial(_first_bad_entry, earliest=True)
    raises(feedback.check_first_bad_entry_function, earliest, 0, "the earliest such entry")

    def nan_once(tape, k):  # nan-only on the first tape, right on the others: no mistake fits all three
        cases = scalar_tapes()
        return _first_bad_entry(tape, k, test="nan") if list(tape) == list(cases[0]) else _first_bad_entry(tape, k)

    error = raises(feedback.check_first_bad_entry_function, nan_once, 0, "expected entry")
    assert "known mistake" not in str(error), error


def scalar_tapes():
    from chainrule_course.exercises import tape_checks

    return [tape for _, tape, _ in tape_checks.anomaly_cases(0)]


def test_a_right_answer_that_differs_by_rounding_passes_where_the_right_value_is_a_short_decimal():
    """3·x·x and 3·x² differ in the last bit; where the right value is a short decimal (16.7088), a check that
    called any difference from a short decimal "a rounding" failed the right answer on 176 of 301 seeds."""
    from chainrule_course.exercises import feedback

    for seed in range(120):
        feedback.check_cube_grads_function(lambda x: (x, 3 * x * x), seed=seed)

    def hypot_jvp(a, a_dot, b, b_dot):
        c = math.sqrt(a * a + b * b)
        return c, (a * a_dot + b * b_dot) / c

    feedback.check_hypot_jvp(hypot_jvp, seed=207067)  # c = 3.7 there
    for seed in (0, 1, 2):
        feedback.check_hypot_jvp(hypot_jvp, seed=seed)


def test_one_step_too_many_is_named_as_that_and_not_as_two_slips_that_add_one():
    from chainrule_course.exercises import feedback
    from chainrule_course.exercises.answers import AnswerError

    for seed in (0, 12345):
        with pytest.raises(AnswerError) as error:
            feedback.check_longest_chain(lambda c, r: math.comb(c + r, c) + 1, seed=seed)
        assert error.value.mistake.startswith("the count is one step too many"), str(error.value)

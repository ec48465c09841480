"""Fresh inputs: a check cell also draws inputs no answer was written for, new at each run in a notebook and
the same twice in the grader (which runs each public test with the reference, then with the answer's record)."""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest

from chainrule_course.exercises import feedback
from chainrule_course.exercises.answers import AnswerError
from chainrule_course.exercises.verdicts import Summary
from chainrule_course.grading import contract


def test_a_notebook_draws_a_new_seed_each_run_and_says_which_after_a_pass():
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        seeds = [feedback.fresh() for _ in range(5)]  # outside a check cell: said at once
    assert len(set(seeds)) > 1 and all(seed >= 1000 for seed in seeds)
    for seed in seeds:
        assert f"drawn from seed {seed} (a new seed at each run)" in printed.getvalue()

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), feedback.exercise("1.2"):
        seed = feedback.fresh()
        print("The check passes.")
    assert printed.getvalue().splitlines() == [
        "The check passes.",
        f"Also checked on fresh inputs, drawn from seed {seed} (a new seed at each run).",
    ]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(AnswerError), feedback.exercise("1.2"):
        feedback.fresh()
        raise NotImplementedError("not answered yet: write f")
    assert printed.getvalue() == "", "an answer not checked was not checked on fresh inputs either"


def test_the_grader_draws_the_same_fresh_inputs_twice_from_its_secret():
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        with contract.fresh_inputs(b"one secret"):
            first = [feedback.fresh(), feedback.fresh()]
        with contract.fresh_inputs(b"one secret"):
            again = feedback.fresh()
        with contract.fresh_inputs(b"another"):
            other = feedback.fresh()
        with contract.hidden_inputs(b"one secret"):
            hidden = (feedback.fresh(), contract.seeded(contract.FRESH))
    assert first == [again, again] and other != again and hidden[0] == hidden[1] != contract.FRESH
    assert printed.getvalue() == ""


def test_a_table_of_the_public_inputs_fails_on_fresh_ones():
    def right(X, y, W1, W2, lam):
        Z = X @ W1.T
        O = np.maximum(Z, 0) @ W2.T
        P = np.exp(O - O.max(1, keepdims=True))
        dO = (P / P.sum(1, keepdims=True) - np.eye(W2.shape[0])[y]) / len(X)
        return ((dO @ W2) * (Z > 0)).T @ X + lam * W1, dO.T @ np.maximum(Z, 0) + lam * W2

    public = {}
    for seed in (0, 1):
        for p in (feedback.d2l_problem(seed, small=True), feedback.d2l_problem(seed)):
            public[p["X"].tobytes()] = right(p["X"], p["y"], p["W1"], p["W2"], p["lam"])

    def table(X, y, W1, W2, lam):
        return public.get(X.tobytes(), (W1 * 0, W2 * 0))

    for seed in (0, 1):
        feedback.check_d2l_weight_grads_function(table, seed=seed)
    with contract.fresh_inputs(b"a grader's secret"), pytest.raises(AnswerError, match=r"d2l_problem\(\d{4,}"):
        feedback.check_d2l_weight_grads_function(table, seed=feedback.fresh())


def test_the_summary_line_keeps_every_mistake_that_gives_the_same_numbers():
    summary = Summary("Chapter 9")
    with summary.exercise("9.1"):
        raise AnswerError(
            "D",
            "D is wrong: expected 10, received 20. It matches 2 known mistakes that give the same numbers, "
            "and the check cannot tell which: (1) the first; or (2) the second.",
            "the first",
        )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        summary.show()
    text = " ".join(printed.getvalue().split())
    assert re.search(r"one of 2 mistakes that give the same numbers: \(1\) the first; or \(2\) the second", text), text

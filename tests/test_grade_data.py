"""The instructor's data in make grade: ids matched exactly, file names that never collide, a CSV that
runs nothing in a spreadsheet, and ids that never reach a shell (issue 38)."""

from __future__ import annotations

import csv
import subprocess

import grade  # tools/grade.py
import pytest
import reports  # tools/reports.py
from conftest import ROOT


def notebooks(folder, *paths):
    for path in paths:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text("{}")


def owners(tmp_path, roster_ids: str) -> dict[str, str]:
    roster = tmp_path / "roster.csv"
    roster.write_text("id\n" + roster_ids.replace(" ", "\n") + "\n")
    found, skipped = grade.find(tmp_path, roster)
    return {s.file: s.student for s in found if s.file}, skipped


def test_roster_ids_own_notebooks_exactly(tmp_path):
    notebooks(tmp_path, "li.wei.ipynb", "s1002/s1001.ipynb", "Grace Hopper_0042/hw.ipynb", "0042_0043.ipynb")
    found, skipped = owners(tmp_path, "li li.wei s1001 s1002 0042 0043")
    assert found["li.wei.ipynb"] == "li.wei", "li is not li.wei"
    assert found["s1002/s1001.ipynb"] == "s1002", "the folder names the student, not the file in it"
    assert found["Grace Hopper_0042/hw.ipynb"] == "0042", "an LMS folder name's part between underscores"
    assert found["0042_0043.ipynb"] == "0042_0043"
    assert "0042_0043.ipynb (graded under its own name: its path names several roster ids (0042, 0043))" in skipped
    rows = grade.find(tmp_path, tmp_path / "roster.csv")[0]
    assert [(s.student, s.file) for s in rows if s.student in ("li", "s1001")] == [("li", ""), ("s1001", "")]


def test_feedback_files_never_collide():
    names = [
        reports.file_name(student, file)
        for student, file in [
            ("李雷", "a.ipynb"),
            ("王芳", "b.ipynb"),
            ("s1", "s1/first.ipynb"),
            ("s1", "s1/second.ipynb"),
            ("Ada", "Ada.ipynb"),
            ("ada", "ada.ipynb"),
            ("s1001", ""),
        ]
    ]
    assert len(set(names)) == len(names) and len({n.casefold() for n in names}) == len(names)
    assert names[4].startswith("Ada-") and all(n.isascii() and "/" not in n for n in names)


def test_the_csv_keeps_formulas_as_text_and_reads_them_back(tmp_path):
    evil = '=HYPERLINK("http://example.org","x")'
    first = [reports.Result(evil, "evil.ipynb", {"q": 1.0}), reports.Result("@sum", "b.ipynb", {"q": 2.0})]
    reports.write_outputs(tmp_path, {"q": 2.0}, first)
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [row["student"] for row in rows] == ["'" + evil, "'@sum"]
    # Regrading one student keeps the other's row once, not a second copy with its quote doubled.
    reports.write_outputs(tmp_path, {"q": 2.0}, [reports.Result("@sum", "b.ipynb", {"q": 0.0})], keep=True)
    rows = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert [(row["student"], row["q"]) for row in rows] == [("'" + evil, "1"), ("'@sum", "0")]


@pytest.mark.parametrize(
    "given, ids",
    [
        (["s1 s2"], ["s1", "s2"]),
        (["Ada Lovelace_4711,s1"], ["Ada Lovelace_4711", "s1"]),
        (["Ada Lovelace_4711"], ["Ada Lovelace_4711"]),
        (["s1", "s2,s3"], ["s1", "s2", "s3"]),
    ],
)
def test_only_takes_ids_separated_by_commas_or_spaces(given, ids):
    assert grade._only(given, {"s1", "s2", "s3", "Ada Lovelace_4711"}) == ids


def test_make_grade_passes_ids_as_text_never_to_the_shell(tmp_path):
    mark = tmp_path / "ran"
    only = f"`touch {mark}` $$(touch {mark}),Ada Lovelace_4711"
    run = subprocess.run(
        ["make", "--no-print-directory", "--eval", 'show: ; @printf "[%s]\\n" $(GRADE_OPTIONS)', "show"]
        + [f"ONLY={only}", "ROSTER=my roster.csv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "[--roster]",
        "[my roster.csv]",
        "[--only]",
        f"[`touch {mark}` $(touch {mark}),Ada Lovelace_4711]",
    ]
    assert not mark.exists()

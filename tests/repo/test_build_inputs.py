"""What re-executes the chapters (_ext/incremental.py): the engine, the requirements, and the
course's modules that the chapters import, found by reading the imports. A change to the grader
or to the page's runtime executes no chapter; a change to a check or to an explorable's script
executes them all, so that no stale output reaches a page."""

from __future__ import annotations

import shutil
from pathlib import Path

from common import ROOT

from _ext.incremental import DEFAULT_FILES, DEFAULT_IMPORTS, fingerprint, imported_files

COURSE = "course/chainrule_course"


def test_the_chapters_inputs_are_what_they_import():
    found = {path.relative_to(ROOT).as_posix() for path in imported_files(ROOT, "course", "chainrule_course")}
    ran = {  # what the chapters' check cells and explorables run, and what those import
        "exercises/feedback.py",
        "exercises/answers.py",
        "exercises/array_checks.py",  # imported inside feedback's __getattr__
        "grading/apart.py",  # the checks run an answer apart, as the grader does
        "explore/widget.py",
        "explore/explorable.js",  # read by name and inlined in the outputs
        "pages/glue.py",
    }
    assert {f"{COURSE}/{name}" for name in ran} <= found, sorted(found)
    unread = {"grading/reports.py", "grading/grade.py", "grading/otter_plugin.py", "pages/live.js", "pages/live.py"}
    assert not {f"{COURSE}/{name}" for name in unread} & found, sorted(found)


def test_a_change_to_the_grader_keeps_the_fingerprint_and_a_change_to_a_check_does_not(tmp_path: Path):
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters", ignore=shutil.ignore_patterns("*.ipynb"))
    shutil.copytree(ROOT / COURSE, tmp_path / COURSE, ignore=shutil.ignore_patterns("__pycache__"))

    def printed() -> str:
        return fingerprint(tmp_path, DEFAULT_FILES, DEFAULT_IMPORTS)

    before = printed()
    (tmp_path / COURSE / "grading" / "reports.py").write_text("# a comment\n", encoding="utf-8")
    (tmp_path / COURSE / "pages" / "live.js").write_text("// a comment\n", encoding="utf-8")
    assert printed() == before
    for changed in ("exercises/answers.py", "explore/explorable.js"):
        with (tmp_path / COURSE / changed).open("a", encoding="utf-8") as file:
            file.write("\n")
        assert printed() != before, changed
        before = printed()

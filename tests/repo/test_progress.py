"""``make progress``: a folder of practice records read into one page, checked against the records themselves.

A class of 30 synthetic students, simulated answer by answer from a seed (tests/progress_records.py),
with chapters left alone, named mistakes and students in folders; five bad files lie beside them.
Every number the page prints is computed again here from the simulated records, by code of this
file's own, and the bad files' rows, the students who have not practised each chapter, the
escaping of a malicious file name and the charts' SVG are read from the page.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from datetime import datetime, timedelta
from html.parser import HTMLParser

import pytest
from common import ROOT, make_variable
from progress_records import NOW, START, answer, class_folder, iso, simulate, write

from tools.progress import __main__ as cli
from tools.progress.edition import Edition, load_edition
from tools.progress.page import report
from tools.progress.records import read_record


class Tables(HTMLParser):
    """The page's tables (by id: row key -> the cells' text), name lists (by id) and SVGs (as text)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, dict[str, list[str]]] = {}
        self.lists: dict[str, list[str]] = {}
        self.table = self.row = self.cell = self.list = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attributes = dict(attrs)
        if tag == "table":
            self.table = self.tables.setdefault(attributes["id"], {})
        elif tag == "tr" and "data-key" in attributes:
            self.row = self.table.setdefault(attributes["data-key"], [])
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []
        elif tag == "ul" and "names" in attributes.get("class", ""):
            self.list = self.lists.setdefault(attributes["id"], [])
        elif tag == "li" and self.list is not None:
            self.cell = []
        elif tag == "br" and self.cell is not None:
            self.cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.row is not None and self.cell is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        elif tag == "li" and self.list is not None and self.cell is not None:
            self.list.append("".join(self.cell))
            self.cell = None
        elif tag == "tr":
            self.row = None
        elif tag == "ul" and self.cell is None:
            self.list = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


@pytest.fixture(scope="module")
def edition() -> Edition:
    return load_edition()


@pytest.fixture(scope="module")
def built(edition, tmp_path_factory):
    folder = tmp_path_factory.mktemp("records")
    truth = class_folder(folder, edition)
    text, read, result = report(folder, edition, NOW, folder / "progress.html")
    return folder, truth, text, Tables(text)


def percent_of(cell: str) -> float:
    return float(cell.replace("\u00a0%", ""))


def expected_kind(records: list[dict], kind: str) -> tuple[int, int, float | None]:
    """Students who answered ``kind``, their answers, and the mean of their shares right, from the records."""
    entries = [r["drills"][kind] for r in records if r["drills"].get(kind, {}).get("attempts", 0) > 0]
    shares = [e["right"] / e["attempts"] for e in entries]
    return len(entries), sum(e["attempts"] for e in entries), sum(shares) / len(shares) if shares else None


def kinds_table(page, kind) -> dict:
    """The report's table of the drill kinds of ``kind``'s chapter: one per chapter of _toc.yml."""
    table = page.tables.get(f"kinds-{kind.chapter.split('/')[1]}")
    assert table is not None, f"the report has no table for {kind.chapter}, {kind.name}'s chapter: is it in _toc.yml?"
    return table


def test_every_kinds_numbers_are_those_of_the_records(built, edition):
    _, truth, _, page = built
    records = list(truth.values())
    checked = 0
    for kind in edition.kinds.values():
        students, answers, share = expected_kind(records, kind.name)
        row = kinds_table(page, kind)[kind.name]
        assert int(row[1]) == students, (kind.name, row)
        assert int(row[2].split()[0]) == answers, (kind.name, row)
        if share is None:
            assert row[3] == "\u2014"
        else:
            assert abs(percent_of(row[3]) - 100 * share) <= 0.5 + 1e-9, (kind.name, row, share)
        checked += bool(students)
    assert checked >= 20  # the simulation practised most kinds


def test_the_commonest_mistakes_are_counted_with_their_students(built, edition):
    _, truth, _, page = built
    for kind in edition.kinds.values():
        times, students = {}, {}
        for record in truth.values():
            for name, count in record["drills"].get(kind.name, {}).get("mistakes", {}).items():
                times[name] = times.get(name, 0) + count
                students[name] = students.get(name, 0) + 1
        rows = kinds_table(page, kind)
        cell = rows.get(f"{kind.name} notes", [""])[0]
        for name in sorted(times, key=lambda n: (-times[n], -students[n], n))[:3]:
            assert f"{name} ({times[name]} time" in cell and f"{students[name]} student" in cell, (kind.name, cell)
        assert cell.count(" time") == min(3, len(times)), cell


def practised(record: dict, kinds: list[str], labels: list[str]) -> bool:
    drills = any(record["drills"].get(kind, {}).get("attempts", 0) > 0 for kind in kinds)
    exercises = [record["exercises"].get(label, {}) for label in labels]
    return drills or any(e.get("attempts", 0) > 0 or e.get("done") for e in exercises)


def test_who_has_not_practised_each_chapter(built, edition):
    _, truth, _, page = built
    for chapter in edition.chapters:
        name = chapter.chapter.split("/")[1]
        kinds = [kind.name for kind in edition.kinds_of(chapter.chapter)]
        waiting = sorted(s for s, r in truth.items() if not practised(r, kinds, chapter.exercises))
        assert sorted(page.lists.get(f"not-yet-{name}", [])) == waiting, name
        assert page.tables["chapters"][name][1] == str(len(truth) - len(waiting))
    assert all("student05" in page.lists[f"not-yet-{c.chapter.split('/')[1]}"] for c in edition.chapters)


def test_every_exercises_counts(built, edition):
    _, truth, _, page = built
    for chapter in edition.chapters:
        rows = page.tables[f"exercises-{chapter.chapter.split('/')[1]}"]
        for number, label in enumerate(chapter.exercises, start=1):
            entries = [r["exercises"][label] for r in truth.values() if label in r["exercises"]]
            checked = sum(e["attempts"] > 0 for e in entries)
            passed = sum(bool(e.get("passed")) for e in entries)
            done = sum(bool(e.get("done")) for e in entries)
            assert rows[label] == [f"Exercise {chapter.number}.{number} ({label})", *map(str, (checked, passed, done))]


def test_the_bad_records_are_listed_with_why(built):
    _, _, _, page = built
    rows = page.tables["findings"]
    assert rows["broken.json"][1] == "not counted" and "not JSON" in rows["broken.json"][2]
    assert rows["package.json"][1] == "not counted" and "not a practice record" in rows["package.json"][2]
    right_more = rows["right-more.json"]
    assert right_more[1:] == ["not counted", 'drill "adjoint": right 12 is more than attempts 9']
    old = rows["old-edition.json"]
    assert old[1] == "counted, with a note" and "another edition" in old[2]
    assert '"oldkind"' in old[2] and '"ex-gone-away"' in old[2]
    thousand = rows["thousand/chainrule-progress.json"]
    assert thousand[0] == "thousand thousand/chainrule-progress.json"  # the student, then the file
    assert thousand[1] == "counted, flagged"
    assert '1000 answers to "adjoint", 1000 right: more than 500' in thousand[2]
    # What a rule saw, never an edit it cannot see.
    assert [cell for row in rows.values() for cell in row if "edited" in cell] == []
    assert set(rows) == {
        "broken.json",
        "package.json",
        "right-more.json",
        "old-edition.json",
        "thousand/chainrule-progress.json",
    }


def test_names_come_from_files_and_folders_and_are_escaped(built):
    _, truth, text, page = built
    assert sorted(page.tables["each-student"]) == sorted(truth)
    assert "section-b/student07" in page.tables["each-student"] and "student06" in page.tables["each-student"]
    assert "&lt;script&gt;" in text and "<script" not in text.lower()
    assert "&lt;b&gt;sign&lt;/b&gt; flipped" in text and "<b>" not in text


def test_the_charts_are_accessible_svg(built):
    _, _, text, _ = built
    charts = [part.split("</svg>")[0] + "</svg>" for part in text.split("<svg")[1:]]
    assert len(charts) >= 15
    for chart in charts:
        root = ElementTree.fromstring("<svg" + chart)
        assert root.get("role") == "img" and root.get("aria-label")
        title = root.find("{http://www.w3.org/2000/svg}title")
        assert title is not None and title.text == root.get("aria-label")
        sizes = [float(e.get("font-size")) for e in root.iter() if e.get("font-size")]
        view_width = float(root.get("viewBox").split()[2])
        min_width = float(root.get("style").split("min-width:")[1].rstrip("px"))
        assert min(sizes) * min_width / view_width >= 9 and min_width <= 366  # 390 px less the page's padding


def test_a_record_the_rules_leave_out_is_not_counted(tmp_path, edition):
    answers = {"finish": {"attempts": 28, "right": 20, "last": iso(START + timedelta(seconds=5)), "at": 30}}
    answers["value"] = {"attempts": 1, "right": 1, "last": iso(START), "at": 1}  # 29 answers in 5 s
    answers["reach"] = {"attempts": 1, "right": 1, "last": iso(START + timedelta(seconds=2)), "at": 15}  # between
    cases = {
        "nan": ('{"drills": {"finish": {"attempts": NaN}}, "exercises": {}}', "not JSON"),
        "float": ({"drills": {"finish": {"attempts": 2.5, "right": 1}}}, "not a whole number"),
        "mistakes": ({"drills": {"finish": {"attempts": 3, "right": 2, "mistakes": {"x": 2}}}}, "named mistakes"),
        "book": ({"format": 2, "book": {"name": "other"}, "drills": {}, "exercises": {}}, "another book"),
        "format": ({"format": 9, "drills": {}, "exercises": {}}, "format"),
    }
    for name, (value, why) in cases.items():
        write(tmp_path / f"{name}.json", value)
        record = read_record(tmp_path, tmp_path / f"{name}.json", edition, NOW)
        assert not record.counted and any(why in finding.why for finding in record.findings), (name, record.findings)
    fine = simulate(random.Random(1), edition)
    write(tmp_path / "fine.json", fine)
    assert read_record(tmp_path, tmp_path / "fine.json", edition, NOW).findings == []  # the checks can pass


def test_a_count_of_one_is_singular(tmp_path, edition):
    """Each count the page and its findings print, at 1 and at 2 where a rule can see 2."""
    later = {"attempts": 1, "right": 1, "last": "2031-01-01T00:00:00Z"}
    cases = {
        "mistake": ({"finish": {"attempts": 1, "right": 0, "mistakes": {"x": 1, "y": 1}}}, {}),
        "run": ({"finish": {"attempts": 2, "right": 1, "streak": 2}}, {}),
        "check": ({}, {"ex-mlp-shape": {"attempts": 0, "right": 1}}),
        "dates": ({"finish": later, "value": {**later, "last": "2031-02-01T00:00:00Z"}}, {}),
        "unknown": ({"gone": {"attempts": 1, "right": 1}}, {}),
    }
    for name, (drills, exercises) in cases.items():
        write(tmp_path / f"{name}.json", {"drills": drills, "exercises": exercises})
    counts = {"format": 2, "answered": 0, "drills": {"finish": {"attempts": 1, "right": 1, "at": 1}}, "exercises": {}}
    write(tmp_path / "counts.json", counts)
    _, folder, _ = report(tmp_path, edition, NOW)
    whys = {record.file: " | ".join(finding.why for finding in record.findings) for record in folder.records}
    assert '"finish": 2 named mistakes, more than its 1 wrong answer' in whys["mistake.json"]
    assert '"finish": a run of 2 right answers (streak), but 1 right in all' in whys["run.json"]
    assert '"ex-mlp-shape": 1 check passed of 0 run' in whys["check.json"]
    assert '2 dates, the latest "2031-02-01T00:00:00Z"' in whys["dates.json"]
    assert whys["unknown.json"].startswith('1 entry this edition does not have, listed, not counted: drill "gone"')
    assert "number 1, but the record counts 0 answers" in whys["counts.json"]
    assert "1 answer in its drills, but 0 in its count" in whys["counts.json"]
    # A class of one: the page's own counts.
    (tmp_path / "unknown.json").rename(tmp_path / "only.txt")
    for path in tmp_path.glob("*.json"):
        path.unlink()
    write(tmp_path / "ann.json", simulate(random.Random(3), edition))
    text, _, _ = report(tmp_path, edition, NOW)
    drawn = re.sub(r"<text[^>]*>[^<]*</text>", " ", text)  # a chart's axis, "0 1 students", is a scale and its unit
    words = " ".join(re.sub(r"<[^>]+>", " ", drawn).split())
    assert "1 record file read" in words and "1 other file (not .json)" in words and "of 1 student." in words
    assert re.findall(r"(?<![\d.])1 (?:named )?[a-z]+s\b", words) == []


def test_an_older_or_copied_record_is_told(tmp_path, edition):
    record = simulate(random.Random(2), edition)
    write(tmp_path / "ann" / "chainrule-progress.json", record)
    write(tmp_path / "ann" / "chainrule-progress (1).json", {"drills": {}, "exercises": {}})
    write(tmp_path / "bob.json", record)
    _, folder, result = report(tmp_path, edition, NOW)
    findings = {r.file: [f.why for f in r.findings] for r in folder.records}
    assert "an older record of" in findings["ann/chainrule-progress (1).json"][0]
    assert "the very same record as" in findings["bob.json"][0] and result.students == ["ann", "bob"]
    assert folder.other_files == 0  # the count of files not read, not the names of the copies


def test_an_empty_folder_gives_a_page_and_a_missing_one_an_error(tmp_path, capsys, monkeypatch, edition):
    monkeypatch.setattr("tools.progress.edition.load_edition", lambda: edition)  # the book is read once
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main([str(empty)]) == 0
    assert "No practice records were found" in (empty / "progress.html").read_text(encoding="utf-8")
    assert cli.main([str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main([""]) == 2 and cli.main([str(empty / "progress.html")]) == 2  # not the current folder; a file


def test_make_progress_says_how_to_call_it_and_passes_the_folder_as_text(tmp_path):
    """Without RECORDS, the usage; with a folder whose name holds shell syntax, that name, as text (make
    itself expands a "$" in a variable given on its command line, so the name has none)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "RECORDS", "OUT")}
    installed = make_variable("INSTALL_STAMP")  # taken as made (-o): a test installs nothing
    command = [
        "make",
        "--no-print-directory",
        "-s",
        "-C",
        str(ROOT),
        "-o",
        installed,
        f"PY={sys.executable}",
        "progress",
    ]
    odd = tmp_path / "no `touch spliced` ; touch spliced 'x\"y"
    runs = [
        subprocess.Popen(arguments, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for arguments in (command, [*command, f"RECORDS={odd}"])
    ]
    (_, usage), (_, error) = (run.communicate(timeout=60) for run in runs)
    assert runs[0].returncode != 0 and "usage: make progress RECORDS=<folder" in usage
    assert runs[1].returncode != 0 and f"{odd} does not exist" in error, error
    assert not (tmp_path / "spliced").exists() and not (ROOT / "spliced").exists()


def test_the_layout_names_every_module():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `tools/progress/`"))
    modules = [p.stem for p in (ROOT / "tools" / "progress").glob("*.py") if p.stem not in ("__init__", "__main__")]
    assert [m for m in modules if f"`{m}.py`" not in row] == []


def as_the_page_counts(edition: Edition, answers: list[tuple[str, datetime]]) -> dict:
    """A record of right answers at level 1, each a kind and the browser's time, as progress.js counts them."""
    record = {"format": 2, "book": {"name": "chainrule", "version": edition.version}, "answered": 0}
    record.update(drills={}, exercises={})
    for kind, moment in answers:
        answer(record["drills"].setdefault(kind, {}), record, True, 1, None, moment)
    return record


def test_a_clock_put_back_leaves_no_honest_answer_out(tmp_path, edition):
    """One answer every 20 s, and the clock put back 8 minutes after answer 5: answer 25 then has answer 1's
    time, but answer 5 lies outside the two, so that run is not judged for pace. The record is counted,
    flagged with what was seen."""
    answers = []
    for number in range(1, 26):
        moment = START + timedelta(seconds=20 * (number - 1)) - timedelta(minutes=8 if number > 5 else 0)
        answers.append(("neuron" if number == 1 else "finish" if number <= 5 else "topological", moment))
    write(tmp_path / "clock.json", as_the_page_counts(edition, answers))
    found = read_record(tmp_path, tmp_path / "clock.json", edition, NOW)
    assert found.counted and found.flagged, found.findings
    assert [finding.why for finding in found.findings] == [
        'answer 25 ("topological") is timed 1 min 20 s before answer 5 ("finish")'
    ]


def test_what_the_page_writes_with_a_wrong_clock_or_a_script_is_counted_and_flagged(tmp_path, edition):
    """The page's own Export writes a record dated ahead when the browser's clock is wrong, and answers faster
    than a person's when a script drives it, or when a clock put back between answers the record does not show:
    the rules count both, flagged with what was seen, so that no honest record loses; the note on
    self-reported records and the instructors' chapter say so."""
    answers = {"finish": {"attempts": 28, "right": 20, "last": iso(START + timedelta(seconds=5)), "at": 30}}
    answers["value"] = {"attempts": 1, "right": 1, "last": iso(START), "at": 1}  # 29 answers in 5 s
    answers["reach"] = {"attempts": 1, "right": 1, "last": iso(START + timedelta(seconds=2)), "at": 15}  # between
    write(tmp_path / "fast.json", {"format": 2, "answered": 30, "drills": answers, "exercises": {}})
    record = read_record(tmp_path, tmp_path / "fast.json", edition, NOW)
    assert record.counted and record.flagged, record.findings
    assert [finding.why for finding in record.findings] == [
        "29 answers (2 to 30) in the 5.0 s after answer 1, faster than a person answers (under 0.5 s each on average)"
    ]
    for name, start, step in (("clock", NOW + timedelta(days=2), 20), ("script", START, 0.1)):
        answers = [("neuron" if n == 1 else "finish", start + timedelta(seconds=step * n)) for n in range(1, 22)]
        write(tmp_path / f"{name}.json", as_the_page_counts(edition, answers))
    (tmp_path / "fast.json").unlink()
    text, folder, _ = report(tmp_path, edition, NOW)
    assert [(r.counted, r.flagged) for r in folder.records] == [(True, True)] * 2, [r.findings for r in folder.records]
    note = re.search(r'<section class="honest".*?</section>', text, re.S)[0]
    chapter = (ROOT / "chapters" / "instructors.md").read_text(encoding="utf-8")
    chapter = chapter[chapter.index("The records are self-reported") :].split("\n\n")[0]
    for prose in (note, chapter):
        words = " ".join(re.sub(r"<[^>]+>", "", prose).split())
        said = r"writes? only with a wrong clock, at a pace no person answers, .* is counted and flagged"
        assert re.search(said, words), words
        assert "cannot have written" not in words


def test_a_record_dated_ahead_is_still_its_student_s_newest(tmp_path, edition):
    """A browser clock two days ahead flags the record, and its dates still say which of the student's records
    is the newer: the older file must not win over it (it did, when dates ahead counted as no date)."""
    (tmp_path / "dan").mkdir()
    older = [("neuron", START + timedelta(seconds=20 * n)) for n in range(1, 4)]
    ahead = [("neuron" if n == 1 else "finish", NOW + timedelta(days=2, seconds=20 * n)) for n in range(1, 31)]
    write(tmp_path / "dan" / "chainrule-progress.json", as_the_page_counts(edition, older))
    write(tmp_path / "dan" / "chainrule-progress (1).json", as_the_page_counts(edition, ahead))
    _, folder, _ = report(tmp_path, edition, NOW)
    counted = [(record.file, record.flagged) for record in folder.records if record.counted]
    assert counted == [("dan/chainrule-progress (1).json", True)], [(r.file, r.findings) for r in folder.records]

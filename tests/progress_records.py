"""A class's practice records, simulated: what ``make progress`` reads, for its tests (tests/repo/test_progress.py,
tests/browser/test_progress_browser.py).

Each student's record is simulated answer by answer from a seed, as ``progress.js`` counts
(format 2, and format 1 for some), with chapters left alone and named mistakes;
:func:`class_folder` writes 30 of them, some in folders, and five bad files beside them.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from tools.progress.edition import Edition

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
START = datetime(2026, 10, 1, tzinfo=timezone.utc)
#: Named mistakes the simulated drills make; one is written as HTML, which the page must show as text.
MISTAKES = ["the product instead of the sum", "a transpose left out", "<b>sign</b> flipped"]


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def answer(entry: dict, record: dict, right: bool, level: int, mistake: str | None, moment: datetime) -> None:
    """One drill answer counted as progress.js counts it (format 2)."""
    entry["attempts"] = entry.get("attempts", 0) + 1
    entry["right"] = entry.get("right", 0) + right
    entry["last"] = iso(moment)
    if entry.get("level") != level:
        entry["streak"], entry["misses"] = 0, 0
    entry["level"] = level
    entry["streak"] = entry["streak"] + 1 if right else 0
    entry["misses"] = 0 if right else entry["misses"] + 1
    entry["mistake"] = None if right else mistake
    if not right and mistake:
        entry.setdefault("mistakes", {})
        entry["mistakes"][mistake] = entry["mistakes"].get(mistake, 0) + 1
    record["answered"] += 1
    entry["at"] = record["answered"]


def simulate(rng: random.Random, edition: Edition, form: int = 2, version: str | None = None) -> dict:
    """A student's record: some chapters practised (drills, exercises or both), answers one by one."""
    record = {"format": 2, "book": {"name": "chainrule", "version": version or edition.version}, "answered": 0}
    record.update(drills={}, exercises={})
    chapters = [chapter for chapter in edition.chapters if rng.random() < 0.55]
    kinds = [kind for chapter in chapters for kind in edition.kinds_of(chapter.chapter) if rng.random() < 0.7]
    queue = [kind for kind in kinds for _ in range(rng.randint(1, 14))]
    rng.shuffle(queue)
    skill, moment = rng.uniform(0.35, 0.95), START + timedelta(hours=rng.randint(0, 500))
    for kind in queue:
        moment += (
            timedelta(seconds=rng.randint(15, 200)) if rng.random() < 0.95 else timedelta(hours=rng.randint(2, 30))
        )
        right = rng.random() < skill
        mistake = rng.choice(MISTAKES) if not right and rng.random() < 0.7 else None
        level = rng.choice(sorted(kind.levels))
        answer(record["drills"].setdefault(kind.name, {}), record, right, level, mistake, moment)
    for chapter in chapters:
        for label in chapter.exercises:
            if rng.random() < 0.5:
                checks = rng.choice([0, 0, 1, 2, 3])
                passes = rng.randint(0, checks)
                entry = {"attempts": checks, "right": passes, "done": rng.random() < 0.5}
                if checks:  # the last check passed only if one did
                    entry.update(passed=passes > 0 and rng.random() < 0.8, last=iso(moment))
                record["exercises"][label] = entry
    if form == 1:
        record = {"drills": record["drills"], "exercises": record["exercises"]}
        for entry in record["drills"].values():
            for name in ("streak", "misses", "level", "mistake", "mistakes", "at"):
                entry.pop(name, None)
    return record


def write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value, indent=1), encoding="utf-8")


def class_folder(folder: Path, edition: Edition, seed: int = 7) -> dict[str, dict]:
    """30 students' records (some in a folder each, one named <script>, one who practised nothing) and 5 bad
    files; returns the counted students' records by name, as the page must count them."""
    rng = random.Random(seed)
    counted = {}
    for index in range(30):
        name = "<script>" if index == 3 else f"student{index:02d}"
        record = {"format": 2, "book": {"name": "chainrule", "version": edition.version}, "answered": 0}
        record.update(drills={}, exercises={})
        if index != 5:  # student05 practised nothing
            record = simulate(rng, edition, form=1 if index % 4 == 0 else 2)
        path = folder / (f"{name}.json" if index % 3 else f"{name}/chainrule-progress.json")
        if index == 7:
            path = folder / "section-b" / name / "chainrule-progress (1).json"
            name = f"section-b/{name}"
        write(path, record)
        counted[name] = record
    write(folder / "broken.json", '{"drills": {"adjoint": {"attempts": 3,')
    write(folder / "package.json", {"name": "my-app", "version": "1.0.0", "dependencies": {"left-pad": "^1.3.0"}})
    other = simulate(rng, edition, version="0123456789ab")
    other["drills"]["oldkind"] = {"attempts": 4, "right": 2, "last": iso(START)}
    other["exercises"]["ex-gone-away"] = {"attempts": 1, "right": 1, "passed": True, "last": iso(START)}
    write(folder / "old-edition.json", other)
    counted["old-edition"] = {**other, "drills": {k: v for k, v in other["drills"].items() if k != "oldkind"}}
    counted["old-edition"]["exercises"] = {k: v for k, v in other["exercises"].items() if k != "ex-gone-away"}
    write(folder / "right-more.json", {"drills": {"adjoint": {"attempts": 9, "right": 12, "last": iso(START)}}})
    thousand = simulate(rng, edition)
    thousand["drills"].setdefault("adjoint", {"attempts": 1, "right": 1, "last": iso(START)})
    # All 1000 right: no run of misses or named mistakes left from the simulated answers, whatever the draw.
    thousand["drills"]["adjoint"].update(attempts=1000, right=1000, misses=0, mistake=None)
    thousand["drills"]["adjoint"].pop("mistakes", None)
    write(folder / "thousand" / "chainrule-progress.json", thousand)
    counted["thousand"] = thousand
    write(folder / "notes.txt", "not a record")
    return counted

"""``python -m tools.progress RECORDS [--out FILE]``: the class's practice records in one page.

``make progress RECORDS=<folder>`` runs it. The page is written to ``RECORDS/progress.html``
by default, beside the records it reads, as ``make grade`` writes ``grades.csv`` beside the
submissions: the report and its data stay together, and a second run replaces it. Exit status
0 when the page is written (also when the folder holds no record: the page says so), 2 when
``RECORDS`` is not a folder or the page cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.progress",
        description="The practice records students exported from the book's pages, in one HTML page.",
    )
    parser.add_argument("records", help="the folder of records (chainrule-progress.json files), searched")
    parser.add_argument("--out", type=Path, help="where to write the page (default: RECORDS/progress.html)")
    arguments = parser.parse_args(argv)
    if not arguments.records.strip():  # Path("") would be the current folder
        print(
            "usage: make progress RECORDS=<folder of the students' chainrule-progress.json> [OUT=<file>]",
            file=sys.stderr,
        )
        return 2
    records = Path(arguments.records)
    if not records.is_dir():
        what = "is a file, not a folder" if records.exists() else "does not exist"
        print(f"progress: {records} {what}: give the folder that holds the students' records", file=sys.stderr)
        return 2
    out = arguments.out or records / "progress.html"
    # The book is read only now: a wrong folder is told at once.
    from tools.progress.checks import plural
    from tools.progress.edition import load_edition
    from tools.progress.page import report

    text, folder, result = report(records, load_edition(), datetime.now(timezone.utc), out)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as error:
        print(f"progress: cannot write {out}: {error.strerror}", file=sys.stderr)
        return 2
    left_out = sum(not record.counted for record in folder.records)
    print(
        f"{plural(len(folder.records), 'record')} read, {len(result.students)} counted, {left_out} not counted: "
        f"file://{out.resolve()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

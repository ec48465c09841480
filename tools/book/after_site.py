"""Run a build made from the site only when the site changed since it last ran, or its output is gone.

    python -m tools.book.after_site NAME OUTPUT ... -- COMMAND ...

``make pdf``, ``make book-student`` and ``make assignments`` run after the site's build and are
made from what it is made from (the chapters, their executed notebooks, the tools): the site's
fingerprint, ``_build/.site-fingerprint`` (tools/book/build_book.py), names their inputs too.
When COMMAND succeeds, that fingerprint is copied to ``_build/.NAME-made-from``. The next time,
while the fingerprint is the same and every OUTPUT exists, COMMAND is not run: a second
``make test`` with nothing changed prints no PDF again (75 s) nor the student site (35 s).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools.book.build_book import SITE_STAMP

BUILD = Path("_build")


def made_from(name: str) -> Path:
    return BUILD / f".{name}-made-from"


def up_to_date(name: str, outputs: list[Path]) -> bool:
    site, stamp = BUILD / SITE_STAMP, made_from(name)
    return (
        site.is_file()
        and stamp.is_file()
        and stamp.read_text() == site.read_text()
        and all(path.exists() for path in outputs)
    )


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") < 1 or argv.index("--") == len(argv) - 1:
        sys.exit("usage: python -m tools.book.after_site NAME OUTPUT ... -- COMMAND ...")
    split = argv.index("--")
    name, outputs, command = argv[0], [Path(arg) for arg in argv[1:split]], argv[split + 1 :]
    if up_to_date(name, outputs):
        print(f"{name}: the site is as it was when this was last made: not made again")
        return 0
    made_from(name).unlink(missing_ok=True)
    site = BUILD / SITE_STAMP
    fingerprint = site.read_text() if site.is_file() else None  # as it was when the command began
    status = subprocess.run(command).returncode
    if status == 0 and fingerprint is not None:
        made_from(name).write_text(fingerprint)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

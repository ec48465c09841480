"""Run a build made from the site only when the site changed since it last ran, or its output is gone.

    python -m tools.book.after_site NAME OUTPUT ... -- COMMAND ...

``make pdf``, ``make book-student`` and ``make assignments`` run after the site's build and are
made from what it is made from (the chapters, their executed notebooks, the tools): the site's
fingerprint, ``_build/.site-fingerprint`` (tools/book/build_book.py), names their inputs too.
The fingerprint holds files only, so the environment is added to it: the installed Python
packages (a package installed by hand counts) and the system's (Debian's list, by size and
time: Chromium prints the PDF). When COMMAND succeeds, the two are written to
``_build/.NAME-made-from``. The next time, while they are the same and every OUTPUT exists,
COMMAND is not run: a second ``make test`` with nothing changed prints no PDF again (75 s)
nor the student site (35 s).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tools import stamps
from tools.book.build_book import SITE_STAMP

BUILD = Path("_build")


def made_from(name: str) -> Path:
    return BUILD / f".{name}-made-from"


def inputs() -> str | None:
    """The site's fingerprint and the environment's, or None when the site was not built."""
    site = BUILD / SITE_STAMP
    if not site.is_file():
        return None
    return f"{site.read_text().strip()} {stamps.environment()}"


def up_to_date(name: str, outputs: list[Path]) -> bool:
    stamp = made_from(name)
    made = inputs()
    return made is not None and stamp.is_file() and stamp.read_text() == made and all(p.exists() for p in outputs)


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") < 1 or argv.index("--") == len(argv) - 1:
        sys.exit("usage: python -m tools.book.after_site NAME OUTPUT ... -- COMMAND ...")
    split = argv.index("--")
    name, outputs, command = argv[0], [Path(arg) for arg in argv[1:split]], argv[split + 1 :]
    if up_to_date(name, outputs):
        print(f"{name}: the site is as it was when this was last made: not made again")
        return 0
    made_from(name).unlink(missing_ok=True)
    before = inputs()
    status = subprocess.run(command).returncode
    if status == 0 and before is not None and inputs() == before:  # nothing changed while it ran
        made_from(name).write_text(before)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The lock files: each the whole tree of one environment, every package at one version with the
sha256 of each of its files, made by uv's resolver (``uv pip compile --generate-hashes``) from a
hand-written list of what that environment needs.

===============================================  =========================================================
input (hand-written, with why)                   lock (``make lock``)
===============================================  =========================================================
``requirements.txt``                             ``requirements.lock``: the book's venv (``.venv``)
``tools/grader/requirements.in``                 ``tools/grader/requirements.lock``: the autograder zip,
                                                 make grade's venv (tools/grader/assignments.py)
``tests/offline_requirements.txt``,              ``tests/wheelhouse.lock``: the tests' offline venvs
``tests/colab_requirements.txt``                 (the wheelhouse make test downloads, tests/offline.py)
===============================================  =========================================================

The second and third take requirements.lock's versions (``-c``): one version of each package
everywhere (tests/repo/test_lock.py checks it).

``python3 tools/lock.py UV "FIND_LINKS ..." [PACKAGE ...]`` (``make lock [UPGRADE='name ...']``)
makes them again. FIND_LINKS are pip's find-links, where torch's CPU build lies. Each PACKAGE moves
to its newest version that fits; every other version already locked stays (uv reads the old lock
as its preferences). The target is fixed (:data:`TARGET`), so a lock does not depend on who makes it.

Only the standard library: tools/grader/grading_env.py reads the locks with any python3.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "requirements.lock"
GRADING = ROOT / "tools" / "grader" / "requirements.lock"
WHEELHOUSE = ROOT / "tests" / "wheelhouse.lock"
#: (inputs, lock): the book's lock first, as the others are constrained by it.
LOCKS = [
    (["requirements.txt"], BOOK),
    (["tools/grader/requirements.in"], GRADING),
    (["tests/offline_requirements.txt", "tests/colab_requirements.txt"], WHEELHOUSE),
]
#: CPython 3.11.7 (this machine's 3.11; soupsieve 4.1.3, beautifulsoup4's pin, needs 3.11.5 or later),
#: Linux x86_64 with glibc 2.28 or later (manylinux_2_28, the tag of torch's CPU wheel). CI's
#: setup-python 3.11 and ubuntu-latest match.
TARGET = ["--python-version", "3.11.7", "--python-platform", "x86_64-manylinux_2_28"]
#: A requirement as uv writes it: name, extras, ==version, then the options (--hash=...).
REQUIREMENT = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)(.*)")


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares it (Sphinx_Book.Theme -> sphinx-book-theme)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(path: Path) -> dict[str, str]:
    """A lock's requirements, normalized name -> its line (``name==version --hash=sha256:...``)."""
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    found = {}
    for line in text.splitlines():
        line = " ".join(line.split("#", 1)[0].split())
        if line:
            match = REQUIREMENT.fullmatch(line)
            if not match:
                raise ValueError(f"{path}: not a pinned requirement: {line!r}")
            found[normalized(match[1])] = line
    return found


def version(line: str) -> str:
    """The version of a lock's line (``torch==2.13.0+cpu --hash=...`` -> ``2.13.0+cpu``)."""
    match = REQUIREMENT.fullmatch(line)
    if not match:
        raise ValueError(f"not a pinned requirement: {line!r}")
    return match[3]


def problems(path: Path) -> list[str]:
    """What makes a lock unfit here: a line without a hash, torch not the CPU build, a CUDA package.

    Without torch's CPU wheel among the find-links, uv takes PyPI's torch, which pulls gigabytes
    of CUDA packages (nvidia-*)."""
    found = entries(path)
    wrong = [f"{line.split()[0]} has no hash" for line in found.values() if "--hash=sha256:" not in line]
    if "torch" in found and not version(found["torch"]).endswith("+cpu"):
        wrong.append(f"{found['torch'].split()[0]} is not the CPU build (give pip's find-links its wheel)")
    wrong += [f"{name} is a CUDA package" for name in found if name.startswith("nvidia-")]
    return wrong


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        raise SystemExit(__doc__.split("\n\n")[3])
    uv, links, upgrade = argv[0], argv[1].split(), argv[2:]
    options = ["--quiet", "--generate-hashes", *TARGET]
    options += [part for link in links for part in ("--find-links", link)]
    options += [part for package in upgrade for part in ("--upgrade-package", package)]
    for inputs, lock in LOCKS:
        constraints = [] if lock == BOOK else ["-c", str(BOOK.relative_to(ROOT))]
        output = str(lock.relative_to(ROOT))
        run = subprocess.run([uv, "pip", "compile", *options, *constraints, *inputs, "-o", output], cwd=ROOT)
        if run.returncode != 0:
            return run.returncode
        wrong = problems(lock)
        if wrong:
            raise SystemExit(f"tools/lock.py: {output}: " + "; ".join(wrong))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

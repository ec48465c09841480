"""The lock files (tools/lock.py, ``make lock``): each the whole tree of one environment, made by uv.

* requirements.lock is made from requirements.txt as it is now: the packages the lock says it took
  from requirements.txt (``# via -r requirements.txt``) are its pins, at their versions. The texts
  are compared: ``uv pip compile`` needs the package index.
* Each other lock is made from its lists as they are now, and holds requirements.lock's version and
  hashes of every package the two share: one version of each package everywhere.
* Every locked line has a hash; torch is the CPU build; no CUDA package (nvidia-*) is in any lock.
* Every lock was made for the one target, CPython 3.11 on Linux x86_64 (tools.lock.TARGET).
* Each check can fail: a planted violation is reported.
"""

from __future__ import annotations

import re
from pathlib import Path

from common import ROOT

from tools import lock


def requested(path: Path) -> dict[str, str | None]:
    """A hand-written list's requirements: normalized name -> its pinned version, or None when unpinned."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            match = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?(==(\S+))?", line)
            assert match, f"{path}: {line!r}"
            found[lock.normalized(match[1])] = match[4]
    return found


def sources(path: Path) -> dict[str, set[str]]:
    """A lock's ``# via`` notes: normalized name -> what asked for it (``-r requirements.txt``, a package)."""
    found: dict[str, set[str]] = {}
    name = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            name = lock.normalized(re.split(r"[=\[ ]", line, maxsplit=1)[0])
            found[name] = set()
        elif name and line.strip().startswith("#"):
            note = line.strip().removeprefix("#").strip().removeprefix("via").strip()
            if note:
                found[name].add(note)
    return found


def stale(inputs: list[Path], path: Path) -> list[str]:
    """How ``path`` differs from a lock made from ``inputs`` now: a package asked for and not taken from
    them, taken from them and no longer asked for, or at a version other than the pin."""
    locked, notes = lock.entries(path), sources(path)
    wanted = {name: pin for source in inputs for name, pin in requested(source).items()}
    # the lock names each list as uv was given it: relative to the repository (a planted one: absolute)
    names = [source.relative_to(ROOT).as_posix() if source.is_relative_to(ROOT) else str(source) for source in inputs]
    named = {f"-r {name}" for name in names}
    taken = {name for name, via in notes.items() if via & named}
    wrong = [f"{name} is asked for but not locked as asked" for name in sorted(set(wanted) - taken)]
    wrong += [f"{name} is locked from {sorted(named)} but no longer asked for" for name in sorted(taken - set(wanted))]
    for name, pin in sorted(wanted.items()):
        if pin and name in locked and lock.version(locked[name]) != pin:
            wrong.append(f"{name} is pinned at {pin} but locked at {lock.version(locked[name])}")
    return wrong


def differs_from_book(path: Path, book: Path) -> list[str]:
    """The packages ``path`` shares with ``book`` at another version or with other hashes."""
    mine, books = lock.entries(path), lock.entries(book)
    return [
        f"{name}: {line} (the book's: {books[name]})" for name, line in mine.items() if books.get(name, line) != line
    ]


INPUTS = {lock_path: [ROOT / name for name in names] for names, lock_path in lock.LOCKS}


def test_the_locks_are_the_three_of_tools_lock():
    assert [path.relative_to(ROOT).as_posix() for path in INPUTS] == [
        "requirements.lock",
        "tools/grader/requirements.lock",
        "tests/wheelhouse.lock",
    ]
    assert len(lock.entries(lock.BOOK)) >= 150, "the book's whole tree"


def test_each_lock_is_made_from_its_lists_as_they_are_now():
    for path, inputs in INPUTS.items():
        assert stale(inputs, path) == [], f"{path.relative_to(ROOT)} is stale: run `make lock` (CONTRIBUTING.md)"


def test_the_other_locks_hold_the_books_versions_and_hashes():
    for path in INPUTS:
        assert differs_from_book(path, lock.BOOK) == [], f"{path.relative_to(ROOT)}: run `make lock`"
    # Only what the book's venv lacks comes from elsewhere, and it is pinned in its list by hand.
    for path, inputs in INPUTS.items():
        extra = set(lock.entries(path)) - set(lock.entries(lock.BOOK))
        pinned = {name for source in inputs for name, pin in requested(source).items() if pin}
        assert extra <= pinned, f"{path.relative_to(ROOT)} floats {sorted(extra - pinned)}"


def test_every_line_is_hashed_torch_is_the_cpu_build_and_no_cuda_package_is_locked():
    for path in INPUTS:
        assert lock.problems(path) == [], path.relative_to(ROOT)
    assert lock.version(lock.entries(lock.BOOK)["torch"]).endswith("+cpu")


def test_every_lock_was_made_for_the_one_target():
    for path, inputs in INPUTS.items():
        command = path.read_text(encoding="utf-8").split("\n", 2)[1]
        assert command.startswith("#    uv pip compile --generate-hashes " + " ".join(lock.TARGET)), command
        assert all(str(source.relative_to(ROOT)) in command for source in inputs), command


def test_make_installs_the_locks_with_every_hash_checked():
    """The set-up installs requirements.lock, not the list (sync: nothing else stays), and the tests'
    wheelhouse is the files of its lock; `make lock` runs tools/lock.py."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^\t\$\(UV\) pip sync \$\(UV_OPTIONS\) --require-hashes requirements\.lock$", makefile, re.M)
    assert re.search(r"^\t\$\(UV\) pip install \$\(UV_OPTIONS\) --no-deps -e \. -e course$", makefile, re.M)
    assert re.search(r"pip download .*--no-deps --require-hashes .*-r tests/wheelhouse\.lock", makefile)
    assert re.search(r"^lock: .*\n\t\$\(PYTHON\) tools/lock\.py ", makefile, re.M)
    assert "-r requirements.txt" not in makefile, "make installs the lock, not the list"


def test_the_otter_plugin_was_read_against_the_otter_that_grades():
    """The plugin is safe by the order of otter's runner's events, read in one version: the grading lock's."""
    from chainrule_course.grading.otter_plugin import OTTER_READ

    locked = lock.version(lock.entries(lock.GRADING)["otter-grader"])
    pinned = re.search(r"^otter-grader==(\S+)", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned and OTTER_READ == locked == pinned.group(1), (
        f"otter-grader: the plugin was read against {OTTER_READ}, the grading lock has {locked}, requirements.txt "
        f"pins {pinned and pinned.group(1)}: read course/chainrule_course/grading/otter_plugin.py against the "
        "new runner (the order of its events), then move OTTER_READ"
    )


def test_the_checks_find_planted_violations(tmp_path: Path):
    """A pin moved without `make lock`, a pin added, a pin removed, a line without hash, PyPI's torch, a
    CUDA package, and a grading lock at another version than the book's: each is reported."""
    requirements, book = tmp_path / "requirements.txt", tmp_path / "requirements.lock"
    book_text = lock.BOOK.read_text(encoding="utf-8").replace("-r requirements.txt", f"-r {requirements}")
    pins = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    book.write_text(book_text)
    requirements.write_text(pins)
    assert stale([requirements], book) == []
    pytest_pin = requested(requirements)["pytest"]
    requirements.write_text(pins.replace(f"pytest=={pytest_pin}", "pytest==0.0.1"))
    assert stale([requirements], book) == [f"pytest is pinned at 0.0.1 but locked at {pytest_pin}"]
    requirements.write_text(pins + "left-pad==1.0\n")
    assert stale([requirements], book) == ["left-pad is asked for but not locked as asked"]
    requirements.write_text(re.sub(r"^micrograd==.*\n", "", pins, flags=re.M))
    assert [line.split()[0] for line in stale([requirements], book)] == ["micrograd"]

    torch = re.search(r"^torch==(\S+)\+cpu \\\n(    --hash=\S+ \\\n)*    --hash=\S+\n", book_text, re.M)
    assert torch, "requirements.lock has no torch +cpu"
    cuda = "nvidia-cublas==13.0.0 \\\n    --hash=sha256:" + "0" * 64 + "\n"
    pypi_torch = f"torch=={torch[1]} \\\n    --hash=sha256:" + "1" * 64 + "\n"
    book.write_text(book_text.replace(torch[0], pypi_torch + cuda))
    assert lock.problems(book) == [
        f"torch=={torch[1]} is not the CPU build (give pip's find-links its wheel)",
        "nvidia-cublas is a CUDA package",
    ]
    book.write_text(book_text.replace(torch[0], f"torch=={torch[1]}+cpu\n"))
    assert lock.problems(book) == [f"torch=={torch[1]}+cpu has no hash"]

    grading = tmp_path / "grading.lock"
    numpy = lock.entries(lock.GRADING)["numpy"].split()[0]
    grading.write_text(lock.GRADING.read_text(encoding="utf-8").replace(f"\n{numpy} ", "\nnumpy==0.0.1 "))
    [moved] = differs_from_book(grading, lock.BOOK)
    assert moved.startswith("numpy: numpy==0.0.1 "), moved

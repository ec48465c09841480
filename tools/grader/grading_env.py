"""The grading environment: a venv built from an autograder zip's own ``requirements.txt``.

Usage: ``python -m tools.grader.grading_env <zip> <venv> [--uv <uv>]`` (``make grade`` runs it with
``_build/assignments/<assignment>/autograder/<assignment>-autograder.zip``).

``make grade`` grades in this venv, not in the book's: it holds only what grading needs,
which is what Gradescope installs from the same zip (the whole tree of otter-grader and numpy,
locked with hashes in tools/grader/requirements.lock, and the wheels of chainrule and
chainrule-course with their sha256, written by ``tools/grader/assignments.py``), plus MathJax for the
written-work pages (:data:`EXTRA`, at requirements.lock's version and hashes). So a machine that grades
needs no book toolchain (no chromium, no graphviz, no jupyter-book), and local and Gradescope grades
come from one environment. Every file's hash is checked (pip checks them all when one line has one;
uv is told to).

The venv is built again only when the zip's requirements changed, and the wheels installed
again only when they changed (a stamp file holds their hashes): a wheel's name stays the same
when its sources change. It uses only the standard library, so
it runs with any python3. With ``--uv`` (``make grade`` passes the book venv's uv when there is
one), uv creates the venv and installs into it, compiling every module on every core; otherwise
pip does, as Gradescope's image does. Set ``PIP_NO_INDEX=1`` and ``PIP_FIND_LINKS=<folder of
wheels>`` (pip), or pass ``uv_options`` (``--offline --no-index --find-links <folder>``), to build
it offline.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

from tools import lock

#: Installed beside the zip's requirements: MathJax for chainrule_course.grading.grade's written/*.html.
#: It needs nothing else; its line (version and hashes) is requirements.lock's.
EXTRA = ["django-static-mathjax"]
STAMP = ".grading-env"


def extra_requirements() -> str:
    """:data:`EXTRA`'s lines of requirements.lock, as a requirements file."""
    locked = lock.entries(lock.BOOK)
    return "".join(f"{locked[name]}\n" for name in EXTRA)


def fingerprints(archive_path: Path) -> tuple[str, str]:
    """Hashes of what the venv is built from: (the zip's requirements and EXTRA, the wheels in the zip).

    The requirements' hash leaves out the lines of the wheels, whose sha256 changes with each build:
    when only the wheels changed, only they are installed again."""
    with zipfile.ZipFile(archive_path) as archive:
        lines = archive.read("requirements.txt").decode().splitlines()
        kept = "\n".join(line for line in lines if not line.split(" ", 1)[0].endswith(".whl"))
        requirements = hashlib.sha256((kept + "\n" + extra_requirements()).encode())
        wheels = hashlib.sha256()
        for name in sorted(n for n in archive.namelist() if n.endswith(".whl")):
            wheels.update(archive.read(name))
    return requirements.hexdigest(), wheels.hexdigest()


def build(
    archive_path: Path,
    folder: Path,
    env: dict[str, str] | None = None,
    uv: Path | None = None,
    uv_options: tuple[str, ...] = (),
    base: str = sys.executable,
    compile_bytecode: bool = True,
) -> Path:
    """The venv at ``folder`` with the zip's requirements installed (again only when they changed); its python.

    ``env`` is the installer's environment (default: this process's). With ``uv``, uv builds the
    venv on the Python ``base`` (``uv_options`` go to its install command); without, venv and pip
    do, on this Python. ``compile_bytecode``: uv compiles every module (11 CPU-s), which the
    sandbox, unable to write ``.pyc`` files, needs; a caller whose own processes write them may
    skip it.
    """
    archive_path, folder = Path(archive_path).resolve(), Path(folder).resolve()
    uv = Path(uv).resolve() if uv else None  # it runs in a temporary folder: a relative path would miss
    python = folder / "bin" / "python"
    stamp = folder / STAMP
    wanted = "\n".join(fingerprints(archive_path))
    found = stamp.read_text().splitlines() if python.is_file() and stamp.is_file() else []
    if found == wanted.splitlines():
        return python
    stamp.unlink(missing_ok=True)  # written again last: a venv without it is incomplete
    with tempfile.TemporaryDirectory(prefix="grading-env-") as work:
        with zipfile.ZipFile(archive_path) as archive:  # requirements.txt names the ./*.whl
            for name in archive.namelist():
                if name == "requirements.txt" or name.endswith(".whl"):
                    archive.extract(name, work)
        (Path(work) / "extra.txt").write_text(extra_requirements())
        if found[:1] == wanted.splitlines()[:1]:  # the same requirements: only the wheels changed
            wheels = sorted(path.name for path in Path(work).glob("*.whl"))
            arguments = ["--reinstall", "--no-deps", *wheels] if uv else ["--force-reinstall", "--no-deps", *wheels]
        else:
            if uv:
                _run([str(uv), "venv", "--quiet", "--clear", "--python", base, str(folder)], work, env)
            else:
                venv.EnvBuilder(with_pip=True, clear=True).create(folder)
            arguments = ["-r", "requirements.txt", "-r", "extra.txt", *(["--require-hashes"] if uv else [])]
        if uv:
            _run(
                [
                    str(uv),
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    str(python),
                    *(["--compile-bytecode"] if compile_bytecode else []),
                    *uv_options,
                    *arguments,
                ],
                work,
                env,
            )
        else:
            _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *arguments], work, env)
    stamp.write_text(wanted)
    return python


def _run(command: list[str], cwd: str, env: dict[str, str] | None) -> None:
    run = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise SystemExit(f"grading_env: `{' '.join(command)}` failed:\n{run.stderr[-3000:]}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grading_env.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("zip", type=Path, help="_build/assignments/<name>/autograder/<name>-autograder.zip")
    parser.add_argument("venv", type=Path, help="the venv to build or bring up to date")
    parser.add_argument("--uv", type=Path, help="build it with this uv instead of venv and pip")
    options = parser.parse_args(argv)
    if not options.zip.is_file():
        known = sorted(path.name for path in options.zip.parents[2].glob("*/autograder/*-autograder.zip"))
        raise SystemExit(f"make grade: no autograder zip at {options.zip}; run `make assignments` (there: {known})")
    print(build(options.zip, options.venv, uv=options.uv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

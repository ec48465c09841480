"""The grading environment: a venv built from an autograder zip's own ``requirements.txt``.

Usage: ``python3 tools/grading_env.py <assignment> <venv>`` (``make grade`` runs it), which
finds ``_build/assignments/<assignment>/autograder/<assignment>-autograder.zip``.

``make grade`` grades in this venv, not in the book's: it holds only what grading needs,
which is what Gradescope installs from the same zip (otter-grader, numpy and chainrule's
wheel, pinned by ``tools/assignments.py``), plus MathJax for the written-work pages
(:data:`EXTRA`). So a machine that grades needs no book toolchain (no chromium, no
graphviz, no jupyter-book), and local and Gradescope grades come from one environment.

The venv is built again only when the zip's requirements changed, and chainrule's wheel
installed again only when the wheel changed (a stamp file holds their hashes): the wheel's
name stays the same when ``src/chainrule`` changes. It uses only the standard library, so
it runs with any python3. Set ``PIP_NO_INDEX=1`` and ``PIP_FIND_LINKS=<folder of wheels>``
to build it offline.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

#: Installed beside the zip's requirements: MathJax for tools/grade.py's written/*.html.
EXTRA = ["django-static-mathjax==3.2.2.1"]
STAMP = ".grading-env"


def fingerprints(archive_path: Path) -> tuple[str, str]:
    """Hashes of what the venv is built from: (the zip's requirements and EXTRA, the wheels in the zip)."""
    with zipfile.ZipFile(archive_path) as archive:
        requirements = hashlib.sha256(archive.read("requirements.txt") + "\n".join(EXTRA).encode())
        wheels = hashlib.sha256()
        for name in sorted(n for n in archive.namelist() if n.endswith(".whl")):
            wheels.update(archive.read(name))
    return requirements.hexdigest(), wheels.hexdigest()


def build(archive_path: Path, folder: Path, env: dict[str, str] | None = None) -> Path:
    """The venv at ``folder`` with the zip's requirements installed (again only when they changed); its python.

    ``env`` is pip's environment (default: this process's).
    """
    archive_path, folder = Path(archive_path).resolve(), Path(folder).resolve()
    python = folder / "bin" / "python"
    stamp = folder / STAMP
    wanted = "\n".join(fingerprints(archive_path))
    found = stamp.read_text().splitlines() if python.is_file() and stamp.is_file() else []
    if found == wanted.splitlines():
        return python
    stamp.unlink(missing_ok=True)  # written again last: a venv without it is incomplete
    with tempfile.TemporaryDirectory(prefix="grading-env-") as work:
        with zipfile.ZipFile(archive_path) as archive:  # requirements.txt names ./chainrule-*.whl
            for name in archive.namelist():
                if name == "requirements.txt" or name.endswith(".whl"):
                    archive.extract(name, work)
        if found[:1] == wanted.splitlines()[:1]:  # the same requirements: only the wheel changed
            wheels = sorted(path.name for path in Path(work).glob("*.whl"))
            arguments = ["--force-reinstall", "--no-deps", *wheels]
        else:
            venv.EnvBuilder(with_pip=True, clear=True).create(folder)
            arguments = ["-r", "requirements.txt", *EXTRA]
        command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *arguments]
        run = subprocess.run(command, cwd=work, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise SystemExit(f"grading_env: `pip install {' '.join(arguments)}` from {archive_path} failed in "
                         f"{folder}:\n{run.stderr[-3000:]}")
    stamp.write_text(wanted)
    return python


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from grade import autograder_zip  # the standard library only, until it grades

    print(build(autograder_zip(argv[0]), Path(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The student's kernel as user nobody, where otter runs as root (Gradescope's autograder does).

``otter run`` starts a notebook's kernel as the user it runs as. On Gradescope that is root,
so a notebook could read the hidden tests and the reference solution in the autograder's
folder, and write the grader's installed code. :func:`prepare`, which the otter plugin calls
before the kernel starts, makes the kernel run as nobody instead, and takes from nobody what
the grader keeps:

- the autograder's folders (``source``, ``results``, and the tests beside the notebook) are
  readable by root alone; the notebook's folder and a home of its own are the kernel's;
- the ``python3`` kernel that otter asks for is, through ``JUPYTER_PATH``, this module run as
  root: it copies the kernel's connection file where nobody may read it, drops to nobody,
  and starts ipykernel.

Where otter does not run as root, or nobody cannot run this Python (it lives in a folder
only root may enter), nothing changes and :func:`prepare` says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NOBODY = 65534
KERNEL = "python3"  # the kernel otter runs a notebook in (force_python3_kernel)


def prepare(submission: Path) -> str:
    """Make the kernel of ``submission`` (in otter's ``<autograder>/submission``) run as nobody.

    Returns "" when it will, or why it will not.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "otter does not run as root here: the kernel runs as otter's user"
    home = Path(tempfile.mkdtemp(prefix="chainrule-kernel-"))
    os.chmod(home, 0o755)
    os.chown(home, NOBODY, NOBODY)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import ipykernel, chainrule.exercises.kernel"],
            user=NOBODY,
            group=NOBODY,
            extra_groups=[],
            cwd=home,
            capture_output=True,
            text=True,
        ).returncode
    except OSError:  # nobody may not even start it
        probe = -1
    if probe != 0:
        shutil.rmtree(home, ignore_errors=True)
        return f"user nobody cannot run {sys.executable}: the kernel runs as root"
    folder = submission.resolve().parent
    for kept in (folder / "tests", folder.parent / "source", folder.parent / "results"):
        if kept.is_dir():
            os.chmod(kept, 0o700)
    for path in (folder, *folder.iterdir()):
        if path.name != "tests" and not path.is_symlink():
            os.chown(path, NOBODY, NOBODY)
    specs = home / "kernelspec" / "kernels" / KERNEL
    specs.mkdir(parents=True)
    argv = [sys.executable, "-m", __name__, "{connection_file}", str(home)]
    (specs / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))
    paths = [str(home / "kernelspec"), os.environ.get("JUPYTER_PATH", "")]
    os.environ["JUPYTER_PATH"] = os.pathsep.join(path for path in paths if path)
    return ""


def give(path: Path) -> None:
    """Make the folder ``path`` (the record's) the kernel's, when the kernel runs as nobody."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)


def main(argv: list[str]) -> None:
    """Started as the ``python3`` kernel, as root: become nobody, then start ipykernel."""
    connection, home, *more = argv  # more: what jupyter_client adds to a kernel's command line
    copy = Path(home) / "connection.json"
    shutil.copyfile(connection, copy)
    os.chown(copy, NOBODY, NOBODY)
    os.chmod(copy, 0o600)
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    os.environ.update(HOME=home, USER="nobody", LOGNAME="nobody")
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", str(copy), *more])


if __name__ == "__main__":
    main(sys.argv[1:])

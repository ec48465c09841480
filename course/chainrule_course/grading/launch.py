"""The first program an answer's process runs: its limits, cgroup and user set, then the answer's command.

Started as ``python -I -S launch.py SETTINGS COMMAND...`` (:func:`command`), as the grader's user: it finds
COMMAND's program on ``PATH`` (as Popen would), sets what SETTINGS (JSON) says, in this order, then becomes
COMMAND (``os.execv``, the same process):

* ``limits``: ``[name, soft, hard]`` each, for :func:`resource.setrlimit` (``"RLIMIT_CPU"``, ...);
* ``cgroups``: the folders of a cgroup (v1) this process joins, and what it runs with it;
* ``user``: a user to become, in no group: first a network namespace of its own where the kernel
  gives one to root, else after the drop one in a user namespace of its own; then ``no_new_privs``.

A program of its own, not :class:`subprocess.Popen`'s ``preexec_fn``: that runs Python in the forked
child of the grader, which may have threads (JAX's, in the tests) and can deadlock there. The child is
started by fork and exec in C, and this runs in a fresh Python. A step that fails stops it, with a
message on stderr and a non-zero exit, before the command runs. Standard library only.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import sys

#: The exit code when a step failed and the command did not run: the grader's failure, never the answer's
#: (chainrule_course.grading.apart.LAUNCH_FAILED, which this file cannot import: it runs with -I -S).
FAILED = 125
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
PR_SET_NO_NEW_PRIVS = 38


def command(settings: dict, python: str = sys.executable) -> list[str]:
    """The launcher with ``settings``: the answer's command is appended to it."""
    return [python, "-I", "-S", os.path.abspath(__file__), json.dumps(settings)]


def apply(settings: dict) -> None:
    """Set ``settings`` on this process (see the module's docstring)."""
    for name, soft, hard in settings.get("limits", []):
        resource.setrlimit(getattr(resource, name), (soft, hard))
    for folder in settings.get("cgroups", []):
        with open(os.path.join(folder, "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))
    if settings.get("user") is not None:
        become(settings["user"])


def become(uid: int) -> None:
    """Become ``uid``, in no group, with a network of its own where the kernel allows one, and no_new_privs."""
    libc = ctypes.CDLL(None, use_errno=True)  # the C library this Python is linked with
    alone = libc.unshare(CLONE_NEWNET) == 0  # as root: may fail (no CAP_SYS_ADMIN), then the next one may not
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if not alone:  # a user namespace of its own may still give it a network of its own
        libc.unshare(CLONE_NEWUSER | CLONE_NEWNET)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        fail("usage: launch.py SETTINGS COMMAND...")
    program = shutil.which(argv[2]) or argv[2]  # found on PATH as the grader, as Popen finds it
    try:
        apply(json.loads(argv[1]))
        os.execv(program, argv[2:])
    except Exception as error:  # noqa: BLE001 - whatever failed, the command must not run without it
        fail(f"{type(error).__name__}: {error}; the answer's command was not run")


def fail(message: str) -> None:
    print(f"launch: {message}", file=sys.stderr)
    sys.exit(FAILED)


if __name__ == "__main__":
    main(sys.argv)

"""The grader's hold on the processes of a notebook it runs: none outlives the notebook's last cell.

A notebook can start processes that leave its kernel behind (``os.fork``, a daemon in a new
session) and go on writing after the grader's last cell. The process that runs the kernel
calls :func:`adopt_orphans` before the kernel starts, so that every such process becomes its
child when its parent dies (Linux's child subreaper), and :func:`stop_descendants` before it
reads the record, so that nothing of the notebook's is left to change it. :func:`guarded`
makes the process's memory unreadable to the kernel, which runs as the same user.
"""

from __future__ import annotations

import ctypes
import signal
import sys

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def adopt_orphans() -> bool:
    """Make this process the parent of every orphan among its descendants; whether it could (Linux only)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def guarded() -> bool:
    """Forbid other processes of this user to trace this one or read its memory; whether it could."""
    return _prctl(_PR_SET_DUMPABLE, 0)


def stop_descendants() -> int:
    """Kill every descendant of this process, the adopted orphans too; how many there were."""
    import psutil

    stopped = 0
    for _ in range(5):  # a process that forks while the others are killed is found on the next round
        children = psutil.Process().children(recursive=True)
        if not children:
            break
        for child in children:
            try:
                child.send_signal(signal.SIGKILL)
                stopped += 1
            except psutil.Error:
                pass
        psutil.wait_procs(children, timeout=5)
    return stopped

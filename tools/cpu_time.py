"""The CPU time of a command and of every process it starts, Chromium's included.

    python -m tools.cpu_time LOG LABEL -- COMMAND ...   run COMMAND, append "LABEL SECONDS" to LOG
    python -m tools.cpu_time LOG                        print the total of LOG's lines, one line

A process's own user + system time (``times``, ``getrusage``) counts only the children it waited
for. Chromium's renderers are children of its zygote, which nobody waits for when the browser
closes, so their time was lost. This runner makes itself the "child subreaper" of everything it
starts (Linux's ``prctl(PR_SET_CHILD_SUBREAPER)``): a process whose parent is gone becomes its
child, and it waits for each one, so every descendant's time reaches its ``RUSAGE_CHILDREN``.
``make test`` runs its two test tiers under it, so it can print the tests' share apart from the
builds they depend on (Makefile).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
#: How long the descendants still running when the command ends are waited for: a browser that
#: shuts down after its test session, say. Any still running then are named, and not counted.
LINGER_S = 30.0


def make_subreaper() -> bool:
    """Adopt the orphans of this process's descendants; False where the kernel has no such call."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children() -> list[str]:
    """The processes whose parent is this one, as "pid name"."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:  # it ended while read
            continue
        if fields.get("PPid", "").strip() == str(os.getpid()):
            found.append(f"{status.parent.name} {fields.get('Name', '?').strip()}")
    return found


def reap_until(pid: int | None, deadline: float | None) -> int | None:
    """Wait for children until ``pid`` ends (returning its exit status), or, with ``pid`` None, until
    none is left or ``deadline`` passes. Every child waited for adds its time to RUSAGE_CHILDREN."""
    while True:
        try:
            flags = os.WNOHANG if deadline is not None else 0
            ended, status, _ = os.wait4(-1, flags)
        except ChildProcessError:  # no child left
            return None
        if ended == 0:  # (only without blocking) children remain, none has ended yet
            if deadline is None or time.monotonic() > deadline:
                return None
            time.sleep(0.1)
            continue
        if pid is not None and ended == pid:
            return os.waitstatus_to_exitcode(status)


def run(log: Path, label: str, command: list[str]) -> int:
    subreaper = make_subreaper()
    # close_fds=False: the command keeps make's jobserver descriptors, as it would without this runner.
    process = subprocess.Popen(command, close_fds=False)
    # Ctrl-C reaches the whole process group; this runner outlives the command to count it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = reap_until(process.pid, None)
    code = 1 if code is None else code
    reap_until(None, time.monotonic() + LINGER_S)
    left = children()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = usage.ru_utime + usage.ru_stime
    note = "" if subreaper else " (no subreaper on this system: orphaned processes not counted)"
    if left:
        note += f" (still running after {LINGER_S:.0f} s, not counted: {', '.join(left[:5])})"
    print(f"{label}: {seconds:.0f} CPU-s, every process it started included{note}", flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as out:
        out.write(f"{label} {seconds:.1f}\n")
    return code


def total(log: Path) -> str:
    if not log.is_file():
        return f"no test CPU time recorded in {log}"
    lines = [line.rsplit(" ", 1) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    parts = ", ".join(f"{label} {float(seconds):.0f}" for label, seconds in lines)
    seconds = sum(float(s) for _, s in lines)
    return f"the tests' own CPU time: {seconds:.0f} CPU-s ({parts}); the builds make ran for them not included"


def main(argv: list[str]) -> int:
    if len(argv) == 1:
        print(total(Path(argv[0])))
        return 0
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    return run(Path(argv[0]), argv[1], argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

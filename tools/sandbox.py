"""The sandbox tools/grade.py runs each submission in: bubblewrap, and what it lets a notebook see.

A submission's process runs as user nobody in namespaces of its own (no network), with no
capabilities, under CPU, memory and file-size limits per process and, where cgroups can be
written, memory and task caps for the whole submission (:class:`Group`). It sees the system's programs and
libraries, a few files of /etc, the Python it runs in, the grader's code and its own
notebook, all read-only, and writes only to a tmpfs of its own (:data:`SCRATCH`, capped);
not the repository's other folders (the solutions in _build), the home folder, other
submissions or other notebooks' work folders. Its record leaves by a pipe, not a file.
Its environment holds none of the grader's variables but :data:`PASSED_ON`.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEMORY_LIMIT = 8 * 2**30  # bytes of address space per process in the sandbox
FILE_LIMIT = 256 * 2**20  # bytes per file written in the sandbox
#: The one writable folder of a submission: a tmpfs of at most this many bytes, its home, its
#: temporary folder and its notebook's working folder. Nothing it writes reaches the disk.
SCRATCH = "/scratch"
SCRATCH_LIMIT = 1 * 2**30
SHM_LIMIT = 64 * 2**20  # bytes of /dev/shm


#: The system's programs and libraries: all a submission's process sees of the machine, read-only.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Of /etc, only what Python, its libraries and a kernel on 127.0.0.1 read: no /etc/shadow, no keys.
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf", "hosts")
ETC += ("host.conf", "gai.conf", "fonts", "mime.types", "alternatives")


def sandbox_paths() -> list[str]:
    """The folders the sandbox shows besides the system's: this Python (its venv and its base
    installation) and the grader's code (``tools/``, and ``src/`` for an editable chainrule).
    Not the repository's other folders (the solutions in _build), the home folder, other
    submissions or other notebooks' work folders."""
    found = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, str(ROOT / "tools"), str(ROOT / "src")}
    return sorted({os.path.realpath(path) for path in found} | found)


def sandbox_command(work: Path, command: list[str]) -> list[str]:
    """``command`` under bubblewrap. It sees only :data:`SYSTEM`, :data:`ETC`, :func:`sandbox_paths` and
    ``work`` (same path inside), read-only, with an empty /tmp; it writes only to :data:`SCRATCH`, a
    tmpfs of :data:`SCRATCH_LIMIT` bytes, and a /dev/shm of :data:`SHM_LIMIT`."""
    shown = []
    for path in SYSTEM:
        shown += ["--symlink", os.readlink(path), path] if os.path.islink(path) else ["--ro-bind-try", path, path]
    for name in ETC:
        shown += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    shown += ["--tmpfs", "/tmp"]  # first, so that a venv or a work folder under /tmp is bound over it
    for path in sandbox_paths():
        shown += ["--ro-bind-try", path, path]
    return [
        "bwrap",
        *shown,
        "--dev",
        "/dev",
        "--size",
        str(SHM_LIMIT),
        "--tmpfs",
        "/dev/shm",
        "--proc",
        "/proc",
        "--ro-bind",
        str(work),
        str(work),
        "--size",
        str(SCRATCH_LIMIT),
        "--tmpfs",
        SCRATCH,
        "--remount-ro",  # the sandbox's own root and /tmp, where bwrap made the folders it binds onto
        "/",
        "--remount-ro",
        "/tmp",
        "--unshare-all",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--chdir",
        SCRATCH,
        "--setenv",
        "HOME",
        SCRATCH,
        "--setenv",
        "TMPDIR",
        SCRATCH,
        "--setenv",
        "MPLBACKEND",
        "Agg",
        "--",
        *command,
    ]


#: The only variables of the grader's environment that a submission's process sees: where programs
#: are, the language, and the thread counts. Not the instructor's tokens, MAKEFLAGS (which let one
#: notebook run a classmate's cells through make) or anything else.
PASSED_ON = ("PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def sandbox_environment(home: Path | str) -> dict[str, str]:
    """The environment of one submission's process: :data:`PASSED_ON`, and its ``home``."""
    passed = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    return {**passed, "HOME": str(home), "TMPDIR": str(home), "PYTHONNOUSERSITE": "1"}


def sandbox_available() -> str:
    """ "" when bubblewrap can make the sandbox here, or why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    with tempfile.TemporaryDirectory() as work:
        run = subprocess.run(sandbox_command(Path(work), ["true"]), capture_output=True, text=True)
    return "" if run.returncode == 0 else f"bwrap cannot make a sandbox here: {run.stderr.strip()[:300]}"


def limits(cpu_seconds: float, group: Group | None = None):
    """What the child does before it runs the sandbox: its rlimits, and it joins ``group``."""

    def apply():
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_seconds), int(cpu_seconds) + 5))
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if group is not None:
            group.join()

    return apply


# --------------------------------------------------------------------------- caps per submission

#: Memory (RAM and tmpfs) and tasks (processes and threads) of one submission, all its processes together.
SUBMISSION_MEMORY = 4 * 2**30
SUBMISSION_TASKS = 256
CGROUPS = Path("/sys/fs/cgroup")


class Group:
    """A cgroup (version 1) per submission, in the memory and pids hierarchies: caps on the memory and
    the number of tasks of everything the submission starts, which per-process rlimits cannot give.

    :func:`group` makes one where this process may (root, with cgroup v1 mounted), else None.
    """

    def __init__(self, folders: list[Path]):
        self.folders = folders

    def join(self) -> None:
        """Move this process (the child, before it runs bwrap) into the group."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(os.getpid()))

    def peak(self) -> int:
        """The most memory the submission used, in bytes (0 when unknown)."""
        for folder in self.folders:
            if (folder / "memory.max_usage_in_bytes").is_file():
                return int((folder / "memory.max_usage_in_bytes").read_text())
        return 0

    def close(self) -> None:
        """Kill what is left in the group, and remove it."""
        for folder in self.folders:
            for _ in range(50):
                pids = [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, 9)
                    except ProcessLookupError:
                        pass
                time.sleep(0.1)
            try:
                folder.rmdir()
            except OSError:
                pass


def group(name: str, memory: int = SUBMISSION_MEMORY, tasks: int = SUBMISSION_TASKS) -> Group | None:
    """A :class:`Group` named ``name`` capped at ``memory`` bytes and ``tasks`` tasks, or None where
    cgroups v1 cannot be written here (not root, or cgroup v2 only): then only the rlimits hold."""
    made = []
    try:
        for controller, settings in (
            ("memory", {"memory.limit_in_bytes": memory}),
            ("pids", {"pids.max": tasks}),
        ):
            folder = _own(controller) / name
            folder.mkdir()
            made.append(folder)
            for setting, value in settings.items():
                (folder / setting).write_text(str(value))
        for optional in ("memory.memsw.limit_in_bytes",):  # swap too, where the kernel accounts it
            try:
                (made[0] / optional).write_text(str(memory))
            except OSError:
                pass
    except OSError:
        Group(made).close()
        return None
    return Group(made)


def _own(controller: str) -> Path:
    """This process's cgroup folder in ``controller``'s v1 hierarchy (OSError when there is none)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return CGROUPS / controller / path.lstrip("/")
    raise OSError(f"no {controller} cgroup")

"""The sandbox chainrule_course.grading.grade runs each answer in: bubblewrap, and what it lets an answer see.

An answer's process runs as a user of its own submission's (:func:`submission_uid`; on the
host too: bubblewrap runs as root without a user namespace, and setpriv drops to that user
before Python starts), in namespaces of its own (no network), with no capabilities, under
CPU, memory and file-size limits per process, at most :data:`SUBMISSION_TASKS` processes of
that user (``RLIMIT_NPROC``, on any host) and, where cgroups v1 can be written, a memory cap
for the whole submission (:class:`Group`). It sees the system's programs and libraries, a
few files of /etc, the standard library of the Python it runs with, the allowed modules'
folders and the runner's files, all read-only; no site-packages or dist-packages anywhere in
what it sees (:func:`hidden_packages` walks it), no venv, no grader's code, home folder or
other submission. It writes only to two tmpfs of its own, /tmp and :data:`SCRATCH`, each of
:data:`SCRATCH_LIMIT` bytes. Its environment holds none of the grader's variables.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import launch

ANSWER_CPU_SECONDS = 600  # CPU seconds of one answer's process
NOTEBOOK_SECONDS = 300  # seconds of wall time for all the answers of one notebook
#: Bytes of address space per process in the sandbox: a submission's memory where no cgroup caps it (its
#: answers run one at a time, each in one process: the runner refuses to start another).
MEMORY_LIMIT = 4 * 2**30
FILE_LIMIT = 256 * 2**20  # bytes per file written in the sandbox
#: The writable folder of a submission, its home and working folder, and its /tmp: two tmpfs of at
#: most SCRATCH_LIMIT bytes each. Nothing it writes reaches the disk.
SCRATCH = "/scratch"
SCRATCH_LIMIT = 256 * 2**20


#: The system's programs and libraries: all a submission's process sees of the machine, read-only.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Of /etc, only what Python, its libraries and a kernel on 127.0.0.1 read: no /etc/shadow, no keys.
ETC: tuple[str, ...] = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group")
ETC += ("nsswitch.conf", "hosts", "host.conf", "gai.conf", "fonts", "mime.types", "alternatives")


# --------------------------------------------------------------------------- one answer's sandbox

#: The user an answer runs as where no submission's user is given (the probe), on the host too:
#: bubblewrap runs as root without a user namespace (in one, its uid 65534 is root outside), and
#: setpriv drops to it before Python starts.
NOBODY = 65534
SETPRIV = "/usr/bin/setpriv"
#: Each submission's answers run as a user no file and no other process has: this plus a number.
UID_BASE = 3_100_000_000
_UIDS = itertools.count()


def submission_uid() -> int:
    """A user for one submission's answers, unique in this machine's gradings: its processes are counted
    (``RLIMIT_NPROC``) apart from every other submission's."""
    return UID_BASE + (os.getpid() % 100_000) * 1000 + next(_UIDS) % 1000


def base_python() -> Path:
    """The Python binary behind this venv's: an answer's process needs its standard library, not the venv."""
    return Path(os.path.realpath(sys.executable))


PACKAGE_FOLDERS = ("site-packages", "dist-packages")


@functools.cache
def hidden_packages(roots: tuple[str, ...]) -> tuple[str, ...]:
    """Every folder named site-packages or dist-packages under ``roots``, found by walking them (once per
    process): whatever Python put it there, an answer does not see it."""
    found = []
    for root in roots:
        for folder, children, _ in os.walk(root):
            found += [os.path.join(folder, child) for child in children if child in PACKAGE_FOLDERS]
            children[:] = [child for child in children if child not in PACKAGE_FOLDERS]
    return tuple(sorted(found))


def _answer_mounts(shown: list[Path]) -> list[str]:
    """bubblewrap's mounts for an answer: the system, a few files of /etc, the base Python and ``shown``,
    read-only, with every site-packages hidden but what of it is ``shown``.

    The order matters where the allowed packages and the runner's files live in a hidden folder, as in a
    conda-style Python (``<prefix>/lib/python3.11/site-packages/numpy``) or Debian's
    (``/usr/lib/python3/dist-packages``): first the whole prefix, then an empty tmpfs over each
    site-packages, then each folder shown, bound into that tmpfs."""
    prefix = str(Path(sys.base_prefix).resolve())
    binds = sorted({str(path) for path in shown})  # a parent before what it holds
    args = []
    for path in SYSTEM:
        args += ["--symlink", os.readlink(path), path] if os.path.islink(path) else ["--ro-bind-try", path, path]
    for name in ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--size", str(SCRATCH_LIMIT), "--perms", "1777", "--tmpfs", "/tmp"]
    roots = tuple(sorted({prefix, *(path for path in SYSTEM if os.path.isdir(path) and not os.path.islink(path))}))
    hidden = [path for path in hidden_packages(roots) if not any(_within(path, bind) for bind in binds)]
    present = [*(path for path in SYSTEM if not os.path.islink(path)), prefix]
    made = set()
    for path in [prefix, *binds]:
        for parent in map(str, reversed(Path(path).parents)):  # bwrap would make a missing parent 0700
            inside = any(_within(parent, other) for other in present) and not any(
                _within(parent, folder) and parent != folder for folder in hidden
            )
            if parent != "/" and parent not in made and not inside:
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        args += ["--ro-bind", path, path]
        present.append(path)
        if path == prefix:
            for folder in hidden:
                args += ["--tmpfs", folder]
    return args


def _within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def answer_command(shown: list[Path], command: list[str], uid: int = NOBODY) -> list[str]:
    """``command`` (an answer's runner) in a sandbox that shows the system, the base Python's standard library
    and ``shown`` (the allowed modules' folders and the runner's files), read-only; no site-packages, no
    network, no venv, no grader's code; as user ``uid`` with no capabilities."""
    args = _answer_mounts(shown)
    drop = [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
    drop += ["--bounding-set=-all", "--no-new-privs"]
    return [
        "bwrap",
        *args,
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(SCRATCH_LIMIT),
        "--perms",
        "1777",
        "--tmpfs",
        SCRATCH,
        "--remount-ro",
        "/",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
        *(["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"] if os.geteuid() == 0 else ["--unshare-user"]),
        "--die-with-parent",
        "--new-session",
        "--chdir",
        SCRATCH,
        "--clearenv",
        "--setenv",
        "HOME",
        SCRATCH,
        "--setenv",
        "TMPDIR",
        SCRATCH,
        "--setenv",
        "OPENBLAS_NUM_THREADS",
        "1",
        "--setenv",
        "OMP_NUM_THREADS",
        "1",
        "--",
        *(drop if os.geteuid() == 0 else []),
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
    """ "" when bubblewrap can make an answer's sandbox here (as nobody, where the grader is root), or why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    if os.geteuid() == 0 and not os.access(SETPRIV, os.X_OK):
        return f"{SETPRIV} (util-linux) is missing: the answers would run as root"
    probe = [str(base_python()), "-I", "-S", "-c", "import os; assert os.getuid() != 0"]
    run = subprocess.run(answer_command([], probe), capture_output=True, text=True)
    return "" if run.returncode == 0 else f"bwrap cannot make a sandbox here: {run.stderr.strip()[:300]}"


def answer_popen(cpu_seconds: float, group: Group | None = None) -> dict:
    """:class:`subprocess.Popen`'s arguments for an answer's bubblewrap process: its environment, a session of
    its own, and (``launcher``, put before the command by :class:`chainrule_course.grading.apart.Answer`) the
    launcher that sets its limits on bwrap and all under it first (:mod:`chainrule_course.grading.launch`)."""
    return {
        "cwd": "/",
        "env": sandbox_environment(SCRATCH),
        "start_new_session": True,
        "launcher": launch.command(limit_settings(cpu_seconds, group)),
    }


def limit_settings(cpu_seconds: float, group: Group | None = None, tasks: int | None = None) -> dict:
    """What the launcher sets before it runs the sandbox: rlimits (``tasks`` processes of the user, default
    :data:`SUBMISSION_TASKS`, set as root), then it joins ``group``."""
    tasks = SUBMISSION_TASKS if tasks is None else tasks
    steps = [["RLIMIT_CPU", int(cpu_seconds), int(cpu_seconds) + 5], ["RLIMIT_AS", MEMORY_LIMIT, MEMORY_LIMIT]]
    steps += [["RLIMIT_FSIZE", FILE_LIMIT, FILE_LIMIT], ["RLIMIT_CORE", 0, 0]]
    if os.geteuid() == 0:  # the answer runs as a user of its own, whose processes this counts
        steps.append(["RLIMIT_NPROC", tasks, tasks])
    return {"limits": steps, "cgroups": [str(folder) for folder in group.folders] if group is not None else []}


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

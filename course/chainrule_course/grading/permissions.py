"""The sandbox where bubblewrap cannot run: a user of its own and the filesystem's permissions.

Gradescope grades in a Docker container as root, and Docker's default profile refuses the
namespaces bubblewrap makes, so there an answer cannot be given a filesystem of its own.
:class:`PermissionSandbox` gives the same rule another way, for the length of one grading:

- the answer's process runs as a user of its own (:func:`jail_uid`, in no group, with no
  capabilities and ``no_new_privs``): no file of root's that is not readable by every user
  can be read, and root's processes cannot be signalled;
- every site-packages of the grading Python, the autograder's folder (source, tests, results,
  the submission) and every folder of the machine it has no need of (:func:`elsewhere`) are
  made readable by root alone (mode 0700) while answers run, and given back their modes
  afterwards: an answer finds only the standard library, and the copies of the allowed
  packages and of the runner's files in a folder of their own (:class:`Copies`);
- limits per process (CPU, memory, file size, no core) and on the user's processes
  (``RLIMIT_NPROC``); a network namespace of its own where the kernel allows one (as root
  with ``CAP_SYS_ADMIN``, or a user namespace), else the network stays open
  (:meth:`PermissionSandbox.probe` says which);
- when grading ends every process of that user is killed, wherever it went.

- the machine's shared scratch folders (``/tmp``, ``/dev/shm``) cannot be listed while answers
  run (:data:`UNLISTED`): an answer reaches its own scratch folder and the copies by name, and
  cannot find what else lies there.

What it cannot give, and bubblewrap does: a cap on the disk space written in total (each
file is capped), a ``/tmp`` of its own, and a memory cap for all processes together.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import apart, launch
from .sandbox import hidden_packages, limit_settings, sandbox_environment

#: Processes (and threads) all of one grading's answers may have at once.
TASKS = 64
#: Answers run as a user that no file and no other process has: this plus the grader's pid.
UID_BASE = 3_000_000_000


def jail_uid() -> int:
    """The user this grading's answers run as: one of their own, so that killing its processes kills only theirs."""
    return UID_BASE + os.getpid()


def site_packages() -> list[Path]:
    """Every site-packages (and dist-packages) folder of this Python, its base, a conda base above it and
    the system's: what an answer allowed nothing must not find (walked as the bubblewrap sandbox does)."""
    roots = {Path(sys.prefix), Path(sys.base_prefix), Path("/usr")}
    roots |= {Path(sys.prefix).parents[1]} if Path(sys.prefix).parent.name == "envs" else set()
    found = hidden_packages(tuple(sorted(str(root.resolve()) for root in roots)))
    return sorted({Path(path).resolve() for path in found})


#: What of the machine's top level an answer's process needs: every other folder there is hidden too.
NEEDED = frozenset({"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys", "tmp"})


#: Folders every user may write to, whose listing is taken from other users while answers run.
UNLISTED = (Path("/tmp"), Path("/dev/shm"))


def elsewhere() -> list[Path]:
    """The folders of the machine an answer has no need of: those at the top level but :data:`NEEDED`, and,
    on the way down to the grading Python (``/opt/miniforge3/envs/otter-env``), every folder beside it
    (conda's package cache, other environments). Hidden while answers run, so that no world-readable
    copy of the tests or of the grader's code elsewhere (a checkout, a downloaded zip) can be read."""
    wanted = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    chains = {ancestor for prefix in wanted for ancestor in (prefix, *prefix.parents)}
    found = []
    for folder in sorted(chains | {Path("/")}):
        if folder in wanted or (folder != Path("/") and folder.parts[1] in NEEDED):
            continue
        for child in sorted(folder.iterdir()):
            if child.is_dir() and not child.is_symlink() and child not in chains and child.name not in NEEDED:
                found.append(child)
    return found


class Copies:
    """A folder every user may read, of the runner's files (:data:`chainrule_course.grading.apart.RUNNER_FILES`)
    and of the packages an exercise allows, copied once; :attr:`runner` is the script to run."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="chainrule-allowed-"))
        self.folder.chmod(0o755)
        for path in apart.RUNNER_FILES:  # the script and the module it loads from beside itself
            shutil.copyfile(path, self.folder / path.name)
            (self.folder / path.name).chmod(0o644)
        self.runner = self.folder / apart.RUNNER.name
        self._copied: dict[str, list[Path]] = {}

    def package_folders(self, name: str) -> list[Path]:
        """The copies of module ``name``'s folders (:func:`chainrule_course.grading.apart.package_folders`)."""
        if name not in self._copied:
            copies = []
            for found in apart.package_folders(name):
                copy = self.folder / found.name
                if not copy.exists():
                    shutil.copytree(found, copy, symlinks=True, ignore=shutil.ignore_patterns("tests"))
                copies.append(copy)
            for path in [self.folder, *self.folder.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(0o755 if path.is_dir() else 0o644 | (path.stat().st_mode & 0o111))
            self._copied[name] = copies
        return self._copied[name]

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class PermissionSandbox:
    """Answers as :func:`jail_uid`, with ``hidden``, every site-packages and (``outside``) every folder of the
    machine they have no need of (:func:`elsewhere`) readable by root alone, for the length of a ``with``
    block. Use :meth:`popen` for :class:`chainrule_course.grading.apart.Answer`'s process, and
    :attr:`copies` for its ``copies``."""

    def __init__(self, hidden: list[Path], cpu_seconds: float, outside: bool = True):
        self.uid = jail_uid()
        self.cpu_seconds = cpu_seconds
        hidden = [Path(p).resolve() for p in hidden if Path(p).exists()]
        self.hidden = sorted({*hidden, *site_packages(), *(elsewhere() if outside else ())})
        self.modes: dict[Path, int] = {}
        self.copies: Copies | None = None
        self.scratch: Path | None = None

    def __enter__(self) -> PermissionSandbox:
        self.copies = Copies()
        self.scratch = Path(tempfile.mkdtemp(prefix="chainrule-scratch-"))
        os.chown(self.scratch, self.uid, self.uid)
        try:
            for path in self.hidden:
                self.modes[path] = path.stat().st_mode & 0o7777
                path.chmod(0o700)
            for path in UNLISTED:
                if path.is_dir() and not path.is_symlink() and path not in self.modes:
                    self.modes[path] = path.stat().st_mode & 0o7777
                    path.chmod(self.modes[path] & ~0o004)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.kill_all()
        for path, mode in self.modes.items():
            path.chmod(mode)
        if self.copies is not None:  # both made by __enter__: None only where it never ran, nothing to remove
            self.copies.remove()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def popen(self) -> dict:
        """:class:`subprocess.Popen`'s arguments for an answer's process, and (``launcher``, put before its
        command) the launcher that sets on it, before it runs Python: limits, a network of its own if it
        may, the user (:mod:`chainrule_course.grading.launch`). Only inside the ``with`` block."""
        if self.scratch is None:
            raise RuntimeError("PermissionSandbox.popen() outside its with block: the answer has no scratch folder")
        environment = {**sandbox_environment(self.scratch), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        settings = {**limit_settings(self.cpu_seconds, tasks=TASKS), "user": self.uid}
        return {
            "cwd": str(self.scratch),
            "env": environment,
            "start_new_session": True,
            "launcher": launch.command(settings),
        }

    def probe(self) -> tuple[str, bool]:
        """("" or why an answer cannot run here, whether its network is its own), from a process started so."""
        own = os.readlink("/proc/self/ns/net")
        check = "import os; print(os.getuid(), os.readlink('/proc/self/ns/net'))"
        popen = self.popen()
        try:
            run = subprocess.run(
                [*popen.pop("launcher"), os.path.realpath(sys.executable), "-I", "-S", "-c", check],
                capture_output=True,
                text=True,
                timeout=60,
                **popen,
            )
            problem = "" if run.returncode == 0 and run.stdout.split()[:1] == [str(self.uid)] else run.stderr.strip()
        except (OSError, subprocess.SubprocessError) as error:
            problem = str(error)
        if problem:
            return (
                f"not graded: user {self.uid} cannot run {sys.executable} ({problem[-200:]}); install the "
                "grading Python where every user may enter (not under /root)"
            ), False
        return "", run.stdout.split()[1] != own

    def kill_all(self) -> int:
        """Kill every process of the sandbox's user, wherever it went; how many there were."""
        killed = set()
        for _ in range(100):
            found = [pid for pid in _pids() if _real_uid(pid) == self.uid]
            if not found:
                break
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        return len(killed)


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _real_uid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None

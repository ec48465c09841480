"""A simulated Google Colab, offline, for running the course's generated notebooks.

* :func:`build_venv` builds a venv outside the repo with what Colab preinstalls
  (``tests/colab_requirements.txt``; no chainrule): ``python -m venv`` (pip included, for the
  notebooks' ``%pip install``), then uv, offline, from the tests' wheelhouse alone
  (tests/offline.py), not compiled (its kernels compile what they import, once). uv links the
  files from its cache, so this takes seconds, and it is done once per test run:
  :func:`shared_venv` lets the first pytest-xdist worker build it in the run's temporary
  folder, and the others reuse it.
* :func:`build_wheels` builds the engine's and the course's wheels from a copy of the checkout (nothing is written
  into the repo).
* :func:`make_ipython_dir` writes an IPython profile whose start-up file puts fake ``google``,
  ``google.colab`` and ``google.colab.output`` modules into ``sys.modules``.
* :func:`run_notebook` copies a notebook to a fresh temporary folder, uninstalls chainrule from
  the sim venv (the venv serves a whole session, so each notebook must really install it) and
  executes the notebook with nbclient inside the sim venv, with pip pointed at the wheels only.
  Runs in one venv take turns (a file lock beside the venv): two at once would each see the
  other's install.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import offline

from tools.book import package

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = Path(__file__).with_name("colab_requirements.txt")
KERNEL_NAME = "colab-sim"
CELL_TIMEOUT = 300


# --------------------------------------------------------------------------- the venv


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _clean_env(**extra: str) -> dict[str, str]:
    """os.environ without anything that would leak the dev venv or the repo into a child python."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "IPYTHONDIR"}
        and not key.startswith(("JUPYTER_", "PIP_NO_INDEX", "CHAINRULE_"))
    }
    path = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and not _inside_repo(entry)]
    env["PATH"] = os.pathsep.join(path)
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra)
    return env


def _sim_env(**extra: str) -> dict[str, str]:
    """:func:`_clean_env` for the sim venv's own processes (its notebook driver and kernels): they may
    write bytecode into the sim venv, which is outside the repo and built without it (:func:`build_venv`)."""
    env = _clean_env(**extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _inside_repo(path: str) -> bool:
    try:
        Path(path).resolve().relative_to(ROOT)
    except ValueError:
        return False
    return True


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(
            f"command failed ({result.returncode}): {' '.join(map(str, cmd))}\n"
            f"--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-4000:]}"
        )
    return result


def _base_python() -> str:
    """The interpreter behind the running one (the dev venv's base), to create a venv from."""
    return getattr(sys, "_base_executable", None) or sys.executable


def build_venv(target: Path, log=print) -> Path:
    """The sim venv at ``target``: what Colab preinstalls, from the wheelhouse, and a kernelspec."""
    log(f"colab-sim: building {target} with uv from the wheelhouse")
    env = _clean_env()
    _run([_base_python(), "-m", "venv", str(target)], env=env)
    # Not compiled here: compiling every module of torch, jax and the rest took 16 s on 2 cores (58 s
    # under the test suite's load), for the few modules a notebook imports. The sim's processes write
    # bytecode instead (:func:`_sim_env`, although these machines set PYTHONDONTWRITEBYTECODE), so the
    # first kernel to import a module compiles it, once, and every later kernel reads it (torch
    # imports in 1.4 s then, as from a compiled venv; 3.2 s the first time).
    offline.uv_install(
        venv_python(target), "-r", str(REQUIREMENTS), byte_compile=False, env=offline.environment(offline.WHEELHOUSE)
    )
    _run([str(offline.UV), "pip", "check", "--python", str(venv_python(target))], env=env)
    # A kernelspec inside the venv that runs the venv's python.
    kernel_dir = target / "share" / "jupyter" / "kernels" / KERNEL_NAME
    kernel_dir.mkdir(parents=True)
    kernel = {
        "argv": [str(venv_python(target)), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (simulated Colab)",
        "language": "python",
        "metadata": {"debugger": True},
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(kernel, indent=1), encoding="utf-8")
    return target


# --------------------------------------------------------------------------- the wheels


def _repo_build_artifacts() -> set[str]:
    """Build leftovers in the repo (build/, *.egg-info, dist/), ignored by git or not."""
    found = set()
    for pattern in ("build", "dist", "*.egg-info", "src/*.egg-info", "src/build", "course/*.egg-info", "course/build"):
        found.update(str(path.relative_to(ROOT)) for path in ROOT.glob(pattern))
    return found


def build_wheels(out_dir: Path) -> tuple[Path, Path]:
    """Build the engine's and the course's wheels from a copy of the checkout into ``out_dir``."""
    before = _repo_build_artifacts()
    wheels = package.build_wheels(out_dir)
    after = _repo_build_artifacts()
    if after - before:
        raise RuntimeError(f"building the wheels left files in the repo: {sorted(after - before)}")
    return wheels


# --------------------------------------------------------------------------- the fake Colab

FAKE_COLAB_STARTUP = '''\
"""Simulated Google Colab: fake google.colab modules (written by tests/colab_sim.py)."""
import contextlib as _contextlib
import sys as _sys
import types as _types


def _fake_colab():
    try:
        import google  # a real namespace package (e.g. from protobuf) keeps working
    except ImportError:
        google = _types.ModuleType("google")
        google.__path__ = []
        _sys.modules["google"] = google

    colab = _types.ModuleType("google.colab")
    colab.__path__ = []
    colab.__doc__ = "Fake google.colab for the offline Colab simulation."
    colab.SIMULATED = True

    output = _types.ModuleType("google.colab.output")

    def eval_js(script, ignore_result=False, timeout_sec=None):
        return None

    def register_callback(name, callback):
        return None

    def clear(wait=False, output_tags=()):
        return None

    @_contextlib.contextmanager
    def redirect_to_element(selector):
        yield

    @_contextlib.contextmanager
    def use_tags(tags, append=True):
        yield

    for _function in (eval_js, register_callback, clear, redirect_to_element, use_tags):
        setattr(output, _function.__name__, _function)

    colab.output = output
    google.colab = colab
    _sys.modules["google.colab"] = colab
    _sys.modules["google.colab.output"] = output


_fake_colab()
del _fake_colab
'''


def make_ipython_dir(parent: Path) -> Path:
    """An IPYTHONDIR whose default profile installs the fake google.colab at kernel start."""
    ipython_dir = parent / "ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-fake-colab.py").write_text(FAKE_COLAB_STARTUP, encoding="utf-8")
    return ipython_dir


# --------------------------------------------------------------------------- running a notebook

DRIVER = r'''
"""Run one notebook with nbclient, and optionally go on with a second one in the same kernel.

Runs inside the sim venv (written by tests/colab_sim.py). With a second notebook, its cells
before ``then_from`` are the first notebook's (the caller checks that their sources are
equal) and take its outputs; the rest runs in the kernel where the first notebook stopped,
but only when it stopped at ``then_after``, as expected.
"""
import json
import sys
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

source, target, report_path, kernel_name, timeout, probe = sys.argv[1:7]
then = sys.argv[7:]  # [second notebook, its executed copy, then_from, then_after] or []
report = {"executable": sys.executable, "prefix": sys.prefix, "stopped_at": None, "probe": None}

spec = KernelSpecManager().get_kernel_spec(kernel_name)
report["kernel_argv"] = spec.argv
report["kernel_resource_dir"] = spec.resource_dir
if Path(spec.argv[0]).parent.parent != Path(sys.prefix):
    raise SystemExit(f"kernel {kernel_name!r} runs {spec.argv[0]}, not the sim venv's python ({sys.prefix})")

nb = nbformat.read(source, as_version=4)
n_cells = len(nb.cells)
if probe == "1":
    nb.cells.append(nbformat.v4.new_code_cell(
        "import json as _j, sys as _s, importlib.metadata as _m\n"
        "import chainrule as _c\n"
        "_d = _m.distribution('chainrule')\n"
        "print('@@PROBE@@' + _j.dumps({'file': _c.__file__, 'executable': _s.executable, "
        "'prefix': _s.prefix, 'colab': 'google.colab' in _s.modules, "
        "'version': _d.version, 'direct_url': _d.read_text('direct_url.json')}))"
    ))

current = {"index": None}
client = NotebookClient(
    nb,
    timeout=int(timeout),
    startup_timeout=180,
    kernel_name=kernel_name,
    resources={"metadata": {"path": str(Path.cwd())}},
    on_cell_start=lambda cell, cell_index: current.update(index=cell_index),
)


def run_cells(notebook, first, into):
    """Run notebook.cells[first:] as nbclient's execute() does; the stop goes into ``into``."""
    client.nb = notebook
    try:
        for index in range(first, len(notebook.cells)):
            client.execute_cell(notebook.cells[index], index, execution_count=client.code_cells_executed + 1)
    except CellExecutionError as error:
        into["stopped_at"] = current["index"]
        into["stop_error"] = {"ename": error.ename, "evalue": error.evalue}
    except Exception as error:  # timeouts, dead kernels
        into["stopped_at"] = current["index"]
        into["stop_error"] = {"ename": type(error).__name__, "evalue": str(error)}


client.reset_execution_trackers()
with client.setup_kernel():
    info = client.wait_for_reply(client.kc.kernel_info())
    nb.metadata["language_info"] = info["content"]["language_info"]
    run_cells(nb, 0, report)
    if then:
        then_source, then_target, then_from, then_after = then
        second = {"stopped_at": None, "continued": report["stopped_at"] == int(then_after)}
        if second["continued"]:
            nb2 = nbformat.read(then_source, as_version=4)
            nb2.metadata["language_info"] = nb.metadata["language_info"]
            nb2.cells[:int(then_from)] = nb.cells[:int(then_from)]
            run_cells(nb2, int(then_from), second)
            nbformat.write(nb2, then_target)
        report["then"] = second

if probe == "1":
    probe_cell = nb.cells.pop()
    if report["stopped_at"] is None:
        for output in probe_cell.get("outputs", []):
            text = output.get("text", "")
            if "@@PROBE@@" in text:
                report["probe"] = json.loads(text.split("@@PROBE@@", 1)[1].strip())
    elif report["stopped_at"] >= n_cells:
        report["probe_error"] = report.pop("stop_error")
        report["stopped_at"] = None

nbformat.write(nb, target)
Path(report_path).write_text(json.dumps(report))
'''


@dataclass
class CellError:
    index: int  # position in nb.cells (counting all cells, from 0)
    ename: str
    evalue: str
    tags: list[str]
    source: str
    traceback: str

    @property
    def allowed(self) -> bool:
        return "raises-exception" in self.tags

    def __str__(self) -> str:
        return (
            f"cell {self.index} (tags {self.tags}): {self.ename}: {self.evalue}\n"
            f"--- source ---\n{self.source}\n--- traceback ---\n{self.traceback}"
        )


@dataclass
class RunResult:
    notebook: nbformat.NotebookNode  # the executed copy
    errors: list[CellError]  # every error output, allowed (raises-exception) or not
    stopped_at: int | None  # index of the cell that stopped execution, None if it ran to the end
    report: dict = field(default_factory=dict)
    folder: Path | None = None  # where it ran (deleted unless keep=True)

    @property
    def unexpected_errors(self) -> list[CellError]:
        return [error for error in self.errors if not error.allowed or error.index == self.stopped_at]

    @property
    def probe(self) -> dict | None:
        return self.report.get("probe")

    def cell_text(self, index: int) -> str:
        """All text output of a cell (streams, results, error traceback), ANSI codes stripped."""
        return _strip_ansi("\n".join(_output_text(output) for output in self.notebook.cells[index].get("outputs", [])))

    def describe(self) -> str:
        lines = [f"stopped at cell {self.stopped_at}" if self.stopped_at is not None else "ran to the end"]
        lines += [str(error) for error in self.errors]
        if self.report.get("stop_error") and not self.errors:
            lines.append(f"stop error: {self.report['stop_error']}")
        return "\n\n".join(lines)


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") == "error":
        return "\n".join([f"{output.get('ename')}: {output.get('evalue')}", *output.get("traceback", [])])
    data = output.get("data", {})
    return data.get("text/plain", "")


def uninstall_chainrule(venv: Path) -> None:
    """chainrule and the course out of the sim venv, with uv (0.02 s against pip's 0.8 s, before every run)."""
    _run(
        [
            str(offline.UV),
            "pip",
            "uninstall",
            "--quiet",
            "--python",
            str(venv_python(venv)),
            "chainrule",
            "chainrule-course",
        ],
        env=_clean_env(),
    )
    check = subprocess.run(
        [
            str(venv_python(venv)),
            "-c",
            "import importlib.util as u; print(u.find_spec('chainrule') or u.find_spec('chainrule_course'))",
        ],
        capture_output=True,
        text=True,
        env=_clean_env(),
        cwd=tempfile.gettempdir(),
    )
    if check.stdout.strip() != "None":
        raise RuntimeError(
            f"chainrule is still importable in the sim venv after uninstall: {check.stdout}{check.stderr}"
        )


def install_chainrule(venv: Path, wheels: tuple[Path, Path]) -> None:
    """chainrule and the course into the sim venv from their wheels, with uv (what the set-up cell
    leaves behind in a Colab runtime where it already ran), their dependencies already there."""
    offline.uv_install(venv_python(venv), "--no-deps", "--reinstall", *map(str, wheels), env=_clean_env())


def run_notebook(
    notebook: Path | nbformat.NotebookNode,
    venv: Path,
    wheels: tuple[Path, Path],
    ipython_dir: Path,
    *,
    pip_spec: str | None = None,
    timeout: int = CELL_TIMEOUT,
    probe: bool = False,
    keep: bool = False,
) -> RunResult:
    """Execute a notebook in the simulated Colab and return the executed copy and its errors.

    ``pip_spec`` is what the set-up cell is told to install (``CHAINRULE_PIP_SPEC``); it
    defaults to the two wheels. With ``probe``, a last cell (removed from the result) reports where
    the kernel imported chainrule from (``RunResult.probe``), only if nothing failed before.
    """
    with taking_turns(venv):
        return _run_now(notebook, venv, wheels, ipython_dir, pip_spec, timeout, probe, keep)


@contextlib.contextmanager
def taking_turns(venv: Path):
    """Holds the sim venv for one notebook run, across processes (an exclusive file lock)."""
    with open(venv.parent / f".{venv.name}.run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def run_then(
    first: Path | nbformat.NotebookNode,
    second: nbformat.NotebookNode,
    stops_at: int,
    venv: Path,
    wheels: tuple[Path, Path],
    ipython_dir: Path,
    *,
    timeout: int = CELL_TIMEOUT,
    installed: bool = False,
) -> tuple[RunResult, RunResult]:
    """Run ``first``; where it stops at cell ``stops_at``, as expected, run ``second`` on in the same kernel.

    The cells of ``second`` before the first one that differs from ``first`` do not run again:
    they take ``first``'s outputs. That is what a student does: Run All stops at an unanswered
    check, they answer, and run on. When ``first`` stops anywhere else, or the two differ only
    after ``stops_at``, ``second`` runs alone, in a fresh kernel. With ``installed``, chainrule is
    installed from the wheels before each run, so the set-up cell finds it and installs nothing.
    """
    cells = nbformat.read(first, as_version=4).cells if isinstance(first, Path) else first.cells
    same = 0
    for a, b in zip(cells, second.cells, strict=True):
        if (a.cell_type, a.source, a.metadata.get("tags", [])) != (b.cell_type, b.source, b.metadata.get("tags", [])):
            break
        same += 1
    with taking_turns(venv):
        if same <= stops_at:
            ran, then = _run_now(
                first,
                venv,
                wheels,
                ipython_dir,
                None,
                timeout,
                False,
                False,
                then=(second, same, stops_at),
                installed=installed,
            )
            if then is not None:
                return ran, then
        else:
            ran = _run_now(first, venv, wheels, ipython_dir, None, timeout, False, False, installed=installed)
        return ran, _run_now(second, venv, wheels, ipython_dir, None, timeout, False, False, installed=installed)


def _run_now(notebook, venv, wheels, ipython_dir, pip_spec, timeout, probe, keep, then=None, installed=False):
    """One driver run. With ``then`` = (second notebook, its first cell to run, the first's expected
    stop), it returns (first's RunResult, second's RunResult or None when the first stopped elsewhere).
    Without ``installed``, chainrule is uninstalled first, and the set-up cell must install it."""
    folder = Path(tempfile.mkdtemp(prefix="colab-sim-run-"))
    scratch = Path(tempfile.mkdtemp(prefix="colab-sim-driver-"))
    try:
        if isinstance(notebook, Path):
            name = notebook.name
            shutil.copy2(notebook, folder / name)
        else:
            name = "notebook.ipynb"
            nbformat.write(notebook, folder / name)
        if installed:
            install_chainrule(venv, wheels)
        else:
            uninstall_chainrule(venv)
        driver = scratch / "driver.py"
        driver.write_text(DRIVER, encoding="utf-8")
        executed, report_path = scratch / "executed.ipynb", scratch / "report.json"
        arguments = []
        if then is not None:
            second, then_from, then_after = then
            nbformat.write(second, scratch / "then.ipynb")
            arguments = [
                str(scratch / "then.ipynb"),
                str(scratch / "then-executed.ipynb"),
                str(then_from),
                str(then_after),
            ]
        env = _sim_env(
            IPYTHONDIR=str(ipython_dir),
            CHAINRULE_PIP_SPEC=pip_spec if pip_spec is not None else " ".join(map(str, wheels)),
            PIP_NO_INDEX="1",
            PIP_FIND_LINKS=str(wheels[0].parent),
            PATH=os.pathsep.join([str(venv / "bin"), _clean_env()["PATH"]]),
            MPLBACKEND="module://matplotlib_inline.backend_inline",
        )
        result = subprocess.run(
            [
                str(venv_python(venv)),
                str(driver),
                name,
                str(executed),
                str(report_path),
                KERNEL_NAME,
                str(timeout),
                "1" if probe else "0",
                *arguments,
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=folder,
        )
        if result.returncode != 0 or not report_path.is_file():
            raise RuntimeError(
                f"the notebook driver failed ({result.returncode})\n--- stdout ---\n{result.stdout[-4000:]}"
                f"\n--- stderr ---\n{result.stderr[-6000:]}"
            )
        report = json.loads(report_path.read_text(encoding="utf-8"))
        ran = _result(nbformat.read(executed, as_version=4), report, folder if keep else None)
        if then is None:
            return ran
        second_report = report.pop("then")
        if not second_report["continued"]:
            return ran, None
        return ran, _result(nbformat.read(scratch / "then-executed.ipynb", as_version=4), second_report, None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def _result(nb: nbformat.NotebookNode, report: dict, folder: Path | None) -> RunResult:
    errors = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors.append(
                    CellError(
                        index=index,
                        ename=output.get("ename", ""),
                        evalue=output.get("evalue", ""),
                        tags=list(cell.metadata.get("tags", [])),
                        source=cell.source,
                        traceback=_strip_ansi("\n".join(output.get("traceback", []))),
                    )
                )
    return RunResult(notebook=nb, errors=errors, stopped_at=report.get("stopped_at"), report=report, folder=folder)


def shared_venv(target: Path, log=print) -> Path:
    """The sim venv at ``target``, built by the first caller; the others wait for it (a file lock) and
    reuse it. A stamp file, written last, marks a complete venv: a half-built one is built again."""
    target.parent.mkdir(parents=True, exist_ok=True)
    stamp = target.parent / f".{target.name}.complete"
    with open(target.parent / f".{target.name}.build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.is_file():
            shutil.rmtree(target, ignore_errors=True)
            build_venv(target, log=log)
            stamp.touch()
    return target


@contextlib.contextmanager
def colab_session(workdir: Path, venv_home: Path | None = None, log=print):
    """(venv, wheels, ipython_dir) for a test session; ``workdir`` is a scratch folder outside the repo.

    ``venv_home`` is where the venv is built once and shared (pytest-xdist's workers of one run
    pass the run's folder); it defaults to ``workdir``.
    """
    venv = shared_venv((venv_home or workdir) / "venv", log=log)
    wheels = build_wheels(workdir / "wheels")
    ipython_dir = make_ipython_dir(workdir)
    yield venv, wheels, ipython_dir


def first_code_cell(nb: nbformat.NotebookNode) -> int:
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            return index
    raise ValueError("the notebook has no code cell")


def setup_only(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` that keeps only its first code cell (the set-up cell)."""
    copy = nbformat.from_dict(json.loads(json.dumps(nb)))
    copy.cells = [copy.cells[first_code_cell(copy)]]
    return copy


if __name__ == "__main__":  # PYTHONPATH=tools python tests/colab_sim.py NOTEBOOK...: run notebooks by hand
    with tempfile.TemporaryDirectory(prefix="colab-sim-") as tmp:
        with colab_session(Path(tmp)) as (venv, wheels, ipython_dir):
            for path in sys.argv[1:]:
                run = run_notebook(Path(path), venv, wheels, ipython_dir, probe=True)
                print(f"{path}: {run.describe()}\nprobe: {run.probe}\n")

"""The GitHub Actions workflows (.github/workflows), which cannot run here: they are linted and read.

* actionlint (requirements.txt, locked in requirements.lock) finds nothing in them. It checks the
  shell of ``run:`` steps with shellcheck only when shellcheck is on PATH, which the set-up does not
  install; without it the rest (syntax, expressions, job graph, script injection, action inputs) is checked.
* A pull request runs the README's two commands, ``make book`` then ``make test``, and ``make test-colab``, on
  ubuntu-latest with Python 3.11; a push to main runs ``make book`` and ``make pdf``, uploads
  _build/html with upload-pages-artifact and deploys it with deploy-pages, in the
  environment github-pages, one deployment at a time. A tag v* builds the sdist and the
  wheel, checks them and publishes them with PyPI's trusted publishing.
* Every workflow may only read the repository; only the deploy job may write Pages (and
  get an OIDC token), and only the publish job may get an OIDC token.
* Every action is pinned to a release (vX.Y.Z) or a commit, never a branch.
* The caches are keyed by the names make gives its set-up stamps, which hash the lock files: a step
  asks make for them, so the Makefile holds the one list of those files (the step is run here).
* The Makefile's set-up installs missing Debian packages with sudo where the user is not
  root and sudo needs no password, as on GitHub's runners.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import offline
import pytest
import yaml
from common import ROOT, make_env, make_variable

from tools import stamps

WORKFLOWS = ROOT / ".github" / "workflows"
ACTIONLINT = Path(sys.executable).parent / "actionlint"
#: A release tag (v6.0.2) or a full commit hash: what `uses:` may name after the @.
PINNED = re.compile(r"[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+\.\d+\.\d+|[0-9a-f]{40})")


def workflow(name: str) -> dict:
    data = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def every_workflow() -> dict[str, dict]:
    return {path.name: workflow(path.name) for path in sorted(WORKFLOWS.glob("*.y*ml"))}


def actionlint(*arguments, cwd: Path) -> subprocess.CompletedProcess:
    if not ACTIONLINT.is_file():
        pytest.fail(f"{ACTIONLINT} is missing: run `make setup` (requirements.txt installs actionlint)", pytrace=False)
    return subprocess.run(
        [str(ACTIONLINT), "-no-color", "-oneline", *map(str, arguments)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_actionlint_finds_nothing():
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert {"ci.yml", "release.yml"} <= {path.name for path in files}
    result = actionlint(*files, cwd=ROOT)
    assert result.returncode == 0 and not result.stdout.strip(), f"actionlint:\n{result.stdout}{result.stderr}"


def test_actionlint_reports_what_is_wrong(tmp_path: Path):
    """The check can fail: a needs of no job and a commit message pasted into a script are reported."""
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "bad.yml").write_text("""\
on: push
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - run: echo "${{ github.event.head_commit.message }}"
  b:
    needs: nothing
    runs-on: ubuntu-latest
    steps:
      - run: echo b
""")
    result = actionlint(folder / "bad.yml", cwd=tmp_path)
    assert result.returncode == 1
    assert "potentially untrusted" in result.stdout and 'needs job "nothing"' in result.stdout, result.stdout


def runs_on(job: dict, event: str) -> bool:
    """Whether a job or step runs for ``event``. A condition that names the event must compare
    github.event_name with one event; one that does not (a cache hit) may hold for any event."""
    condition = job.get("if")
    if condition is None or "github.event_name" not in condition:
        return True
    match = re.fullmatch(r"github\.event_name (==|!=) '(\w+)'", condition.strip())
    assert match, f"a condition this test does not read: {condition!r}"
    return (event == match[2]) == (match[1] == "==")


def steps(job: dict, event: str) -> list[dict]:
    return [step for step in job["steps"] if runs_on(step, event)]


def commands(job: dict, event: str) -> list[str]:
    """What the job runs for ``event``, in order: each run line, and ``uses <action>`` for an action."""
    done = []
    for step in steps(job, event):
        if "uses" in step:
            done.append(f"uses {step['uses'].partition('@')[0]}")
        else:
            done.extend(line.strip() for line in step["run"].splitlines() if line.strip())
    return done


def test_a_pull_request_runs_make_book_then_make_test_on_python_3_11():
    ci = workflow("ci.yml")
    assert "pull_request" in ci["on"]
    [job] = [job for job in ci["jobs"].values() if runs_on(job, "pull_request")]
    assert job["runs-on"] == "ubuntu-latest"
    [python] = [step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-python@")]
    assert str(python["with"]["python-version"]) == "3.11"
    done = [command for command in commands(job, "pull_request") if command.startswith("make")]
    assert done == ["make book", "make test", "make test-colab"], done
    assert "uses actions/upload-pages-artifact" not in commands(job, "pull_request")


def test_a_push_to_main_builds_the_book_and_its_pdf_and_deploys_them_to_pages():
    ci = workflow("ci.yml")
    assert ci["on"]["push"] == {"branches": ["main"]}, "pages deploys main only"
    jobs = {name: job for name, job in ci["jobs"].items() if runs_on(job, "push")}
    [build] = [job for job in jobs.values() if "steps" in job and "make book" in commands(job, "push")]
    done = [
        command
        for command in commands(build, "push")
        if command.startswith("make") or command.startswith("uses actions/upload-pages-artifact")
    ]
    assert done == ["make book", "make pdf", "uses actions/upload-pages-artifact"], done
    [upload] = [step for step in steps(build, "push") if step.get("uses", "").startswith("actions/upload-pages")]
    assert upload["with"]["path"] == "_build/html"
    [deploy] = [
        job
        for job in jobs.values()
        if any(step.get("uses", "").startswith("actions/deploy-pages@") for step in job["steps"])
    ]
    assert deploy["needs"] in ("build", ["build"])
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    [step] = deploy["steps"]
    assert deploy["environment"] == {"name": "github-pages", "url": f"${{{{ steps.{step['id']}.outputs.page_url }}}}"}
    assert deploy["concurrency"] == {"group": "pages", "cancel-in-progress": False}
    assert not runs_on(deploy, "pull_request"), "a pull request must not deploy"


def test_a_tag_publishes_the_checked_sdist_and_wheel_to_pypi_by_trusted_publishing():
    release = workflow("release.yml")
    assert release["on"] == {"push": {"tags": ["v*"]}}
    [publish] = [
        job
        for job in release["jobs"].values()
        if any(step.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for step in job["steps"])
    ]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    [dist] = [release["jobs"][name] for name in [publish["needs"]]]
    done = commands(dist, "push")
    assert done.index("python -m build") < done.index("python -m twine check --strict dist/*")
    assert "uses actions/upload-artifact" in done


def test_permissions_are_read_only_but_for_deploying_and_publishing():
    allowed = {"deploy": {"pages": "write", "id-token": "write"}, "publish": {"id-token": "write"}}
    for name, data in every_workflow().items():
        assert data["permissions"] == {"contents": "read"}, f"{name}: the workflow's permissions"
        for job_name, job in data["jobs"].items():
            if "permissions" in job:
                assert job["permissions"] == allowed.get(job_name), f"{name}, job {job_name}: {job['permissions']}"


def uses(data: dict) -> list[str]:
    return [step["uses"] for job in data["jobs"].values() for step in job.get("steps", []) if "uses" in step]


def test_every_action_is_pinned_to_a_release_or_a_commit():
    found = [(name, used) for name, data in every_workflow().items() for used in uses(data)]
    assert len(found) >= 8
    loose = [(name, used) for name, used in found if not PINNED.fullmatch(used)]
    assert not loose, f"actions not pinned to a release vX.Y.Z or a commit: {loose}"
    for branch_or_major in ("actions/checkout@main", "pypa/gh-action-pypi-publish@release/v1", "actions/cache@v5"):
        assert not PINNED.fullmatch(branch_or_major)


def book_job(ci: dict) -> dict:
    [job] = [job for job in ci["jobs"].values() if "make book" in commands(job, "pull_request")]
    return job


def caches(ci: dict) -> dict[str, set[str]]:
    """ci.yml's caches of the book's job: each path the cache holds -> the stamps step's outputs its key names."""
    found = {}
    for step in book_job(ci)["steps"]:
        if step.get("uses", "").startswith("actions/cache@"):
            named = set(re.findall(r"steps\.stamps\.outputs\.(\w+)", step["with"]["key"]))
            found.update((line.strip(), named) for line in step["with"]["path"].splitlines() if line.strip())
    return found


def cache_key_mismatches(ci: dict) -> list[str]:
    """Where a cache's key does not name the stamps of what it holds (and only those): the venv and the
    wheelhouse are made by the install and the wheelhouse's download, uv's cache by both, npm's by npm ci."""
    both = {"install", "wheelhouse"}
    keyed_by = {".venv": both, ".cache/wheelhouse": both, "~/.cache/uv": both, ".cache/npm": {"npm"}}
    keyed = caches(ci)
    return [
        f"{path}: ci.yml's key names the stamps {sorted(keyed.get(path, ()))}, not {sorted(stamps_)}"
        for path, stamps_ in keyed_by.items()
        if keyed.get(path) != stamps_
    ]


def stamps_step_outputs(ci: dict, tmp_path: Path) -> dict[str, str]:
    """What ci.yml's stamps step writes to $GITHUB_OUTPUT, run here with bash as GitHub runs it."""
    [step] = [step for step in book_job(ci)["steps"] if step.get("id") == "stamps"]
    output = tmp_path / "github_output"
    run = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, env={**os.environ, "GITHUB_OUTPUT": str(output)},
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines())


def test_the_caches_are_keyed_by_the_names_make_gives_its_set_up_stamps(tmp_path: Path):
    """The keys are the stamps' names, printed by make: the very files make wrote when it set this
    checkout up (the venv's and npm's), and the wheelhouse's as the tests find it (tests/offline.py)."""
    ci = workflow("ci.yml")
    assert cache_key_mismatches(ci) == []
    outputs = stamps_step_outputs(ci, tmp_path)
    assert set(outputs) == {"install", "wheelhouse", "npm"}, outputs
    stale = "the set-up is older than this checkout's locks (another branch's?): run `make setup`"
    assert (ROOT / ".venv" / outputs["install"]).is_file(), (
        stale,
        outputs,
        sorted((ROOT / ".venv").glob(".chainrule-*")),
    )
    assert (ROOT / "node_modules" / outputs["npm"]).is_file(), (stale, outputs)
    assert outputs["wheelhouse"] == offline.STAMP.name


def test_a_cache_key_that_names_other_stamps_is_found():
    """The check can fail: a key on a lock file's hash instead of its stamp, or one stamp short."""
    text = (WORKFLOWS / "ci.yml").read_text(encoding="utf-8")
    for old, new in [
        ("${{ steps.stamps.outputs.npm }}", "${{ hashFiles('package-lock.json') }}"),
        ("-${{ steps.stamps.outputs.wheelhouse }}", ""),
    ]:
        assert old in text
        planted = yaml.safe_load(text.replace(old, new, 1))
        planted["on"] = planted.pop(True)
        assert cache_key_mismatches(planted), f"{old} -> {new!r} went unnoticed"


def test_the_set_up_stamps_are_named_by_content_not_by_time():
    """A fresh clone's files are all newer than an existing venv's stamps; make installs nothing
    for that (tools/stamps.py names each stamp by its inputs' content), and no step touches them."""
    inputs = [ROOT / name for name in ("requirements.lock", "pyproject.toml", "course/pyproject.toml", "package.json")]
    before = {path: path.stat() for path in inputs}
    try:
        for path in inputs:
            os.utime(path)  # now: as a fresh clone's files are
        dry = subprocess.run(["make", "-n", "setup-steps"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        for path, stat in before.items():
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert dry.returncode == 0 and "install" not in dry.stdout.replace("system-packages", ""), dry.stdout + dry.stderr
    assert "npm ci" not in dry.stdout, dry.stdout
    assert stamps.key(inputs[:1]) != stamps.key(inputs[1:2]) and stamps.key(inputs) == stamps.key(list(inputs))
    assert "touch" not in (ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- make's Debian packages


FAKES = {
    "id": 'echo "$FAKE_UID"',
    "sudo": 'echo "sudo $*" >> "$LOG"; if [ "$1" = "-n" ]; then exit "$FAKE_SUDO"; fi; "$@"',
    "apt-get": 'echo "apt-get $*" >> "$LOG"',
}


@pytest.mark.parametrize(
    "uid, sudo, installs, calls",
    [
        (
            "1000",
            "0",
            True,
            [
                "sudo -n true",
                "sudo apt-get update",
                "apt-get update",
                "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y fake-package",
                "apt-get install -y fake-package",
            ],
        ),
        ("1000", "1", False, ["sudo -n true"]),  # sudo wants a password: print the command, stop
        ("0", "1", True, ["apt-get update", "apt-get install -y fake-package"]),
    ],
    ids=["user-with-sudo", "user-without-sudo", "root"],
)
def test_make_installs_missing_debian_packages_with_sudo_when_it_can(tmp_path, uid, sudo, installs, calls):
    """make system-packages with fake id, sudo and apt-get first on PATH: nothing is installed for real."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    log.touch()
    # Not the flags of the make that runs the tests (make test): this make is a new one.
    env = {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", LOG=str(log), FAKE_UID=uid, FAKE_SUDO=sudo)
    result = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(ROOT),
            "system-packages",
            "PACKAGES=no-such-program-anywhere:fake-package",
            f"PYTHON={sys.executable}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert log.read_text().splitlines() == calls, result.stdout + result.stderr
    if installs:
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Installing Debian packages: fake-package" in result.stdout
    else:
        assert result.returncode != 0
        assert "sudo apt-get update && sudo apt-get install -y fake-package" in result.stderr


# --------------------------------------------------------------------------- what each target sets up

#: Targets that need only the venv, and a line of their own recipe: neither Debian's packages nor npm's.
VENV_ONLY = {"progress": "-m tools.progress", "differential": "-m tools.differential", "lock": "tools/lock.py"}


def dry_run(target: str) -> str:
    """What ``make -n target`` would run, with the venv taken as installed and npm's packages as not."""
    command = ["make", "-n", "--no-print-directory", f"PYTHON={sys.executable}", "NPM_STAMP=node_modules/.none"]
    command += ["-o", make_variable("INSTALL_STAMP"), target]
    run = subprocess.run(command, cwd=ROOT, env=make_env(), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_a_target_that_needs_only_the_venv_sets_up_nothing_else():
    """make progress on a fresh clone ran npm ci (124 packages, 49 s) and the Debian packages' check."""
    for target, recipe in VENV_ONLY.items():
        planned = dry_run(target)
        assert recipe in planned and "npm ci" not in planned and "system-packages" not in planned, (target, planned)
    figures = dry_run("figures")  # needs dot (Debian's graphviz): the whole set-up, which the check sees
    assert "npm ci" in figures and "system-packages" in figures, figures


# --------------------------------------------------------------------------- make help


def test_make_help_lists_every_target_the_readme_names_once_with_its_note():
    """make help is made from the `##` note on each target's line: one list, the one description."""
    run = subprocess.run(["make", "--no-print-directory", "-s", "help"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    lines = [line.split(None, 2) for line in run.stdout.splitlines()]
    assert all(len(parts) == 3 and parts[0] == "make" for parts in lines), run.stdout
    listed = [parts[1] for parts in lines]
    assert len(listed) == len(set(listed)), listed
    named = set(re.findall(r"`make ([a-z][a-z-]*)", (ROOT / "README.md").read_text(encoding="utf-8")))
    assert named <= set(listed), f"the README names targets that make help does not list: {named - set(listed)}"
    assert {"book", "check", "test"} <= set(listed)


# --------------------------------------------------------------------------- the README's layout


def layout_rows() -> dict[str, str]:
    """CONTRIBUTING.md's "Repository layout" table: path -> what it holds."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    text = text.split("## Repository layout", 1)[1].split("\n## ", 1)[0]
    return {line.split("|")[1].strip(): line.split("|")[2] for line in text.splitlines() if line.startswith("| `")}


ROOMS = [
    path.parent.relative_to(ROOT).as_posix()
    for package in ("src/chainrule", "course/chainrule_course")
    for path in sorted((ROOT / package).glob("*/__init__.py"))
]


@pytest.mark.parametrize("folder", ["src/chainrule", *ROOMS, "tools/book", "tools/grader", "_ext"])
def test_the_readme_layout_names_every_module(folder: str):
    row = layout_rows()[f"`{folder}/`"]
    files = [p.name for p in (ROOT / folder).iterdir() if p.suffix in (".py", ".js", ".css") and p.stem != "__init__"]
    assert files, f"no modules found in {folder}"
    missing = [name for name in files if f"`{name}`" not in row and f"`{Path(name).stem}`" not in row]
    assert not missing, f"CONTRIBUTING.md's layout table does not name {missing} in its {folder}/ row"


def test_the_front_door_is_short_and_its_example_runs(capsys):
    """A newcomer reads the README in two minutes and the Makefile in one: at most 150 lines each.
    The README's first example is the engine, and prints what its comment says."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, text in [("README.md", readme), ("Makefile", (ROOT / "Makefile").read_text(encoding="utf-8"))]:
        assert len(text.splitlines()) <= 150, f"{name} has {len(text.splitlines())} lines (at most 150)"
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    assert readme.index(code) < 600, "the engine's example is not on the README's first screen"
    exec(compile(code, "README.md", "exec"), {})
    expected = re.search(r"# (.*)$", code.splitlines()[-1]).group(1)
    assert capsys.readouterr().out.strip() == expected

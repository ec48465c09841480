"""chainrule and chainrule-course as packages on PyPI: the sdists and the wheels a release uploads
(.github/workflows/release.yml).

``tools/book/package.py`` builds them as ``python -m build`` does for a release (each wheel from its
unpacked sdist), offline. Here:

* ``twine check --strict`` passes on all four (what PyPI would refuse or show badly);
* the engine's sdist holds every module and the readme; its wheel holds exactly the engine and
  its figures (no room of the course), with metadata PyPI accepts (known classifiers, a
  Markdown description, addresses, numpy as the one dependency);
* the course's sdist and wheel hold exactly the course's package, its scripts and styles (.js,
  .css), and depend on the engine of the same version;
* the wheel installs in a clean venv (``python -m venv``, ``pip install --no-index --no-deps``),
  where numpy and graphviz are absent, and ``from chainrule import Value`` runs a backward pass
  there (the package readme's example); with numpy from the wheelhouse (tests/offline.py) the
  tensor part imports and runs the readme's second example.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import offline
import pytest
import tomllib
import trove_classifiers
from common import ROOT

from tools.book import package

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION = PROJECT["version"]
PACKAGE_DIR = ROOT / "src" / "chainrule"
MODULES = sorted(path.relative_to(PACKAGE_DIR).as_posix() for path in PACKAGE_DIR.rglob("*.py"))
README = ROOT / package.readme_path()
COURSE_DIR = ROOT / "course" / "chainrule_course"
COURSE_FILES = sorted(
    path.relative_to(COURSE_DIR).as_posix()
    for path in COURSE_DIR.rglob("*")
    if path.suffix in (".py", ".js", ".css") and "__pycache__" not in path.parts
)


def examples() -> list[tuple[str, str]]:
    """The readme's Python examples, each with the output its comments promise (``# <output>``)."""
    found = []
    for code in re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        expected = "\n".join(match.strip() for match in re.findall(r"^print\(.*\)\s*#\s*(.*)$", code, re.M))
        found.append((code, expected))
    return found


@pytest.fixture(scope="module")
def distributions(tmp_path_factory) -> list[Path]:
    """[engine's sdist, engine's wheel, course's sdist, course's wheel], built into a temporary folder."""
    return package.build_distributions(tmp_path_factory.mktemp("dist"))


def test_twine_check_strict_passes(distributions):
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, distributions)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"twine check --strict failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.count("PASSED") == 4, result.stdout


def test_sdist_holds_the_package_its_data_and_the_readme(distributions):
    sdist = distributions[0]
    assert sdist.name == f"chainrule-{VERSION}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    top = f"chainrule-{VERSION}/"
    wanted = [f"src/chainrule/{name}" for name in MODULES] + [
        "pyproject.toml",
        "PKG-INFO",
        "LICENSE",
        package.readme_path(),
    ]
    missing = [name for name in wanted if top + name not in names]
    assert not missing, f"the sdist lacks {missing}"
    strays = sorted(name for name in names if re.search(r"/(tests|chapters|tools|_build|node_modules)/", name))
    assert not strays, f"the sdist holds files that are not the package's: {strays[:5]}"


def wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        return Parser().parsestr(archive.read(f"chainrule-{VERSION}.dist-info/METADATA").decode("utf-8"))


def test_wheel_holds_exactly_the_package(distributions):
    wheel = distributions[1]
    assert wheel.name == f"chainrule-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    package_files = sorted(name.removeprefix("chainrule/") for name in names if name.startswith("chainrule/"))
    assert package_files == MODULES
    # The engine ships alone: its one room is its figures; no grading, explorable or page runtime.
    assert {name.split("/")[0] for name in package_files if "/" in name} == {"figures"}
    assert not [name for name in names if name.endswith((".js", ".css"))]
    others = [name for name in names if not name.startswith(("chainrule/", f"chainrule-{VERSION}.dist-info/"))]
    assert not others, f"the wheel installs more than the package: {others}"


def test_the_course_ships_its_package_and_depends_on_this_engine(distributions):
    sdist, wheel = distributions[2:]
    course = tomllib.loads((ROOT / "course" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert course["version"] == VERSION
    assert wheel.name == f"chainrule_course-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = Parser().parsestr(archive.read(f"chainrule_course-{VERSION}.dist-info/METADATA").decode())
    info = f"chainrule_course-{VERSION}.dist-info/"
    assert sorted(n.removeprefix("chainrule_course/") for n in names if not n.startswith(info)) == COURSE_FILES
    assert {"explore/explorable.js", "pages/live.js", "pages/live_worker.js", "grading/grade.py"} <= set(COURSE_FILES)
    assert metadata["Name"] == "chainrule-course" and metadata.get_all("Requires-Dist") == [f"chainrule=={VERSION}"]
    with tarfile.open(sdist) as archive:
        top = f"chainrule_course-{VERSION}/"
        missing = {f"{top}chainrule_course/{name}" for name in COURSE_FILES} - set(archive.getnames())
    assert not missing, f"the course's sdist lacks {sorted(missing)[:5]}"


def test_the_wheel_declares_the_code_licence(distributions):
    """A fork may teach from the course only under a licence: the wheel says MIT and carries its text."""
    metadata = wheel_metadata(distributions[1])
    assert metadata["License-Expression"] == "MIT" and metadata["License-File"] == "LICENSE"
    with zipfile.ZipFile(distributions[1]) as archive:
        carried = archive.read(f"chainrule-{VERSION}.dist-info/licenses/LICENSE").decode()
    assert carried == (ROOT / "LICENSE").read_text()


def test_metadata_is_what_pypi_accepts_and_shows(distributions):
    metadata = wheel_metadata(distributions[1])
    assert metadata["Name"] == "chainrule" and metadata["Version"] == VERSION
    assert metadata["Requires-Python"] == PROJECT["requires-python"]
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().strip() == README.read_text(encoding="utf-8").strip()
    assert metadata.get_all("Requires-Dist") == ["numpy>=1.24"]
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL"))
    assert {"Homepage", "Source", "Issues"} <= set(urls) and all(url.startswith("https://") for url in urls.values())
    classifiers = metadata.get_all("Classifier")
    unknown = [
        c
        for c in classifiers
        if c not in trove_classifiers.classifiers or c in trove_classifiers.deprecated_classifiers
    ]
    assert classifiers and not unknown, f"PyPI refuses an upload with unknown classifiers: {unknown}"


def test_sources_parse_as_the_oldest_python_the_package_claims():
    """requires-python says >=3.10: no module uses syntax newer than that (ast's feature_version)."""
    oldest = re.fullmatch(r">=\s*3\.(\d+)", PROJECT["requires-python"])
    assert oldest, f"requires-python {PROJECT['requires-python']!r}: expected >=3.N"
    for module in MODULES:
        source = (PACKAGE_DIR / module).read_text(encoding="utf-8")
        ast.parse(source, filename=module, feature_version=(3, int(oldest[1])))
    with pytest.raises(SyntaxError):  # the check can fail: a 3.12 type statement
        ast.parse("type Pair = tuple[int, int]\n", feature_version=(3, int(oldest[1])))


PROBE = """
import importlib.util, pathlib, sys
import chainrule
print(sorted(name for name in ("numpy", "graphviz") if importlib.util.find_spec(name)))
print(pathlib.Path(chainrule.__file__).is_relative_to(sys.prefix))
"""


def test_wheel_installs_and_runs_in_a_clean_venv(distributions, tmp_path: Path):
    """Without numpy or graphviz, Value runs a backward pass; with numpy (from the wheelhouse), Tensor does."""
    (scalar, scalar_output), (tensor, tensor_output) = examples()
    assert "from chainrule import Value" in scalar and "backward()" in scalar and scalar_output
    assert "Tensor" in tensor and "backward()" in tensor and tensor_output
    python = offline.create_venv(tmp_path / "venv")
    env = offline.environment(offline.wheelhouse(), byte_compile=False)
    offline.uv_install(python, "--no-deps", str(distributions[1]))
    # In the venv's own folder, so that the checkout's src/ is not on the path.
    absent, installed = offline.run([python, "-c", PROBE], env, cwd=tmp_path).splitlines()
    assert absent == "[]", f"the clean venv has {absent}: it cannot show that chainrule works without them"
    assert installed == "True", "chainrule was imported from somewhere else than the venv"
    assert offline.run([python, "-c", scalar], env, cwd=tmp_path).strip() == scalar_output
    failed = subprocess.run(
        [python, "-c", "from chainrule import Tensor"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode != 0 and "numpy" in failed.stderr, "the tensor part imported without numpy"
    offline.uv_install(python, "numpy")
    assert offline.run([python, "-c", tensor], env, cwd=tmp_path).strip() == tensor_output

"""The patches to third-party internals (chainrule_course.compat) meet only the versions they were written for.

* Every distribution in ``WRITTEN_FOR`` is pinned in ``requirements.txt`` at that version, and
  is installed at it: a pin that moves without the table (and so without a re-read of the
  patch) fails here, before any patch meets the new code.
* Each patch refuses another version with an error that names the patch and both versions.
* Each patch still finds what it patches, and does what it says, in this process (each test
  runs in a child process, so that the patches stay out of the test session).
"""

import importlib.metadata
import re
import subprocess
import sys
import textwrap

import pytest
from common import ROOT

from chainrule_course.compat import patches


def pins() -> dict[str, str]:
    """requirements.txt's exact pins, name -> version."""
    found = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s#]+)", line)
        if match:
            found[match[1].lower()] = match[2]
    return found


def test_every_patched_distribution_is_pinned_and_installed_at_the_version_its_patch_was_read_against():
    pinned = pins()
    for name, version in patches.WRITTEN_FOR.items():
        assert pinned.get(name) == version, (
            f"requirements.txt pins {name}=={pinned.get(name)}, but chainrule_course.compat's patches were read "
            f"against {version}: re-read course/chainrule_course/compat/patches.py, then update WRITTEN_FOR"
        )
        assert importlib.metadata.version(name) == version


def test_a_patch_refuses_a_version_it_was_not_written_for(monkeypatch):
    patches.require("a patch", "otter-grader")  # the installed version passes
    monkeypatch.setitem(patches.WRITTEN_FOR, "otter-grader", "6.9.9")
    expected = r"grade_without_a_kernel patches otter-grader's internals as of otter-grader 6\.9\.9, but 7\.0\.0"
    with pytest.raises(patches.VersionMismatchError, match=expected):
        patches.grade_without_a_kernel()


PATCHED = """
import sys, tempfile
import jupyter_client, nbformat
from chainrule_course.compat import patches
import otter.run.run_autograder.runners.python_runner as python_runner

def no_kernel(*args, **kwargs):
    raise AssertionError("a kernel was started")

jupyter_client.KernelManager.start_kernel = no_kernel
patches.grade_without_a_kernel()
path = tempfile.mktemp(suffix=".ipynb")
code = "open('ran', 'w')"
nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]), path)
seen = []

class Plugins:
    def before_execution(self, notebook):
        seen.append(notebook.cells[0].source)
        return notebook

    def run(self, event, results):
        seen.append(event)

results = python_runner.grade_notebook(path, plugin_collection=Plugins(), cwd=".", seed=None)
assert seen == [code, "after_grading"], seen
assert results.results == {} and results.notebook.cells[0].source == code
print("patched")
"""


def test_each_patch_finds_what_it_patches_and_does_what_it_says():
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PATCHED)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "patched"

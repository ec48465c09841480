"""The patches to third-party internals, and the versions they were read against.

Each function applies one patch, to this process only, after :func:`require` has checked
that the installed version of every distribution it touches is the one in
:data:`WRITTEN_FOR`:

* :func:`grade_without_a_kernel` -- ``otter run`` starts no kernel and runs nothing of the
  notebook: the plugin scores each answer, run apart.

``tests/course/test_compat.py`` holds this table to the pins.
"""

import importlib.metadata
from pathlib import Path

#: The version of each distribution that the patches were read against.
WRITTEN_FOR = {
    "otter-grader": "7.0.0",
}


class VersionMismatchError(RuntimeError):
    """A patch meets a version of the tool it patches that it was not written for."""


def require(patch: str, *distributions: str) -> None:
    """Raise :class:`VersionMismatchError` unless each distribution is installed at its WRITTEN_FOR version."""
    for name in distributions:
        installed = importlib.metadata.version(name)
        if installed != WRITTEN_FOR[name]:
            raise VersionMismatchError(
                f"chainrule_course.compat: {patch} patches {name}'s internals as of {name} {WRITTEN_FOR[name]}, but "
                f"{installed} is installed. Re-read {patch} against {installed}, then update WRITTEN_FOR "
                "(course/chainrule_course/compat/patches.py) and the pin in requirements.txt"
            )


def grade_without_a_kernel() -> None:
    """Make ``otter run`` (and Gradescope) grade a notebook without starting a kernel.

    otter's runner would execute the submission in a kernel it starts as the grader's user
    (root on Gradescope) with ``python -m ipykernel_launcher`` in the submission's folder,
    where ``-m`` imports any module a student handed in beside the notebook. Here its
    ``grade_notebook`` reads the notebook's text, lets the plugins see it
    (``before_execution``) and score it (``after_grading``), and runs nothing of it: the
    plugin runs each answer apart, sandboxed. Nothing is unpickled from a kernel either.
    """
    require("grade_without_a_kernel", "otter-grader")
    import nbformat
    import otter.run.run_autograder.runners.python_runner as python_runner
    from otter.test_files import GradingResults
    from otter.utils import NBFORMAT_VERSION

    def grade_notebook(submission_path, *, plugin_collection=None, script=False, **ignored):
        if script:
            notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(Path(submission_path).read_text())])
        else:
            notebook = nbformat.read(submission_path, as_version=NBFORMAT_VERSION)
        if plugin_collection is not None:
            notebook = plugin_collection.before_execution(notebook)
        results = GradingResults([], notebook)
        if plugin_collection is not None:
            plugin_collection.run("after_grading", results)
        return results

    grade_notebook.runs_no_kernel = True
    python_runner.grade_notebook = grade_notebook

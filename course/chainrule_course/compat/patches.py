"""The patches to otter-grader, nbconvert and jupyter-book internals, in one place.

Each function applies one patch, to this process only, after :func:`require` has checked
that the installed version of every distribution it touches is the one in
:data:`WRITTEN_FOR`:

* :func:`outlive_the_kernel` -- nbconvert's ``ExecutePreprocessor.preprocess`` returns,
  rather than raises, when a notebook kills its kernel (the grader then scores 0 with why);
* :func:`read_nothing_from_the_kernel` -- otter never unpickles its results file or its
  logging socket, both written by the student's kernel;
* :func:`forget_the_kernel_error` -- otter's results carry no ``_catastrophic_error``
  once chainrule has scored them from its own record;
* :func:`interrupt_slow_cells` -- otter runs the notebook with an ``ExecutePreprocessor``
  that interrupts a cell after a time limit and goes on to the next;
* :func:`build_with_jobs` -- jupyter-book's CLI builds with several Sphinx processes.
"""

import importlib.metadata

#: The version of each distribution that the patches were read against.
WRITTEN_FOR = {
    "otter-grader": "7.0.0",
    "nbconvert": "7.17.2",
    "nbclient": "0.11.0",
    "jupyter-book": "1.0.4.post1",
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
                f"{installed} is installed. Re-read the patch against {installed} "
                "(course/chainrule_course/compat/patches.py), then update WRITTEN_FOR and the pin in requirements.txt"
            )


def outlive_the_kernel() -> None:
    """Make nbconvert's ExecutePreprocessor return, not raise, when the notebook kills its kernel.

    The run then goes on to otter's ``after_grading``, which finds no record and scores 0
    with why. It changes this grader process only (the student's kernel never sees it).
    """
    require("outlive_the_kernel", "nbconvert", "nbclient")
    from nbclient.exceptions import DeadKernelError
    from nbconvert.preprocessors import ExecutePreprocessor

    original = ExecutePreprocessor.preprocess
    if getattr(original, "outlives_the_kernel", False):
        return

    def preprocess(self, nb, resources=None, km=None):
        try:
            return original(self, nb, resources, km)
        except DeadKernelError:
            return nb, resources if resources is not None else {}

    preprocess.outlives_the_kernel = True
    ExecutePreprocessor.preprocess = preprocess


class _NoPickle:
    """Stands for the ``pickle`` module in otter's grading code: it loads nothing."""

    @staticmethod
    def load(file):
        raise ValueError("not read: chainrule scores from its own record (chainrule_course.grading.otter_plugin)")


def read_nothing_from_the_kernel() -> None:
    """otter's results file and logging socket, both pickles from the kernel, are never unpickled here."""
    require("read_nothing_from_the_kernel", "otter-grader")
    import otter.execute
    from otter.execute.logging import LogRecordStreamHandler

    otter.execute.pickle = _NoPickle  # grade_notebook's pickle.load(results file): without_results instead
    LogRecordStreamHandler.unpickle = lambda self, data: {"msg": "a record from the kernel, not read", "levelno": 0}


def forget_the_kernel_error(results) -> None:
    """Clear the error otter noted while the kernel ran: the scores come from chainrule's record, which says why."""
    require("forget_the_kernel_error", "otter-grader")
    results._catastrophic_error = None


def interrupt_slow_cells(cell_timeout: int) -> None:
    """Make otter run notebooks with an ExecutePreprocessor that interrupts a cell after ``cell_timeout`` seconds.

    otter.execute imports ExecutePreprocessor when it runs, so it gets this one: a cell that
    runs too long is interrupted, and the notebook goes on to the next cell.
    """
    require("interrupt_slow_cells", "nbconvert", "otter-grader")
    import nbconvert.preprocessors
    from traitlets import Bool, Integer

    class TimedExecutePreprocessor(nbconvert.preprocessors.ExecutePreprocessor):
        timeout = Integer(cell_timeout, allow_none=True).tag(config=True)
        interrupt_on_timeout = Bool(True).tag(config=True)

    nbconvert.preprocessors.ExecutePreprocessor = TimedExecutePreprocessor


def build_with_jobs(jobs: int) -> None:
    """Make jupyter-book's CLI hand ``jobs`` to Sphinx.

    The CLI imports ``jupyter_book.sphinx.build_sphinx`` when it runs, so it picks up this one.
    """
    require("build_with_jobs", "jupyter-book")
    import functools

    import jupyter_book.sphinx

    jupyter_book.sphinx.build_sphinx = functools.partial(jupyter_book.sphinx.build_sphinx, jobs=jobs)

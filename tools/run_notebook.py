"""Run one graded notebook, inside the grader's sandbox, and hand back what its answers returned.

Usage (tools/grade.py runs it): ``python tools/run_notebook.py <notebook> <folder> <cell timeout> <record fd>``.

The notebook is the one :func:`chainrule.exercises.kernel.graded_notebook` wrote: the grader's
first cell, the student's cells, and a last cell that calls the answers on the grader's inputs
and shows the record. This process runs it with nbclient in ``folder``, and then:

- kills every process the notebook started, which it adopted (a daemon that left the kernel's
  session too), before it reads the record, so that nothing can change the record afterwards;
- writes the record to the pipe ``record fd``, which only this process holds (the kernel does
  not inherit it, and cannot read this process's memory or files: :func:`processes.guarded`);
- when a cell stops the kernel (``os._exit``, a crash), runs the notebook again without that
  cell, up to :data:`RUNS` times, so that one such cell costs the questions that need it, not
  every question. The record names the cells it left out (``skipped``).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

RUNS = 3  # runs of one notebook at most: each after a cell that stopped the kernel


def run(notebook, folder: str, cell_timeout: int) -> int | None:
    """Run ``notebook`` (in place); the index of the cell that stopped the kernel, or None."""
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    client = NotebookClient(
        notebook,
        timeout=cell_timeout,
        interrupt_on_timeout=True,  # a cell that runs too long is stopped, and the next one runs
        allow_errors=True,
        resources={"metadata": {"path": folder}},
    )
    current = [0]
    client.on_cell_start = lambda cell, cell_index: current.__setitem__(0, cell_index)
    try:
        client.execute()
    except DeadKernelError:
        print(f"cell {current[0]} stopped the kernel", flush=True)
        return current[0]
    except Exception as error:  # noqa: BLE001 - the log says why; the record says what was recorded
        print(f"the notebook's run stopped: {type(error).__name__}: {error}"[:2000], flush=True)
    return None


def without(notebook, skipped: list[int]):
    """A copy of ``notebook`` whose cells at ``skipped`` do nothing."""
    ran = copy.deepcopy(notebook)
    for index in skipped:
        ran.cells[index].source = "# Left out by the grader: this cell stopped the kernel."
    return ran


def main(argv: list[str]) -> int:
    import nbformat

    from chainrule.exercises import kernel, processes

    notebook_path, folder, cell_timeout, record_fd = argv
    processes.guarded()
    processes.adopt_orphans()
    graded = nbformat.read(notebook_path, as_version=4)
    skipped: list[int] = []
    for _ in range(RUNS):
        ran = without(graded, skipped)
        stopped = run(ran, folder, int(cell_timeout))
        processes.stop_descendants()
        if stopped is None or stopped in (0, len(ran.cells) - 1) or stopped in skipped:
            break  # the grader's own cells are not left out: an answer that crashed the kernel scores 0
        skipped.append(stopped)
    text = kernel.shown_record(ran.cells[-1])
    with os.fdopen(int(record_fd), "wb") as pipe:
        if text is not None:
            data = json.loads(text)
            data["skipped"] = [_first_line(graded.cells[index].source) for index in skipped]
            pipe.write(json.dumps(data).encode())
    return 0


def _first_line(source: str) -> str:
    lines = [line for line in source.splitlines() if line.strip()]
    return (lines[0][:80] if lines else "(empty)").strip()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main(sys.argv[1:]))

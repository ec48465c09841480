"""What a student uploads to Gradescope, made into the one notebook otter grades (chainrule_course.grading.uploads).

Each shape students hand in, laid out as Gradescope lays it out (``submission/`` beside ``source/``, whose
``otter_config.json`` names the assignment), then :func:`uploads.prepared`: one notebook is left at the top,
named for the assignment with its name in the metadata, or one that says why nothing is graded and what to
upload. ``tests/built/test_assignments.py`` grades one shape end to end, as root, under otter.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from chainrule_course.grading import uploads

ANSWER = "def tanh_neuron_grads(w, x, b):\n    return 1.0, 2.0, 3.0\n"


def notebook(*sources: str, assignment: str | None = None) -> nbformat.NotebookNode:
    metadata = {"otter": {"assignment_name": assignment}} if assignment else {}
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources], metadata=metadata)


def handed_in(tmp_path: Path, files: dict[str, object]) -> Path:
    """Gradescope's layout for the intro assignment, with ``files`` (path -> notebook, bytes or text) uploaded."""
    (tmp_path / "source").mkdir()
    config = {"plugins": [{"chainrule_course.grading.otter_plugin.TrustedScores": {"assignment": "intro"}}]}
    (tmp_path / "source" / "otter_config.json").write_text(json.dumps(config))
    folder = tmp_path / "submission"
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content)
        else:
            nbformat.write(content, path)
    return folder


def graded(folder: Path) -> nbformat.NotebookNode:
    """The one notebook left for otter, after checking that it is the only one."""
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.ipynb")) == ["intro.ipynb"]
    return nbformat.read(folder / "intro.ipynb", as_version=4)


HONEST = {
    # the chapter's student edition from the book's Colab button: no otter metadata
    "edition": ({"Copy of intro.ipynb": notebook("import math", ANSWER)}, "grading Copy of intro.ipynb"),
    "fresh": ({"Untitled.ipynb": notebook(ANSWER)}, "grading Untitled.ipynb"),
    "folder": ({"work/intro.ipynb": notebook(ANSWER, assignment="intro")}, "grading work/intro.ipynb"),
    "copies": (
        {"intro.ipynb": notebook(ANSWER, assignment="intro"), "b/c.ipynb": notebook(ANSWER, assignment="intro")},
        "grading b/c.ipynb (1 copy of it too)",
    ),
    "as handed out": ({"intro.ipynb": notebook(ANSWER, assignment="intro")}, ""),
}


@pytest.mark.parametrize("shape", sorted(HONEST))
def test_an_honest_upload_becomes_the_one_notebook_graded(tmp_path, shape):
    files, said = HONEST[shape]
    folder = handed_in(tmp_path, files)
    assert uploads.prepared(str(folder)) == f"chainrule: {said}"
    left = graded(folder)
    assert left.metadata["otter"]["assignment_name"] == "intro"
    assert uploads.NOT_GRADED not in left.metadata
    assert [cell.source for cell in left.cells if cell.cell_type == "code"][-1] == ANSWER


REFUSED = {
    "different": (
        {"intro.ipynb": notebook(ANSWER), "draft.ipynb": notebook("")},
        "the upload holds 2 different notebooks (draft.ipynb, intro.ipynb), and one is graded",
    ),
    "unreadable": ({"intro.ipynb": b'{"cells": [{"cell_type": "code", "source": "def tanh'}, "intro.ipynb is not a"),
    "another assignment": (
        {"mlp.ipynb": notebook(ANSWER, assignment="mlp")},
        "submitted the mlp notebook for the intro assignment (its metadata names it)",
    ),
    "a script": ({"intro.py": ANSWER}, "the upload holds no notebook (.ipynb) but intro.py"),
}


@pytest.mark.parametrize("shape", sorted(REFUSED))
def test_an_upload_that_is_not_one_work_is_refused_saying_what_to_upload(tmp_path, shape):
    files, why = REFUSED[shape]
    folder = handed_in(tmp_path, files)
    assert uploads.prepared(str(folder)).startswith(f"chainrule: not graded: {why}")
    left = graded(folder)
    assert not left.cells, "a refused upload leaves an empty notebook, which scores 0"
    reason = left.metadata[uploads.NOT_GRADED]
    assert why in reason and "upload the one notebook you worked in, intro.ipynb, and nothing else" in reason, reason
    assert not list(folder.rglob("*.py")), "otter would grade a .py left where there is no notebook"


def test_links_go_and_a_byte_order_mark_is_dropped(tmp_path):
    folder = handed_in(tmp_path, {"intro.ipynb": notebook(ANSWER, assignment="intro")})
    path = folder / "intro.ipynb"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    (folder / "key.ipynb").symlink_to(tmp_path / "source" / "otter_config.json")
    said = uploads.prepared(str(folder))
    assert said == "chainrule: removed the links handed in, which are not work: key.ipynb", said
    assert not (folder / "key.ipynb").is_symlink()
    assert not path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert graded(folder).cells[0].source == ANSWER

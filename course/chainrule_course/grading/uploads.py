"""What a student uploads to Gradescope, made into the one notebook otter grades, before otter starts.

otter's Gradescope runner grades the one ``.ipynb`` at the top of the submission and takes the
assignment from the notebook's metadata. Students upload other shapes, which ``make grade``
grades (it finds every notebook under a folder, and reads no metadata but a wrong assignment's
name); here each is made into that one notebook, or refused with a message that says what to
upload (every question then scores 0 with it, in the results the student sees):

- a notebook without otter's metadata (the chapter's student edition, what the book's Colab
  button opens, a fresh notebook with the answers pasted in) gets the assignment's name;
- a notebook inside a folder is moved to the top;
- several copies of the same work (the same code cells) are graded once; several different
  notebooks are refused, named;
- no notebook at all (a ``.py``, a ``.zip``, nothing), a notebook that cannot be read, or one
  whose metadata names another assignment is refused, saying why, as ``make grade`` says it;
- a symbolic link is removed (a link is never the work, and otter writes beside the notebook as
  root), and a UTF-8 byte-order mark dropped.

``run_otter.py`` in the autograder zip calls :func:`prepared` first (``make assignments`` writes it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .grade import SKIPPED_FOLDERS, another_assignment

#: The metadata key of the notebook put in place of an upload that is refused: the reason, which the
#: otter plugin gives every question (:class:`chainrule_course.grading.otter_plugin.TrustedScores`).
NOT_GRADED = "chainrule_not_graded"


def prepared(folder: str) -> str:
    """Make the submission in ``folder`` the one notebook otter grades (see the module); what was done."""
    said = []
    removed = remove_links(folder)
    if removed:
        said.append(f"removed the links handed in, which are not work: {', '.join(removed)}")
    without_byte_order_marks(folder)
    said.append(one_notebook(folder, _assignment(folder)))
    message = "chainrule: " + "; ".join(part for part in said if part)
    print(message, flush=True)
    return message


def _assignment(folder: str) -> str | None:
    """The assignment's name, from the otter plugin's entry in the zip's ``otter_config.json`` (otter's own
    ``assignment_name`` is left out of it, or otter would refuse a notebook without the metadata)."""
    config = Path(folder).parent / "source" / "otter_config.json"
    plugins = json.loads(config.read_text()).get("plugins", []) if config.is_file() else []
    for entry in plugins if isinstance(plugins, list) else []:
        for options in entry.values() if isinstance(entry, dict) else []:
            if isinstance(options, dict) and isinstance(options.get("assignment"), str):
                return options["assignment"]
    return None


def remove_links(folder: str) -> list[str]:
    """Delete every symbolic link under ``folder`` (otter's ``prepare_files`` opens ``__init__.py`` for
    appending, as root, which a link would send anywhere); the paths removed."""
    removed = []
    for parent, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = os.path.join(parent, name)
            if os.path.islink(path):
                os.unlink(path)
                removed.append(os.path.relpath(path, folder))
        folders[:] = [name for name in folders if not os.path.islink(os.path.join(parent, name))]
    return sorted(removed)


def without_byte_order_marks(folder: str) -> list[str]:
    """Rewrite each notebook under ``folder`` that starts with a UTF-8 byte-order mark (Windows editors
    write one) without it: otter's JSON reader refuses the mark. The notebooks rewritten."""
    rewritten = []
    for path in _notebooks(folder):
        data = path.read_bytes()
        if data.startswith(b"\xef\xbb\xbf"):
            path.write_bytes(data[3:])
            rewritten.append(str(path.relative_to(folder)))
    return rewritten


def _notebooks(folder: str) -> list[Path]:
    """The notebooks under ``folder`` that are work handed in, as ``make grade`` finds them: files, outside
    the copies Jupyter or an archive keeps and hidden folders, not a macOS resource fork."""
    found = []
    for path in sorted(Path(folder).rglob("*")):
        parts = path.relative_to(folder).parts
        if path.suffix.lower() != ".ipynb" or path.is_symlink() or not path.is_file() or path.name.startswith("._"):
            continue
        if not any(part in SKIPPED_FOLDERS or part.startswith(".") for part in parts[:-1]):
            found.append(path)
    return found


def one_notebook(folder: str, assignment: str | None) -> str:
    """Leave one notebook at the top of ``folder``, named for ``assignment``, with its name in the metadata,
    or one that says why the upload is not graded (:data:`NOT_GRADED`); what was done."""
    import nbformat

    found, read, unreadable = _notebooks(folder), {}, {}
    for path in found:
        try:
            read[path] = nbformat.reads(path.read_bytes().decode("utf-8-sig"), as_version=nbformat.NO_CONVERT)
        except Exception as error:  # noqa: BLE001 - whatever makes it unreadable is the reason given
            unreadable[path] = f"{type(error).__name__}: {' '.join(str(error).split())[:120]}"
    names = [str(path.relative_to(folder)) for path in found]
    why, chosen = "", None
    if not found:
        others = sorted(p.name for p in Path(folder).iterdir() if p.is_file() and not p.name.startswith("."))
        why = f"the upload holds no notebook (.ipynb){f' but {_listed(others)}' if others else ''}"
    elif unreadable and len(found) == 1:
        why = f"{names[0]} is not a readable notebook ({unreadable[found[0]]})"
    elif len({_code(notebook) for notebook in read.values()}) > 1 or unreadable:
        why = f"the upload holds {len(found)} different notebooks ({_listed(names)}), and one is graded"
    else:
        chosen = read[found[0]]
        if not isinstance(chosen.get("metadata"), dict) or not isinstance(chosen.metadata.get("otter", {}), dict):
            chosen["metadata"] = nbformat.from_dict({**(chosen.get("metadata") or {}), "otter": {}})
        why = another_assignment(chosen, assignment)
    for path in found:
        path.unlink()
    for path in Path(folder).glob("*.py"):  # otter grades a .py when there is no notebook
        path.rename(path.with_suffix(".py.handed-in"))
    target = Path(folder) / f"{assignment or 'submission'}.ipynb"
    if why:
        what = f"upload the one notebook you worked in{f', {assignment}.ipynb' if assignment else ''}, and nothing else"
        metadata = {NOT_GRADED: f"not graded: {why}: {what}", "otter": {"assignment_name": assignment}}
        nbformat.write(nbformat.v4.new_notebook(metadata=metadata), target)
        return f"not graded: {why}"
    if chosen is None:  # never: every branch above but the one that chooses a notebook gives a reason
        raise RuntimeError(f"{folder}: no notebook chosen to grade, and no reason given why not")
    chosen.metadata.setdefault("otter", {})["assignment_name"] = assignment
    nbformat.write(chosen, target)
    extra = len(found) - 1
    copies = f" ({extra} {'copy' if extra == 1 else 'copies'} of it too)" if extra else ""
    return f"grading {names[0]}{copies}" if names[0] != target.name or copies else ""


def _code(notebook) -> tuple[str, ...]:
    """A notebook's code cells, as what tells two uploads of the same work from two different ones."""
    cells = notebook.get("cells", []) if isinstance(notebook, dict) else []
    return tuple(
        cell.get("source", "") if isinstance(cell.get("source"), str) else "".join(cell.get("source", []))
        for cell in cells
        if isinstance(cell, dict) and cell.get("cell_type") == "code"
    )


def _listed(names: list[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

"""Writes the numbers Sphinx gave the book to ``_build/numbers.json``, for the notebook editions.

The Colab and student notebooks (``tools/book/notebooks.py``) print "Fig. N.M", "(N.M)" and
"Exercise N.M" where the book's pages do. Rather than count figures, equations and
exercises again, the generator reads what Sphinx assigned, which this extension writes
at the end of every build (with every page in the environment, also those not read
again)::

    {"chapters": {"chapters/mlp": "6", ...},
     "numbered": {"chapters/mlp": {"fig-mlp-graph": {"kind": "figure", "number": "6.1"},
                                   "equation-eq-mlp-do": {"kind": "equation", "number": "6.3",
                                                          "label": "eq-mlp-do"}, ...}}}

``numbered`` holds every numbered element by its HTML id. ``label`` is the name the
chapters give it (``:name:``, ``:label:``, ``$$ (label)``), absent when it has none.

``glue`` holds, per page, the text of every number a cell glued into the prose
(``{glue:text}`key:.2f```), as myst-nb stored it: the editions print the number the
book printed.  Only the keys myst-nb recorded for the page's last reading are taken
from its ``<page>.glue.json``, so a key the chapter no longer glues is not kept.

The file is written only when its content changed.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

#: Sphinx's name for each kind of numbered element, and the generator's.
KINDS = {"figure": "figure", "displaymath": "equation", "exercise": "exercise", "table": "table", "code-block": "code"}


def dotted(numbers: tuple[int, ...]) -> str:
    return ".".join(str(number) for number in numbers)


def glued(env, outdir: Path) -> dict:
    """The text/plain of every glued value, by page and key (myst-nb's ``<page>.glue.json``)."""
    found = {}
    for docname, metadata in sorted(getattr(env, "nb_metadata", {}).items()):
        keys = metadata.get("glue") or []
        path = outdir.parent / "jupyter_execute" / f"{docname}.glue.json"
        if not keys or not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        found[docname] = {
            key: data[key]["data"]["text/plain"]
            for key in keys
            if key in data and "text/plain" in data[key].get("data", {})
        }
    return found


def collect(env) -> dict:
    """Chapter numbers and every numbered element of the book, from the build environment."""
    labels = {(docname, labelid): label for label, (docname, labelid) in env.domaindata["std"]["anonlabels"].items()}
    for label, (docname, _) in env.domaindata["math"]["objects"].items():
        # myst-parser gives a labelled equation this id, as Sphinx's math directive does.
        labels[(docname, nodes.make_id(f"equation-{label}"))] = label
    chapters = {docname: dotted(numbers[""]) for docname, numbers in env.toc_secnumbers.items() if numbers.get("")}
    numbered: dict = {}
    for docname, kinds in env.toc_fignumbers.items():
        elements = numbered.setdefault(docname, {})
        for figtype, ids in kinds.items():
            for node_id, numbers in ids.items():
                element = {"kind": KINDS.get(figtype, figtype), "number": dotted(numbers)}
                if (docname, node_id) in labels:
                    element["label"] = labels[(docname, node_id)]
                elements[node_id] = element
    return {
        "chapters": dict(sorted(chapters.items())),
        "numbered": {docname: numbered[docname] for docname in sorted(numbered) if numbered[docname]},
    }


def numbers_path(app: Sphinx) -> Path:
    return Path(app.outdir).parent / "numbers.json"


def forget_numbers(app: Sphinx) -> None:
    """A site build starts without the numbers of an older one, so that a failed build leaves none.

    Only the site build's numbers count: a singlehtml build (make pdf) numbers one page, and
    leaves them alone, so that the steps that read them can run beside it.
    """
    if app.builder.name == "html":
        numbers_path(app).unlink(missing_ok=True)


def write_numbers(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.name != "html":
        return
    path = numbers_path(app)
    numbers = collect(app.env)
    numbers["glue"] = glued(app.env, Path(app.outdir))
    text = json.dumps(numbers, indent=1, sort_keys=False) + "\n"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", forget_numbers)
    app.connect("build-finished", write_numbers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The role ``{question}`ex-mlp-bias```: the grader's id of an exercise (``exN_M``), at build time.

An exercise's question id in the assignments, the grades and Gradescope is made from its
number (:attr:`tools.book.questions.Question.name`), and the number is the book's: a fork
that inserts a chapter renumbers every exercise after it. The instructors' page names
questions with this role, by the exercise's label, so that its ids follow the numbers.
A label that names no numbered exercise is an error of the build.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxRole

from tools.book.questions import question_name

LOGGER = logging.getLogger(__name__)


class QuestionRole(SphinxRole):
    def run(self):
        node = nodes.literal(self.rawtext, "")
        node["question_label"] = self.text.strip()
        return [node], []


def exercise_number(env, label: str) -> str | None:
    """The number Sphinx gave the exercise labelled ``label`` ("6.2"), or None."""
    found = env.domaindata["std"]["anonlabels"].get(label)
    if found is None:
        return None
    docname, node_id = found
    numbers = env.toc_fignumbers.get(docname, {}).get("exercise", {}).get(node_id)
    return ".".join(map(str, numbers)) if numbers else None


def fill_in(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in doctree.findall(nodes.literal):
        label = node.get("question_label")
        if label is None or node.children:
            continue
        number = exercise_number(app.env, label)
        if number is None:
            LOGGER.warning(f"{{question}}: no numbered exercise is labelled {label!r}", location=node)
            number = "?"
        node += nodes.Text(question_name(number))


def setup(app: Sphinx) -> dict:
    app.add_role("question", QuestionRole())
    app.connect("doctree-resolved", fill_in)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

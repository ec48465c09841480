"""The calls the web page makes: one question, one verdict, the steps through a graph.

The page's Python (Pyodide, in a Web Worker) calls these three functions and passes on
what they return, JSON text, to the drill's script:

* :func:`ask` -- the question of a kind, level and seed: the prompt, the graph in words
  and as a figure, what form the answer takes, and the hints;
* :func:`check` -- the verdict on what the reader typed;
* :func:`steps` -- a widget of :mod:`chainrule_course.explore` that steps through this graph: the
  depth-first search for the graph chapter's kinds, the forward pass for a value, the
  backward pass for the gradients.
"""

import json

from chainrule.figures import draw_graph

from ..explore import backward, forward, toposort
from .graphs import LEVELS
from .kinds import KINDS, question

__all__ = ["ask", "check", "steps"]

#: The form of each kind's answer: a number, a list of names, or a list of numbers.
ANSWERS = {
    "finish": "names",
    "topological": "names",
    "reach": "names",
    "value": "number",
    "local": "number",
    "adjoint": "number",
    "adjoints": "numbers",
}


def ask(kind, level, seed):
    """The question as JSON: ``kind, level, seed, prompt, lines, figure, answer, hints``."""
    q = question(kind, level, seed)
    graph_kind = KINDS[kind][0] == "graph" or kind == "value"
    figure = draw_graph(q.graph.root, rankdir="BT", show_grad=False, compact=graph_kind)
    return json.dumps(
        {
            "kind": kind,
            "level": level,
            "levelName": LEVELS[level],
            "seed": seed,
            "prompt": q.prompt,
            "lines": q.graph.description(),
            "figure": figure.svg(),
            "answer": ANSWERS[kind],
            "hints": q.hints,
        }
    )


def check(kind, level, seed, text):
    """The verdict on ``text`` as JSON: ``right, message, mistake``."""
    return json.dumps(question(kind, level, seed).check(text))


def steps(kind, level, seed):
    """The HTML of a widget that steps through the question's graph."""
    root = question(kind, level, seed).graph.root
    if KINDS[kind][0] == "graph":
        return toposort(root).html()
    return (forward(root) if kind == "value" else backward(root)).html()

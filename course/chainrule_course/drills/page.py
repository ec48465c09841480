"""The calls the web page makes: one question, one verdict, the steps to the answer.

The page's Python (Pyodide, in a Web Worker) calls these three functions and passes on
what they return, JSON text or HTML, to the drill's script:

* :func:`ask` -- the question of a kind, level and seed: the prompt, the instance in words
  (and as a figure, for a graph), what form the answer takes, and the hints;
* :func:`check` -- the verdict on what the reader typed;
* :func:`next_for_you` -- the question :func:`.schedule.plan` chooses from the reader's record;
* :func:`steps` -- the way to the answer: for a graph of the graph and backward chapters,
  a widget of :mod:`chainrule_course.explore` that steps through it (the depth-first search
  for the graph chapter's kinds, the forward pass for a value, the backward pass for the
  gradients); for the later kinds, the worked steps, and the backward pass's widget where
  the question is about one.
"""

import html
import json

from chainrule.figures import draw_graph

from ..explore import backward, forward, toposort
from .catalog import KINDS, question
from .problems import Problem
from .reading import TOLERANCE
from .schedule import plan

__all__ = ["CLOSE_ENOUGH", "ask", "check", "next_for_you", "steps"]


#: What the answer box says of how close a number must be, by the answer's form: the words of the
#: tolerance that :func:`.reading.close` uses; a count is checked by :func:`.reading.exact` (names are
#: right or not).
CLOSE_ENOUGH = {
    "number": f"Counted right {TOLERANCE}.",
    "count": "Counted right only when exact.",
    "numbers": f"Each counted right {TOLERANCE}.",
    "names": "",
}


def ask(kind, level, seed):
    """The question as JSON: ``kind, level, levelName, seed, prompt, words, lines, figure, answer, hints,
    formText`` (what to type, when the answer's form alone does not say it) and ``tolerance`` (how close a
    number must be, for the answer box to say)."""
    q = question(kind, level, seed)
    if isinstance(q, Problem):
        root, lines, words = q.graph, q.lines, q.words
    else:
        root, lines, words = q.graph.root, q.graph.description(), "The graph in words:"
    # One small box per value where the question is about the graph's shape, or its words give each formula.
    compact = KINDS[kind].chapter == "graph" or kind == "value" or isinstance(q, Problem)
    figure = draw_graph(root, show_grad=False, compact=compact).svg() if root is not None else ""
    return json.dumps(
        {
            "kind": kind,
            "level": level,
            "levelName": KINDS[kind].levels[level],
            "seed": seed,
            "prompt": q.prompt,
            "words": words,
            "lines": lines,
            "figure": figure,
            "answer": KINDS[kind].form,
            "hints": q.hints,
            "formText": getattr(q, "form_text", ""),
            "tolerance": CLOSE_ENOUGH[KINDS[kind].form],
        }
    )


def next_for_you(record, kinds, seed):
    """The question of :func:`ask` that :func:`.schedule.plan` chooses for the record (JSON text, as
    progress.js keeps it) among ``kinds``, with ``reason``: why this one."""
    kept = json.loads(record or "{}")
    chosen = plan(kept.get("drills") or {}, kept.get("answered") or 0, kinds, seed)
    asked = json.loads(ask(chosen["kind"], chosen["level"], chosen["seed"]))
    return json.dumps(asked | {"reason": chosen["reason"]})


def check(kind, level, seed, text):
    """The verdict on ``text`` as JSON: ``right, message, mistake``."""
    return json.dumps(question(kind, level, seed).check(text))


def steps(kind, level, seed):
    """The HTML of the steps to the question's answer."""
    q = question(kind, level, seed)
    if isinstance(q, Problem):
        items = "".join(f"<li>{html.escape(step)}</li>" for step in q.steps)
        shown = f'<p class="cr-drill-worked-title">The steps to the answer:</p><ol class="cr-drill-worked">{items}</ol>'
        return shown + (backward(q.walk).html() if q.walk is not None else "")
    root = q.graph.root
    if KINDS[kind].chapter == "graph":
        return toposort(root).html()
    return (forward(root) if kind == "value" else backward(root)).html()

"""What every explorable shares: the widget (:class:`Explorable`) and its script and styles.

Also the words and numbers that the steps of every kind are written in.
"""

import hashlib
import html
import json
import re
from pathlib import Path

from chainrule.figures.figure import format_number
from chainrule.figures.svg import accessible_svg

_ASSETS = Path(__file__).resolve().parent


SCRIPT_FILE = "explorable.js"  #: the widget's script, shipped in the package


STYLE_FILE = "explorable.css"  #: the widget's styles, shipped in the package


# The ids of the elements a script changes: the graph's nodes and edges, and the texts in them.
_ELEMENT_ID = re.compile(r'id="((?:node|edge|text|part)(?:&#45;|-)[^"]*)"')


def asset(name):
    """The text of one of the widget's files shipped in the package (``explorable.js`` or ``.css``)."""
    return (_ASSETS / name).read_text(encoding="utf-8")


#: The "Predict, then reveal" controls: the mode, the guess (with a ± button, since a phone's
#: decimal keypad may have no minus sign), the verdict and the score.
QUIZ = (
    '<div class="cr-x-quiz" data-role="quiz-controls" hidden>'
    '<label class="cr-x-predict"><input type="checkbox" data-role="predict"> '
    "Predict, then reveal</label>"
    '<form class="cr-x-guess" data-role="guess-form" hidden>'
    '<label>Your guess <input type="text" inputmode="decimal" autocomplete="off" '
    'size="8" data-role="guess"></label> '
    '<button type="button" data-action="negate" aria-label="Change the sign of the guess">'
    "\u00b1</button> "
    '<button type="submit" data-action="check">Check</button>'
    "</form>"
    '<span class="cr-x-verdict" data-role="verdict" hidden></span>'
    '<span class="cr-x-score" data-role="score" hidden></span>'
    "</div>"
)


class Explorable:
    """A recorded run of the engine that a page shows as a widget to step through.

    ``kind`` names what was recorded (``"toposort"``, ``"forward"``, ``"backward"``);
    ``steps`` is a list of dicts, one per step, each with a ``"sentence"`` that says in
    words what the step does; ``figure`` is the :class:`~chainrule.figures.Figure` drawn in
    the final state. ``html()`` (or the notebook's display, ``_repr_html_``) gives the
    widget.

    ``frames`` (one per step) say what the picture shows: each node's CSS class, the
    highlighted edges, the texts to write into the SVG, the alt text. ``text_roles``
    names the texts of each node and edge group the script rewrites (see
    :func:`_tag_texts`). ``quiz=True`` adds the "Predict, then reveal" mode: steps with a
    ``"quiz"`` ask for a number before they show it. ``palette`` (the fills of the
    ``[data-cell]`` cells that a step's ``"grid"`` names) and ``parameters`` (the names of
    the weights whose ``"weights"`` and ``"grads"`` a step lists) are the training widget's.
    """

    def __init__(
        self,
        kind,
        title,
        figure,
        steps,
        frames,
        *,
        lists=(),
        legend=(),
        text_roles=None,
        quiz=False,
        note="",
        palette=None,
        parameters=None,
    ):
        self.kind = kind
        self.title = title
        self.figure = figure
        self.steps = steps
        self._frames = frames
        self._lists = list(lists)
        self._legend = list(legend)
        self._text_roles = text_roles or {}
        self._quiz = quiz
        self._palette, self._parameters = palette, parameters
        self._note = note or "The final state. With JavaScript on, the buttons step through it."
        digest = hashlib.sha1((kind + figure.source).encode("utf-8")).hexdigest()[:8]
        self.prefix = f"x{digest}_"  #: what the SVG's element ids start with, unique per widget

    def __len__(self):
        return len(self.steps)

    def __repr__(self):
        return f"<Explorable {self.kind}: {self.title}, {len(self.steps)} steps>"

    def data(self):
        """What the page's script reads: the kind and every step with its view of the picture."""
        steps = [dict(step, **frame) for step, frame in zip(self.steps, self._frames, strict=True)]
        data = {"kind": self.kind, "prefix": self.prefix, "lists": [key for key, _ in self._lists], "steps": steps}
        if self._palette:
            data.update(palette=self._palette, parameters=self._parameters)
        return data

    def html(self):
        """The widget: figure, lists, status and controls, the steps as JSON, script and styles inline."""
        last = len(self.steps) - 1
        final = dict(self.steps[last], **self._frames[last])
        counter = final.get("counter") or _counter(last, len(self.steps))
        lists = "".join(
            f'<p class="cr-x-list"><span class="cr-x-list-name">{html.escape(label)}</span> '
            f'<span data-list="{key}">{html.escape(joined(final[key]))}</span></p>'
            for key, label in self._lists
        )
        legend = "".join(
            f'<li><span class="cr-x-swatch {css_class}" aria-hidden="true"></span>{html.escape(text)}</li>'
            for css_class, text in self._legend
        )
        data = json.dumps(self.data(), ensure_ascii=False, separators=(",", ":"))
        data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        label = html.escape(f"{self.title}. Step through it with the arrow keys or the buttons.")
        formula = ""
        if "formula" in final:
            formula = f'<p class="cr-x-formula" data-role="formula">{html.escape(final["formula"])}</p>\n'
        quiz = QUIZ if self._quiz else ""
        controls = (
            '<div class="cr-x-controls" data-role="controls" hidden>'
            '<button type="button" data-action="reset">Reset</button>'
            '<button type="button" data-action="previous">Previous step</button>'
            '<button type="button" data-action="play">Play</button>'
            '<button type="button" data-action="next">Next step</button>'
            '<label class="cr-x-slider">Step '
            f'<input type="range" min="0" max="{last}" step="1" value="{last}" '
            f'aria-valuetext="{html.escape(counter)}" data-role="slider"></label>'
            "</div>"
        )
        return (
            f'<div class="cr-explorable-output">\n<style>{asset(STYLE_FILE)}</style>\n'
            f'<div class="cr-explorable" data-explorable="{self.kind}" tabindex="0" role="group" '
            f'aria-label="{label}">\n'
            f'<div class="chainrule-figure cr-x-figure" style="overflow-x:auto">{self.svg()}</div>\n'
            '<p class="cr-x-note" data-role="scroll-hint" hidden>\u2194 Scroll the picture '
            "sideways to see all of it.</p>\n"
            f'<ul class="cr-x-legend">{legend}</ul>\n'
            + (f'<div class="cr-x-lists">{lists}</div>\n' if lists else "")
            + f"{controls}\n{quiz}"
            + formula
            + f'<p class="cr-x-status" aria-live="polite" data-role="status">'
            f"{html.escape(counter + '. ' + final['sentence'])}</p>\n"
            f'<noscript><p class="cr-x-note">{html.escape(self._note)}</p></noscript>\n'
            f'<script type="application/json" data-role="steps">{data}</script>\n'
            f"</div>\n<script>{asset(SCRIPT_FILE)}</script>\n</div>"
        )

    def svg(self):
        """The figure in its final state as an ``<svg>`` element, described by the final step's alt text.

        The texts named by ``text_roles`` get their ids, and every id a script uses gets
        this widget's :attr:`prefix`.
        """
        if isinstance(self.figure, TextFigure):  # panels already drawn, texts tagged
            svg = self.figure.markup
        else:
            svg = _tag_texts(self.figure.dot.pipe(), self._text_roles)
            svg = accessible_svg(svg, self._frames[-1]["alt"])
        return _ELEMENT_ID.sub(lambda match: f'id="{self.prefix}{match.group(1)}"', svg)

    def _repr_html_(self):
        return self.html()

    def save(self, path):
        """Write the widget as a standalone HTML page (for a browser, without a notebook)."""
        path = Path(path)
        page = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(self.title)}</title></head>\n"
            f'<body style="font-family:sans-serif;max-width:48rem;margin:1rem auto;padding:0 1rem">\n'
            f"{self.html()}\n</body></html>\n"
        )
        path.write_text(page, encoding="utf-8")
        return path


class TextFigure:
    """A figure already written as markup (the training widget's panels), with ``source`` for its id prefix."""

    def __init__(self, markup):
        self.markup = markup
        self.source = markup


_GROUP = re.compile(r'<g id="(node|edge)(?:&#45;|-)([^"]*)" class="[^"]*">(.*?)</g>', re.DOTALL)


def _tag_texts(svg, roles):
    """Give the last texts of each node and edge group of ``svg`` the ids a script writes to.

    ``roles`` maps ``"node"`` or ``"edge"`` to the names of the group's last texts, in
    order: ``{"node": ["value", "grad"]}`` gives the last two texts of the group
    ``node-p`` the ids ``text-value-p`` and ``text-grad-p``. Graphviz writes one
    ``<text>`` per row of a table label, in order, and an edge's label as its last text.
    """
    if not roles:
        return svg

    def tag(match):
        kind, name, body = match.groups()
        fields = roles.get(kind, [])
        starts = [found.start() for found in re.finditer(r"<text ", body)]
        if len(starts) < len(fields):
            return match.group(0)
        for field, start in reversed(list(zip(fields, starts[len(starts) - len(fields) :], strict=True))):
            body = f'{body[:start]}<text id="text-{field}-{name}" {body[start + 6 :]}'
        return match.group(0)[: match.start(3) - match.start(0)] + body + "</g>"

    return _GROUP.sub(tag, svg)


def joined(names):
    return ", ".join(names)


def and_list(names):
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _counter(index, count):
    """The status's step number, from 1; a step's own ``"counter"`` (the training step) wins."""
    return f"Step {index + 1} of {count}"


def number_text(x):
    """A number as the figures show it (4 significant digits), with a true minus sign."""
    return format_number(x).replace("-", "\u2212")


def value_text(x):
    return f"data {number_text(x)}"


def grad_text(x):
    return f"grad {number_text(x)}"


def escaped(text):
    return html.escape(str(text), quote=True)

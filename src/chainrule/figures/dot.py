"""DOT text for the figures, and its rendering to SVG by Graphviz's ``dot`` program.

The figures need only a few lines of DOT: graph, node and edge attributes, nodes and
edges. :class:`Digraph` writes them in exactly the form the ``graphviz`` package writes
(same quoting, attributes sorted by name, a tab before each line), so the SVG files are
the same as when that package built them. It is written here, not imported, so that
drawing a :class:`~chainrule.value.Value` graph needs nothing but Python: in the web
page (Pyodide) the DOT text is rendered by a WebAssembly build of Graphviz instead,
given to :func:`set_renderer`. Only :meth:`Digraph.pipe` runs ``dot``.
"""

import re
import subprocess

__all__ = ["Digraph", "GraphvizMissingError", "quote", "set_renderer"]

#: An identifier DOT reads without quotes: a name or a number.
_ID = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*|-?(\.[0-9]+|[0-9]+(\.[0-9]*)?))$")
_HTML = re.compile(r"<.*>$", re.DOTALL)  # an HTML-like label, <...>, is written as it is
_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}
_QUOTE = re.compile(r'(?P<backslashes>(?:\\\\)*)\\?(?P<quote>")')


_renderer = None  # DOT text -> SVG text, where the `dot` program cannot run (set_renderer)


def set_renderer(render):
    """Draw every figure with ``render(dot_text) -> svg_text`` instead of ``dot``; None: ``dot`` again.

    A web page's Python has no processes to run ``dot`` in: it draws with Graphviz compiled
    to WebAssembly, and hands this a function that does."""
    global _renderer
    _renderer = render


class GraphvizMissingError(RuntimeError):
    """Graphviz's ``dot`` program, which turns the figures into SVG, is not installed."""


def quote(text):
    """``text`` as a DOT identifier: as it is when DOT reads it so, else in double quotes."""
    text = str(text)
    if _HTML.match(text) or (_ID.match(text) and text.lower() not in _KEYWORDS):
        return text
    return '"' + _QUOTE.sub(r"\g<backslashes>\\\g<quote>", text) + '"'


def _attributes(label=None, attributes=None):
    """``label=... name=value ...``: the label first, then the other attributes by name."""
    items = [f"label={quote(label)}"] if label is not None else []
    items += [f"{quote(key)}={quote(value)}" for key, value in sorted((attributes or {}).items()) if value is not None]
    return " ".join(items)


class Digraph:
    """A directed graph as DOT text, built line by line (the subset of ``graphviz.Digraph`` the figures use)."""

    def __init__(self, name):
        self.name = name
        self.body = []

    def attr(self, kind=None, **attributes):
        """Attributes of the graph (``kind`` None), or defaults for every ``"node"`` or ``"edge"``."""
        text = _attributes(attributes=attributes)
        self.body.append(f"\t{text}\n" if kind is None else f"\t{kind} [{text}]\n")

    def node(self, name, label=None, **attributes):
        text = _attributes(label, attributes)
        self.body.append(f"\t{quote(name)}" + (f" [{text}]" if text else "") + "\n")

    def edge(self, tail, head, **attributes):
        text = _attributes(attributes=attributes)
        self.body.append(f"\t{quote(tail)} -> {quote(head)}" + (f" [{text}]" if text else "") + "\n")

    @property
    def source(self):
        """The DOT text."""
        return f"digraph {quote(self.name)} {{\n" + "".join(self.body) + "}\n"

    def pipe(self):
        """The graph drawn as an SVG document, by ``dot`` (or by the renderer of :func:`set_renderer`)."""
        if _renderer is not None:
            return _renderer(self.source)
        try:
            run = subprocess.run(
                ["dot", "-Kdot", "-Tsvg"], input=self.source.encode("utf-8"), capture_output=True, check=False
            )
        except OSError as error:  # no dot on PATH, or no processes at all (Pyodide)
            raise GraphvizMissingError(
                "drawing a figure needs Graphviz's `dot` program, which is not installed (or not on PATH). "
                "Install it: `sudo apt-get install graphviz` (Debian/Ubuntu; `make setup` does this), "
                "`brew install graphviz` (macOS) or `conda install graphviz`; on Colab, run the notebook's "
                "first cell, which installs it. Then run this cell again."
            ) from error
        if run.returncode != 0:
            raise RuntimeError(f"dot failed (exit {run.returncode}) on this figure: {run.stderr.decode()[-1000:]}")
        return run.stdout.decode("utf-8")

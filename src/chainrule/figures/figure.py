"""What every graph figure shares: :class:`Figure`, the colours, and the boxes of values.

:mod:`chainrule.figures.draw` draws graphs and their gradient flow with these parts, and
so can other code that draws graphs (a figure per step of a search, say).
A :class:`Figure` shows itself in a notebook (and in the book) as an inline ``<svg>``
with alt text, a white background and a width that never exceeds the page.
"""

import hashlib
import html
import math
from pathlib import Path

from .dot import Digraph
from .svg import SVG_HEADER, accessible_svg, scrolling_figure

FONT = "Helvetica"  # SVG viewers fall back to any sans-serif; dot measures Liberation Sans


# Colours.  Each state also differs in lightness or line style, so that a greyscale
# print still tells them apart.
INK = "black"


MUTED = "grey45"


OP_FILL = "grey92"


GLOBAL_GRAD_COLOR = "#1f4e9c"  # blue


LOCAL_GRAD_COLOR = "#c0001a"  # red


class GraphTooLargeError(ValueError):
    """A graph has more nodes than a readable figure can show."""


class Figure:
    """A drawn graph: a :class:`~chainrule.figures.dot.Digraph` plus one sentence of alt text.

    ``fig.dot`` is the Digraph, ``fig.source`` its DOT text, ``fig.alt`` the alt text.
    ``fig.svg()`` is SVG markup ready to put inside a web page; ``fig.save(path)``
    writes a standalone ``.svg`` file.  In a notebook the figure shows as inline SVG.
    """

    def __init__(self, digraph, alt):
        self._dot = digraph
        self._alt = alt
        # graphviz prefixes the ids of SVG elements with the graph's id; a prefix made
        # from the DOT text keeps ids unique when a page shows several figures.
        digest = hashlib.sha1(digraph.source.encode("utf-8")).hexdigest()[:10]
        digraph.attr(id=f"fig{digest}")

    @property
    def dot(self):
        """The :class:`~chainrule.figures.dot.Digraph` (add attributes to restyle the figure)."""
        return self._dot

    @property
    def source(self):
        """The DOT text of the figure."""
        return self._dot.source

    @property
    def alt(self):
        """One sentence that describes the figure, for readers who cannot see it."""
        return self._alt

    def svg(self):
        """Return the figure as an ``<svg>`` element for a web page.

        There is no XML header or doctype.  The ``<svg>`` tag gets ``role="img"``, an
        ``aria-label`` and a first ``<title>`` child with the alt text, and a style that
        scales it down (never up) to the width of the page.
        """
        svg = self._dot.pipe()  # GraphvizMissingError when dot is not installed
        return accessible_svg(svg, self._alt)

    def _repr_html_(self):
        """Jupyter shows the figure as inline SVG (not as an ``<img>`` file), scrolling sideways if it must."""
        return scrolling_figure(self.svg())

    def save(self, path):
        """Write the figure to ``path`` as a standalone SVG file and return the path."""
        path = Path(path)
        if path.suffix.lower() != ".svg":
            raise ValueError(f"Figure.save: can only write .svg files, got {str(path)!r}")
        path.write_text(SVG_HEADER + self.svg() + "\n", encoding="utf-8")
        return path

    def __repr__(self):
        return f"<Figure: {self._alt}>"


#: The one orientation of every graph the course draws (figures, widgets, drills): graphviz's
#: "BT", inputs at the bottom and the root at the top, so a forward pass reads upwards and the
#: backward pass downwards.  Tall graphs also fit a phone's narrow screen better than wide ones.
ORIENTATION = "BT"


def new_digraph(rankdir=ORIENTATION, title=None):
    """Return an empty Digraph with the house style (white background, sans-serif)."""
    if rankdir not in ("LR", "RL", "TB", "BT"):
        raise ValueError(f"rankdir must be one of 'LR', 'RL', 'TB', 'BT', got {rankdir!r}")
    dot = Digraph("chainrule")
    dot.attr(rankdir=rankdir, bgcolor="white", pad="0.15", nodesep="0.3", ranksep="0.35")
    dot.attr(fontname=FONT, fontsize="14")
    if title:
        dot.attr(label=f"<{dot_html(title)}>", labelloc="t")
    dot.attr("node", fontname=FONT, fontsize="12")
    dot.attr("edge", fontname=FONT, fontsize="11", arrowsize="0.7")
    return dot


def check_size(function_name, node_count, max_nodes):
    """Raise :class:`GraphTooLargeError` when a graph has more than ``max_nodes`` nodes."""
    if node_count > max_nodes:
        raise GraphTooLargeError(
            f"{function_name}: the graph has {node_count} nodes, more than max_nodes={max_nodes}. "
            "A figure that large is unreadable: draw a smaller sub-expression (pass an "
            f"intermediate node as the root), or raise the limit with max_nodes={node_count}."
        )


def format_number(x):
    """Show a number with 4 significant digits and a true minus sign, ``−0.25`` (``-0.0`` shows as ``0``)."""
    x = float(x)
    return "0" if x == 0.0 else f"{x:.4g}".replace("-", "\u2212")


def array_shape(x):
    """The shape of ``x`` when it is an array with at least one axis, else None."""
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None and len(shape) > 0 else None


def describe_data(data):
    """``"2.5"`` for a number, ``"shape (2, 3)"`` for an array."""
    shape = array_shape(data)
    return f"shape {shape}" if shape is not None else format_number(data)


def describe_grad(grad):
    """``"0.5"`` for a number, ``"norm 1.2"`` for an array, ``"none"`` when unset."""
    if grad is None:
        return "none"
    if array_shape(grad) is not None:
        return "norm " + format_number(math.sqrt(float((grad * grad).sum())))
    return format_number(grad)


_OP_SYMBOLS = {"*": "\u00d7", "-": "\u2212"}  # a times sign and a minus sign read better than * and -


def op_symbol(op):
    """The symbol a figure shows for an operation (``*`` as a times sign, ``-`` as a minus)."""
    return _OP_SYMBOLS.get(op, op or "?")


def dot_html(text):
    """Escape text for a graphviz HTML-like label."""
    return html.escape(str(text), quote=True)


def root_name(root):
    """How the alt text and legends call the root: its label, or "the output"."""
    label = getattr(root, "label", "")
    return label if label else "the output"


def counted(number, noun):
    """``"1 value"``, ``"3 values"``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def value_box(node, rows, show_op=False):
    """An HTML-like label: a box with the node's label on top and one row per entry.

    ``rows`` holds HTML snippets (already escaped).  With ``show_op`` the top row also
    names the operation that produced the node, in grey.  The box looks like a graphviz
    record, but an HTML table can colour and embolden single rows.
    """
    header = []
    if node.label:
        header.append(f"<B>{dot_html(node.label)}</B>")
    if show_op and node.op:
        header.append(f'<FONT COLOR="{MUTED}">({dot_html(op_symbol(node.op))})</FONT>')
    header = [" ".join(header)] if header else []
    body = "".join(f'<TR><TD ALIGN="LEFT">{row}</TD></TR>' for row in header + rows)
    return (
        '<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" ROWS="*" '
        f'BGCOLOR="white" COLOR="{INK}">{body}</TABLE>>'
    )


def data_row(node):
    if node.data is None:  # a Tensor the user dropped: only its shape is known
        return f"data {dot_html(f'shape {node.shape}')}"
    return f"data {dot_html(describe_data(node.data))}"


def grad_row(node, emphasise=False):
    text = f"grad {dot_html(describe_grad(node.grad))}"
    if emphasise:
        return f'<FONT COLOR="{GLOBAL_GRAD_COLOR}"><B>{text}</B></FONT>'
    return text

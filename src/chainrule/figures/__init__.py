"""Figures: graphs drawn through Graphviz, and SVG that a web page can read aloud.

Built on: the engine.

The modules, in order: each imports only the engine and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``svg`` -- SVG for web pages: an accessible ``<svg>`` element, never smaller than legible
* ``dot`` -- DOT text written in Python, rendered to SVG by Graphviz's ``dot``
* ``figure`` -- what every graph figure shares: :class:`Figure`, the colours, the boxes of values
* ``draw`` -- figures of graphs and of their gradient flow

The figures need only Python (and Graphviz's ``dot``, or its WebAssembly build in the
web page).
"""

from .dot import GraphvizMissingError
from .draw import draw_gradient_flow, draw_graph
from .figure import Figure, GraphTooLargeError

__all__ = [
    "Figure",
    "GraphTooLargeError",
    "GraphvizMissingError",
    "draw_gradient_flow",
    "draw_graph",
]

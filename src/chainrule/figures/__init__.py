"""Figures: graphs drawn through Graphviz, charts, and SVG that a web page can read aloud.

Built on: the engine.

The modules, in order: each imports only the engine and modules above it in this list
(``tests/test_layers.py`` checks it):

* ``svg`` -- SVG for web pages: an accessible ``<svg>`` element, never smaller than legible
* ``svgchart`` -- line charts and decision regions as SVG text in plain Python (the page's charts)
* ``dot`` -- DOT text written in Python, rendered to SVG by Graphviz's ``dot``
* ``draw`` -- figures of graphs, search steps and gradient flow
* ``plots`` -- line and bar charts as inline SVG (matplotlib when there is, else ``svgchart``)

The graph figures need only Python (and Graphviz's ``dot``, or its WebAssembly build in the
web page); the charts need matplotlib, or fall back to ``svgchart``.
"""

from .draw import Figure, GraphTooLargeError, draw_dfs_step, draw_gradient_flow, draw_graph

__all__ = ["Figure", "GraphTooLargeError", "draw_dfs_step", "draw_gradient_flow", "draw_graph"]

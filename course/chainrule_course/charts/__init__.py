"""Charts: the book's line, bar and region charts, as inline SVG with alt text.

The engine draws graphs (:mod:`chainrule.figures`); the course also plots numbers: loss
curves, costs, decision regions, small arrays. Those charts are the book's, in its style,
so they live here and not in the engine that ``pip install chainrule`` brings.

Built on: the engine, chainrule.figures (its accessible SVG, never smaller than legible).

The modules, in order: each imports only the rooms above and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``svgchart`` -- line charts and decision regions as SVG text in plain Python (the page's charts)
* ``plots`` -- line and bar charts as inline SVG (matplotlib when there is, else ``svgchart``)
"""

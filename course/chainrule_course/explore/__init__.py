"""Explorables: a recorded run of the engine that the reader steps through in the page.

An explorable is a view of what the engine really did, not a second engine written in
JavaScript. Python records the run; the page only shows the recorded steps one at a
time. Three kinds record the three processes of the scalar engine:

* :func:`toposort`: the depth-first search that puts a graph in topological order, the
  events of :func:`chainrule.graph.depth_first_events` through
  :func:`chainrule.graph.dfs_trace`;
* :func:`forward`: the values of a graph, node by node in that order, each with the
  operation and the inputs that gave it;
* :func:`backward`: the backward pass of :meth:`chainrule.Value.backward`, one edge per
  step, with the local gradient, the product and the parent's running sum; it runs
  ``backward()`` itself and checks that the sums it recorded are the ``.grad`` values
  the engine stored.

The result is an :class:`Explorable`. In a notebook (and in the book) it shows itself as
one self-contained piece of HTML:

* one SVG of the graph, drawn by :mod:`chainrule.figures.draw` (DOT through Graphviz's ``dot``),
  whose nodes, edges and changing texts carry stable ids (``node-x``, ``edge-c-d``,
  ``text-grad-c``), prefixed per widget so that two widgets on a page never share one;
* the recorded steps as JSON, in a ``<script type="application/json">``;
* the script ``explorable.js`` and the styles ``explorable.css``, which ship in this
  package and are inlined, so that the widget needs no server and no network (the built
  site, JupyterLab, Colab's output frame). The script defines itself once per page, however
  many widgets the page holds.

Without JavaScript (or where scripts are stripped, as in GitHub's notebook viewer) the
widget is a still figure of the final state, with alt text; the script resets it to the
first step and shows the controls.

Built on: the engine, chainrule.figures, chainrule_course.charts, chainrule_course.exercises (mistakes).

It needs only Python: the web page's Python runs it. From ``chainrule_course.exercises`` it takes only
``mistakes``, which imports nothing of the course: the backward widget names a wrong guess with it, as
the drills do.

The modules, in order: each imports only the rooms above and modules above it in this list
(``tests/repo/test_layers.py`` checks it):

* ``widget`` -- :class:`Explorable`, its script and styles, the words and numbers of a step
* ``dfs_figures`` -- figures of the depth-first search, one step each, and the ids a page restyles
* ``search`` -- :func:`toposort`
* ``slips`` -- the slips of one edge's local gradient, which the backward widget and the drills both name
* ``values`` -- :func:`forward` and :func:`backward`
* ``training`` -- :class:`TrainingRecorder` and its dashboard
"""

from .search import toposort
from .training import TrainingRecorder
from .values import backward, forward
from .widget import SCRIPT_FILE, STYLE_FILE, Explorable, asset

__all__ = ["Explorable", "TrainingRecorder", "asset", "backward", "forward", "toposort", "SCRIPT_FILE", "STYLE_FILE"]

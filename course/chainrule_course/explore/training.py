"""The ``training`` explorable: a classifier of points in the plane, recorded step by step while it trains."""

import math

from chainrule.figures.figure import GLOBAL_GRAD_COLOR
from chainrule.figures.svg import accessible_svg
from chainrule_course.charts import svgchart

from .widget import Explorable, TextFigure, escaped, number_text

#: Region fills (light) and point colours (dark) of up to four classes; each class also
#: has its own marker shape, so the classes read without colour.
_REGION_FILLS = ["#cfe0f3", "#fbd9b8", "#d3ecd0", "#e6d5ef"]


_POINT_COLOURS = ["#1f4e9c", "#b34d00", "#2e7d32", "#6a3d9a"]


_CLASS_NAMES = "ABCD"


#: A weight's colour by its sign (red positive, blue negative, both at least 5:1 on white).
_SIGN_COLOURS = {True: "#c0001a", False: "#1f4e9c"}


class TrainingRecorder:
    """Record a classifier of 2-D points while it trains, for the ``training`` explorable.

    ``points`` are ``(x1, x2)`` pairs and ``labels`` their classes (0, 1, ..., at most
    4 classes). ``forward(point)`` runs the network on one point and returns its layers
    as lists of Values, inputs first and the class scores (logits) last; ``loss(scores,
    label)`` is one example's loss, a Value. ``weights`` holds, per layer, one list per
    unit of its Values (weights then bias): the network's parameters.

    Call :meth:`record` after a step's ``backward()`` and before its update; it stores
    the loss, the weights and their gradients (those the update is about to use), the
    class the network gives every cell of a grid over the points (the decision regions),
    and, for each of ``examples`` (one point per class unless given), every unit's value
    and gradient: a backward pass of that example's loss alone, after which the
    parameters' gradients are put back as they were, so the update is not changed.
    :meth:`explorable` returns the widget: the regions, the network with its weights on
    its edges, and the loss curve.
    """

    def __init__(self, points, labels, *, forward, loss, weights, examples=None, grid=20):
        if len(points) != len(labels) or not points:
            raise ValueError(f"TrainingRecorder: {len(points)} points but {len(labels)} labels")
        classes = sorted(set(labels))
        if classes != list(range(len(classes))) or len(classes) > len(_REGION_FILLS):
            raise ValueError(
                f"TrainingRecorder: labels must be 0, 1, ... (at most {len(_REGION_FILLS)} classes), got {classes}"
            )
        self.points, self.labels, self.classes = list(points), list(labels), len(classes)
        self.forward, self.loss, self.weights = forward, loss, weights
        self.parameters = [p for layer in weights for unit in layer for p in unit]
        self.examples = list(examples) if examples is not None else [labels.index(label) for label in classes]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        pad_x, pad_y = 0.15 * (max(xs) - min(xs)), 0.15 * (max(ys) - min(ys))
        self.extent = (min(xs) - pad_x, max(xs) + pad_x, min(ys) - pad_y, max(ys) + pad_y)
        self.grid = grid
        self.snapshots = []

    def _classify(self, point):
        scores = [value.data for value in self.forward(point)[-1]]
        return scores.index(max(scores))

    def record(self, step, loss):
        """Store the state of the network at training step ``step``, whose batch loss is ``loss``."""
        x0, x1, y0, y1 = self.extent
        n = self.grid
        cells = "".join(
            str(self._classify((x0 + (i + 0.5) * (x1 - x0) / n, y1 - (j + 0.5) * (y1 - y0) / n)))
            for j in range(n)
            for i in range(n)
        )
        correct = sum(self._classify(p) == label for p, label in zip(self.points, self.labels, strict=True))
        saved = [p.grad for p in self.parameters]
        units = []
        for index in self.examples:
            layers = self.forward(self.points[index])
            example_loss = self.loss(layers[-1], self.labels[index])
            example_loss.zero_grad()
            example_loss.backward()
            units.append(
                ([[(v.data, v.grad) for v in layer] for layer in layers], (example_loss.data, example_loss.grad))
            )
        for p, grad in zip(self.parameters, saved, strict=True):
            p.grad = grad
        self.snapshots.append(
            {
                "step": step,
                "loss": float(getattr(loss, "data", loss)),
                "correct": correct,
                "cells": cells,
                "weights": [p.data for p in self.parameters],
                "grads": saved,
                "units": units,
            }
        )

    def explorable(self):
        """The ``training`` widget: regions, the network's weights and their gradients, the loss curve."""
        if not self.snapshots:
            raise ValueError("TrainingRecorder.explorable: nothing recorded yet; call record() in the training loop")
        return _training_explorable(self)


def _unit_names(sizes):
    """``x1, x2`` for the inputs, ``h1, ...`` (``g1, ...`` for a second) for hidden layers, and
    ``oA, oB, ...`` for the outputs, the scores of classes A, B, ..."""
    hidden = "hgfe"
    names = []
    for depth, size in enumerate(sizes):
        if depth == len(sizes) - 1:
            names.append([f"o{_CLASS_NAMES[i]}" if i < len(_CLASS_NAMES) else f"o{i + 1}" for i in range(size)])
        else:
            letter = "x" if depth == 0 else hidden[depth - 1]
            names.append([f"{letter}{i + 1}" for i in range(size)])
    return names


def _stroke(value, scale, thinnest=0.8, thickest=5.0):
    """A weight's line: its colour says its sign, its width its size (up to ``scale``)."""
    share = min(1.0, abs(value) / scale) if scale else 0.0
    return {"stroke": _SIGN_COLOURS[value >= 0], "stroke-width": round(thinnest + (thickest - thinnest) * share, 2)}


def _parameter_names(recorder, names):
    """Each parameter's name, in the order of ``recorder.parameters``: ``h1 ← x2``, ``bias of h1``."""
    labels = []
    for depth, units in enumerate(recorder.weights):
        for unit, row in enumerate(units):
            head = names[depth + 1][unit]
            inputs = names[depth]
            labels += [f"{head} \u2190 {inputs[k]}" if k < len(inputs) else f"bias of {head}" for k in range(len(row))]
    return labels


def _training_explorable(recorder):
    snapshots = recorder.snapshots
    sizes = [len(layer) for layer in snapshots[0]["units"][0][0]]
    names = _unit_names(sizes)
    scale = math.ceil(2 * max(abs(w) for snap in snapshots for w in snap["weights"])) / 2 or 1.0
    total = len(recorder.points)
    chart, cursor = _loss_chart(snapshots)
    steps, frames = [], []
    for number, snap in enumerate(snapshots):
        attrs = {f"part-w{i}": _stroke(w, scale) for i, w in enumerate(snap["weights"])}
        attrs.update(cursor(number))
        sentence = (
            f"After {snap['step']} updates of the weights, the mean loss over the "
            f"{total} points is {number_text(snap['loss'])}, and {snap['correct']} of them "
            "are in the region of their class."
        )
        counter = f"Step {snap['step']} of {snapshots[-1]['step']}"  # the training step, as the prose counts
        steps.append(
            {
                "step": snap["step"],
                "counter": counter,
                "loss": snap["loss"],
                "correct": snap["correct"],
                "sentence": sentence,
            }
        )
        frames.append(
            {
                "nodes": {},
                "edges": [],
                "grid": snap["cells"],
                "attrs": attrs,
                "weights": [number_text(w) for w in snap["weights"]],
                "grads": [number_text(g) for g in snap["grads"]],
                "alt": f"Training step {snap['step']}: loss {number_text(snap['loss'])}, "
                f"{snap['correct']} of {total} points in their class's region.",
            }
        )
    legend = [(f"cr-class-{k}", f"class {_CLASS_NAMES[k]}") for k in range(recorder.classes)]
    legend += [("cr-weight-plus", "weight > 0"), ("cr-weight-minus", "weight < 0 (thicker: larger)")]
    return Explorable(
        "training",
        "A classifier learning, step by step",
        TextFigure(_training_panels(recorder, names, chart, scale)),
        steps,
        frames,
        legend=legend,
        palette=_REGION_FILLS[: recorder.classes],
        parameters=_parameter_names(recorder, names),
        note="The end of training. With JavaScript on, the buttons step through it.",
    )


def _loss_chart(snapshots):
    """The loss curve as a line chart (:mod:`chainrule_course.charts.svgchart`), and the cursor's place per step.

    Returns the SVG and a function of a step's number that gives the attributes which put
    the cursor (a dashed line and a dot, ids ``part-cursor``) on that step. The script
    moves to the step nearest a click on the chart.
    """
    steps, losses = [snap["step"] for snap in snapshots], [snap["loss"] for snap in snapshots]
    width, height = _LOSS_SIZE
    top = max(losses) or 1.0
    axes = svgchart.Axes(width, height, (steps[0], steps[-1]), (0.0, top), False, False)
    xticks, yticks = svgchart.nice_ticks(steps[0], steps[-1], 4), svgchart.nice_ticks(0.0, top, 2)
    parts = axes.frame(xticks, yticks, "updates", "loss")
    line = " ".join(f"{axes.x(step):.1f},{axes.y(loss):.1f}" for step, loss in zip(steps, losses, strict=True))
    parts.append(f'<polyline points="{line}" fill="none" stroke="{GLOBAL_GRAD_COLOR}" stroke-width="1.6"/>')

    def cursor(number):
        x, y = round(axes.x(steps[number]), 1), round(axes.y(losses[number]), 1)
        return {"part-cursor": {"x1": x, "x2": x}, "part-cursor-dot": {"cx": x, "cy": y}}

    last = cursor(len(steps) - 1)
    x, y = last["part-cursor"]["x1"], last["part-cursor-dot"]["cy"]
    parts.append(
        f'<line id="part-cursor" x1="{x}" x2="{x}" y1="{axes.y(top):.1f}" y2="{axes.y(0.0):.1f}" stroke="#b35c00" '
        'stroke-width="1.5" stroke-dasharray="3,2"/>'
    )
    parts.append(f'<circle id="part-cursor-dot" cx="{x}" cy="{y}" r="4" fill="#b35c00"/>')
    return svgchart.svg_document(width, height, parts), cursor


#: The sizes of the panels, in pixels (the plot areas are these less svgchart's margins for
#: ticks and labels). Side by side they fill a column of the book; on a phone they stack,
#: scaled to its width, their 11 px text never under 9 px.
_REGIONS_SIZE = (262, 262)
_NETWORK_SIZE = (380, 176)
_LOSS_SIZE = (380, 118)


def _regions_svg(recorder, final):
    """The decision regions (:mod:`chainrule_course.charts.svgchart`'s cells, which each step fills again)
    and the points, each class with its marker and colour."""
    n, (x0, x1, y0, y1) = recorder.grid, recorder.extent
    axes = svgchart.Axes(*_REGIONS_SIZE, (x0, x1), (y0, y1), False, False)
    box = (axes.x(x0), axes.y(y1), (axes.x(x1) - axes.x(x0)) / n, (axes.y(y0) - axes.y(y1)) / n)
    classes = [int(c) for c in final["cells"]]
    parts = ['<g data-role="cells">', *svgchart.region_cells(classes, n, box, _REGION_FILLS, ' data-cell=""'), "</g>"]
    parts += axes.frame(svgchart.nice_ticks(x0, x1, 4), svgchart.nice_ticks(y0, y1, 4), "x1", "x2", grid=False)
    for (x, y), label in zip(recorder.points, recorder.labels, strict=True):
        shape = svgchart.MARKERS[label % len(svgchart.MARKERS)]
        parts.append(svgchart.marker(shape, axes.x(x), axes.y(y), _POINT_COLOURS[label], 4.0, edge="white"))
    return svgchart.svg_document(*_REGIONS_SIZE, parts)


def _unit_places(names):
    """The centre of each unit's circle in the network panel: a column per layer."""
    width, height = _NETWORK_SIZE
    places = {}
    for depth, layer in enumerate(names):
        x = 24 + (width - 48) * depth / (len(names) - 1)
        gap = min(42, (height - 30) / max(1, len(layer) - 1))
        for i, name in enumerate(layer):
            places[name] = (x, height / 2 + (i - (len(layer) - 1) / 2) * gap)
    return places


def _network_svg(recorder, names, final, scale):
    """The network: a circle per unit, a line per weight (colour its sign, width its size),
    the bias of a unit as its circle's outline. Each parameter's line or outline has the id
    ``part-w<i>``, i its place in ``recorder.parameters``, and a wider invisible line to
    point at (``data-param``)."""
    places, radius, lines, circles, number = _unit_places(names), 13, [], [], 0
    for depth, units in enumerate(recorder.weights):
        for unit, row in enumerate(units):
            head = names[depth + 1][unit]
            hx, hy = places[head]
            for k in range(len(row)):
                stroke = _stroke(final["weights"][number], scale)
                if k < len(names[depth]):
                    tx, ty = places[names[depth][k]]
                    ends = f'x1="{tx + radius}" y1="{ty:.1f}" x2="{hx - radius}" y2="{hy:.1f}"'
                    lines.append(
                        f'<g data-param="{number}"><line class="cr-x-halo" {ends}/>'
                        f'<line id="part-w{number}" {ends} stroke="{stroke["stroke"]}" '
                        f'stroke-width="{stroke["stroke-width"]}"/><line class="cr-x-hit" {ends}/></g>'
                    )
                else:
                    circles.append(
                        f'<g data-param="{number}"><circle class="cr-x-halo" cx="{hx}" cy="{hy:.1f}" r="{radius}"/>'
                        f'<circle id="part-w{number}" cx="{hx}" cy="{hy:.1f}" r="{radius}" fill="white" '
                        f'stroke="{stroke["stroke"]}" stroke-width="{stroke["stroke-width"]}"/></g>'
                    )
                number += 1
    for name in names[0]:
        x, y = places[name]
        circles.append(f'<circle cx="{x}" cy="{y:.1f}" r="{radius}" fill="white" stroke="#595959"/>')
    labels = [
        f'<text x="{x}" y="{y + 4:.1f}" font-size="11" text-anchor="middle">{escaped(name)}</text>'
        for name, (x, y) in places.items()
    ]
    return svgchart.svg_document(*_NETWORK_SIZE, lines + circles + labels)


def _training_panels(recorder, names, chart, scale):
    """The three panels of the training widget, each an SVG with alt text, and the weight readout."""
    snapshots, final = recorder.snapshots, recorder.snapshots[-1]
    total = len(recorder.points)
    count = len(recorder.parameters)
    layout = " \u2192 ".join(str(len(layer)) for layer in names)
    regions = accessible_svg(
        _regions_svg(recorder, final),
        f"Decision regions of the network after {final['step']} steps over {total} points of "
        f"{recorder.classes} classes; {final['correct']} of {total} points lie in their class's region.",
    )
    network = accessible_svg(
        _network_svg(recorder, names, final, scale),
        f"The network, {layout} units, with its {count} weights "
        "drawn as its lines (a bias as its unit's outline): red positive, blue negative, thicker larger. "
        "Choose a weight in the list below the picture to read its value and gradient.",
    )
    loss = accessible_svg(
        chart,
        f"The mean loss over {len(snapshots)} recorded steps, from {number_text(snapshots[0]['loss'])} to "
        f"{number_text(snapshots[-1]['loss'])}, with a cursor at the current step. Click it to go to a step; "
        "the Step slider and the arrow keys do the same.",
    )
    options = "".join(
        f'<option value="{i}">{escaped(name)}</option>' for i, name in enumerate(_parameter_names(recorder, names))
    )
    readout = (
        '<p class="cr-x-readout"><label>Weight <select data-role="parameter">'
        f"{options}</select></label> "
        f'<span data-role="parameter-readout" aria-live="polite">= {escaped(number_text(final["weights"][0]))}, '
        f"gradient of the loss {escaped(number_text(final['grads'][0]))}</span></p>"
    )
    return (
        '<div class="cr-x-panels">'
        f'<figure class="cr-x-panel cr-x-regions"><figcaption>Decision regions</figcaption>{regions}</figure>'
        '<div class="cr-x-column">'
        f'<figure class="cr-x-panel"><figcaption>Weights, on the network\'s lines</figcaption>{network}'
        f"{readout}</figure>"
        '<figure class="cr-x-panel cr-x-loss" data-role="loss-chart"><figcaption>Mean loss'
        '<span class="web-only"> (click to go to a step)</span>'  # not on paper (tools/pdf.css)
        f"</figcaption>{loss}</figure>"
        "</div></div>"
    )

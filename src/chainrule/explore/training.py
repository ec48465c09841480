"""The ``training`` explorable: a classifier of points in the plane, recorded step by step while it trains."""

import math

from ..figures import svgchart
from ..figures.figure import GLOBAL_GRAD_COLOR, INK, new_digraph
from ..figures.svg import accessible_svg
from .widget import Explorable, _grad_text, _html, _number, _tag_texts, _TextFigure, _value_text

#: Region fills (light) and point colours (dark) of up to four classes; each class also
#: has its own marker shape, so the classes read without colour.
_REGION_FILLS = ["#cfe0f3", "#fbd9b8", "#d3ecd0", "#e6d5ef"]


_POINT_COLOURS = ["#1f4e9c", "#b34d00", "#2e7d32", "#6a3d9a"]


_CLASS_NAMES = "ABCD"


class TrainingRecorder:
    """Record a classifier of 2-D points while it trains, for the ``training`` explorable.

    ``points`` are ``(x1, x2)`` pairs and ``labels`` their classes (0, 1, ..., at most
    4 classes). ``forward(point)`` runs the network on one point and returns its layers
    as lists of Values, inputs first and the class scores (logits) last; ``loss(scores,
    label)`` is one example's loss, a Value. ``weights`` holds, per layer, one list per
    unit of its Values (weights then bias): the network's parameters.

    Call :meth:`record` after a step's ``backward()`` and before its update; it stores
    the loss, the weights, the class the network gives every cell of a grid over the
    points (the decision regions), and, for each example offered to the reader, every
    unit's value and gradient: a backward pass of that example's loss alone, after which
    the parameters' gradients are put back as they were, so the update is not changed.
    :meth:`explorable` returns the widget.
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
        correct = sum(self._classify(p) == label for p, label in zip(self.points, self.labels))
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
        for p, grad in zip(self.parameters, saved):
            p.grad = grad
        self.snapshots.append(
            {
                "step": step,
                "loss": float(getattr(loss, "data", loss)),
                "correct": correct,
                "cells": cells,
                "weights": [p.data for p in self.parameters],
                "units": units,
            }
        )

    def explorable(self):
        """The ``training`` widget: regions, loss curve with a cursor, weights, one example's network."""
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


def _diverging(value, scale):
    """A blue (negative) to white to red (positive) colour for a weight."""
    t = max(-1.0, min(1.0, value / scale)) if scale else 0.0
    blue, red = (31, 78, 156), (192, 0, 26)
    end = red if t > 0 else blue
    mix = [round(255 + (c - 255) * abs(t)) for c in end]
    return "#{:02x}{:02x}{:02x}".format(*mix)


def _training_explorable(recorder):
    snapshots = recorder.snapshots
    first_units = snapshots[0]["units"][0][0]
    sizes = [len(layer) for layer in first_units]
    names = _unit_names(sizes)
    scale = math.ceil(2 * max(abs(w) for snap in snapshots for w in snap["weights"])) / 2 or 1.0
    examples = recorder.examples
    total = len(recorder.points)

    steps, frames = [], []
    chart, cursor = _loss_chart(snapshots)
    weight_ids = [
        f"part-w{layer}-{unit}-{k}"
        for layer, units in enumerate(recorder.weights)
        for unit, row in enumerate(units)
        for k in range(len(row))
    ]
    for number, snap in enumerate(snapshots):
        per_example = []
        for layers, (loss_value, loss_grad) in snap["units"]:
            texts = {}
            for layer_names, layer in zip(names, layers):
                for name, (data, grad) in zip(layer_names, layer):
                    texts[f"text-value-{name}"] = _value_text(data)
                    texts[f"text-grad-{name}"] = _grad_text(grad) if grad is not None else "grad \u2013"
            texts["text-value-loss"] = _value_text(loss_value)
            texts["text-grad-loss"] = _grad_text(loss_grad)
            per_example.append(texts)
        attrs = {weight_ids[i]: {"fill": _diverging(w, scale)} for i, w in enumerate(snap["weights"])}
        attrs.update(cursor(number))
        sentence = (
            f"After {snap['step']} updates of the weights, the mean loss over the "
            f"{total} points is {_number(snap['loss'])}, and {snap['correct']} of them "
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
                "examples": per_example,
                "alt": f"Training step {snap['step']}: loss {_number(snap['loss'])}, "
                f"{snap['correct']} of {total} points in their class's region.",
            }
        )
    figure_html = _training_panels(recorder, names, weight_ids, chart, snapshots[-1], scale)
    title = "A classifier learning, step by step"
    legend = [(f"cr-class-{k}", f"class {_CLASS_NAMES[k]}") for k in range(recorder.classes)]
    choices = [f"point {index + 1} (class {_CLASS_NAMES[recorder.labels[index]]})" for index in examples]
    rings = [_ring_position(recorder, recorder.points[index]) for index in examples]
    return Explorable(
        "training",
        title,
        _TextFigure(figure_html),
        steps,
        frames,
        legend=legend,
        text_roles={"node": ["value", "grad"]},
        examples=choices,
        rings=rings,
        palette=_REGION_FILLS[: recorder.classes],
        note="The end of training. With JavaScript on, the buttons step through it.",
    )


def _loss_chart(snapshots):
    """The loss curve as a line chart (:mod:`chainrule.figures.svgchart`), and the cursor's place per step.

    Returns the SVG and a function of a step's number that gives the attributes which put
    the cursor (a dashed line and a dot, ids ``part-cursor``) on that step.
    """
    steps, losses = [snap["step"] for snap in snapshots], [snap["loss"] for snap in snapshots]
    width, height = _LOSS_SIZE
    top = max(losses) or 1.0
    axes = svgchart.Axes(width, height, (steps[0], steps[-1]), (0.0, top), False, False)
    xticks, yticks = svgchart.nice_ticks(steps[0], steps[-1], 3), svgchart.nice_ticks(0.0, top, 3)
    parts = axes.frame(xticks, yticks, "updates", "mean loss")
    line = " ".join(f"{axes.x(step):.1f},{axes.y(loss):.1f}" for step, loss in zip(steps, losses))
    parts.append(f'<polyline points="{line}" fill="none" stroke="{GLOBAL_GRAD_COLOR}" stroke-width="1.6"/>')

    def cursor(number):
        x, y = round(axes.x(steps[number]), 1), round(axes.y(losses[number]), 1)
        return {"part-cursor": {"x1": x, "x2": x}, "part-cursor-dot": {"cx": x, "cy": y}}

    last = cursor(len(steps) - 1)
    x, y = last["part-cursor"]["x1"], last["part-cursor-dot"]["cy"]
    parts.append(
        f'<line id="part-cursor" x1="{x}" x2="{x}" y1="{axes.y(top):.1f}" y2="{axes.y(0.0):.1f}" stroke="#e08a00" '
        'stroke-width="1.5" stroke-dasharray="3,2"/>'
    )
    parts.append(f'<circle id="part-cursor-dot" cx="{x}" cy="{y}" r="3.5" fill="#e08a00"/>')
    return svgchart.svg_document(width, height, parts), cursor


#: The sizes of the loss chart and of the regions panel, in pixels (the plot areas are
#: these less svgchart's margins for ticks and labels).
_LOSS_SIZE = (300, 170)
_REGIONS_SIZE = (290, 272)


def _regions_axes(recorder):
    x0, x1, y0, y1 = recorder.extent
    return svgchart.Axes(*_REGIONS_SIZE, (x0, x1), (y0, y1), False, False)


def _ring_position(recorder, point):
    axes = _regions_axes(recorder)
    return {"part-ring": {"cx": round(axes.x(point[0]), 1), "cy": round(axes.y(point[1]), 1)}}


def _regions_svg(recorder, final):
    """The decision regions (:mod:`chainrule.figures.svgchart`'s cells, which each step fills again),
    the points, each class with its marker and colour, and a ring around the chosen example."""
    n, (x0, x1, y0, y1) = recorder.grid, recorder.extent
    axes = _regions_axes(recorder)
    box = (axes.x(x0), axes.y(y1), (axes.x(x1) - axes.x(x0)) / n, (axes.y(y0) - axes.y(y1)) / n)
    classes = [int(c) for c in final["cells"]]
    parts = ['<g data-role="cells">', *svgchart.region_cells(classes, n, box, _REGION_FILLS, ' data-cell=""'), "</g>"]
    parts += axes.frame(svgchart.nice_ticks(x0, x1, 4), svgchart.nice_ticks(y0, y1, 4), "x1", "x2", grid=False)
    for (x, y), label in zip(recorder.points, recorder.labels):
        shape = svgchart.MARKERS[label % len(svgchart.MARKERS)]
        parts.append(svgchart.marker(shape, axes.x(x), axes.y(y), _POINT_COLOURS[label], 4.0, edge="white"))
    ring = _ring_position(recorder, recorder.points[recorder.examples[0]])["part-ring"]
    parts.append(
        f'<circle id="part-ring" cx="{ring["cx"]}" cy="{ring["cy"]}" r="8" fill="none" stroke="#000" stroke-width="2"/>'
    )
    return svgchart.svg_document(*_REGIONS_SIZE, parts)


def _weights_svg(recorder, weight_ids, final, scale):
    size, gap, rows = 18, 24, []
    y, number, width = 14, 0, 0
    for depth, units in enumerate(recorder.weights):
        inputs = len(units[0]) - 1
        rows.append(
            f'<text x="0" y="{y - 3}" font-size="10">layer {depth + 1}: '
            f"{len(units)} units \u00d7 ({inputs} weights + bias)</text>"
        )
        for unit, row in enumerate(units):
            for k, _ in enumerate(row):
                x = k * size + (4 if k == inputs else 0)  # the bias a little apart
                rows.append(
                    f'<rect id="{weight_ids[number]}" x="{x}" y="{y + unit * size}" '
                    f'width="{size - 1}" height="{size - 1}" '
                    f'fill="{_diverging(final["weights"][number], scale)}" stroke="#999" '
                    'stroke-width="0.5"/>'
                )
                width = max(width, x + size)
                number += 1
        y += len(units) * size + gap
    width = max(width, 190)
    rows.append(
        f'<text x="0" y="{y - 8}" font-size="10">blue &lt; 0 &lt; red, '
        f"full colour at \u00b1{_html(_number(scale))}</text>"
    )
    return (
        f'<svg viewBox="0 0 {width} {y}" width="{width}" height="{y}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(rows)}</svg>'
    )


def _units_svg(recorder, names, final_texts, widest):
    dot = new_digraph("LR")
    dot.attr(nodesep="0.12", ranksep="0.5", ordering="out")
    width = round(10 + 6.3 * widest)
    for layer in names + [["loss"]]:
        for name in layer:
            rows = [f"<B>{_html(name)}</B>", _html(final_texts.get(f"text-value-{name}", ""))]
            rows.append(f'<FONT COLOR="{GLOBAL_GRAD_COLOR}"><B>{_html(final_texts[f"text-grad-{name}"])}</B></FONT>')
            body = "".join(f'<TR><TD ALIGN="LEFT" WIDTH="{width}">{row}</TD></TR>' for row in rows)
            dot.node(
                name,
                f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" '
                f'BGCOLOR="white" COLOR="{INK}">{body}</TABLE>>',
                shape="plain",
                id=f"node-{name}",
                fontsize="11",
            )
    for before, after in zip(names, names[1:] + [["loss"]]):
        for tail in before:
            for head in after:
                dot.edge(tail, head, color="grey60", arrowsize="0.4")
    return _tag_texts(dot.pipe(), {"node": ["value", "grad"]})


def _training_panels(recorder, names, weight_ids, chart, final, scale):
    """The four panels of the training widget, each an SVG with alt text, in a wrapping row."""
    snapshots = recorder.snapshots
    texts = {}
    widest = 0
    for snap in snapshots:
        for layers, (loss_value, _) in snap["units"]:
            for layer in layers:
                for data, grad in layer:
                    widest = max(widest, len(_value_text(data)), len(_grad_text(grad or 0.0)))
    layers, (loss_value, loss_grad) = final["units"][0]
    texts["text-grad-loss"] = _grad_text(loss_grad)
    for layer_names, layer in zip(names, layers):
        for name, (data, grad) in zip(layer_names, layer):
            texts[f"text-value-{name}"] = _value_text(data)
            texts[f"text-grad-{name}"] = _grad_text(grad) if grad is not None else "grad \u2013"
    texts["text-value-loss"] = _value_text(loss_value)
    total = len(recorder.points)
    panels = [
        (
            "Decision regions",
            _regions_svg(recorder, final),
            f"Decision regions of the network after {final['step']} steps over {total} points of "
            f"{recorder.classes} classes; {final['correct']} of {total} points lie in their "
            "class's region. The ringed point is the example shown in the network.",
        ),
        (
            "Mean loss",
            chart,
            f"The training loss over {len(snapshots)} recorded steps, from "
            f"{_number(snapshots[0]['loss'])} to {_number(snapshots[-1]['loss'])}, with a cursor "
            "at the current step.",
        ),
        (
            "Weights",
            _weights_svg(recorder, weight_ids, final, scale),
            "The weights of each layer as a grid of coloured cells, one row per unit: blue negative, red positive.",
        ),
        (
            "The network on the chosen example, with its own loss",
            _units_svg(recorder, names, texts, widest),
            "The network's units for the chosen example: the inputs x, the hidden units h and the "
            "scores oA, oB, oC of the classes; each box shows the unit's value and its gradient, "
            "the derivative of that example's loss with respect to it.",
        ),
    ]
    return (
        '<div class="cr-x-panels">'
        + "".join(
            f'<figure class="cr-x-panel"><figcaption>{_html(title)}</figcaption>{accessible_svg(svg, alt)}</figure>'
            for title, svg, alt in panels
        )
        + "</div>"
    )

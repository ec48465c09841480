"""The ``forward`` and ``backward`` explorables of a graph of Values.

``forward`` computes it node by node; ``backward`` runs its backward pass edge by edge.
"""

from itertools import pairwise

from chainrule.figures.figure import (
    GLOBAL_GRAD_COLOR,
    INK,
    LOCAL_GRAD_COLOR,
    MUTED,
    ORIENTATION,
    Figure,
    GraphTooLargeError,
    format_number,
    new_digraph,
    op_symbol,
)
from chainrule.graph import dfs_trace, numbered_ids, topological_order, trace_names, unique_names
from chainrule_course.exercises.mistakes import named_slip

from .dfs_figures import dfs_element_ids
from .slips import close, local_slips, partial
from .widget import Explorable, and_list, escaped, grad_text, joined, number_text, value_text

FORWARD_LEGEND = [
    ("cr-pending", "not computed yet"),
    ("cr-computed", "computed"),
    ("cr-current", "computed in this step"),
]


BACKWARD_LEGEND = [
    ("cr-waiting", "no gradient yet"),
    ("cr-partial", "gradient still growing"),
    ("cr-complete", "gradient complete"),
    ("cr-current", "sends its gradient back"),
    ("cr-target", "receives it"),
]


_OP_WORDS = {
    "+": "an addition",
    "-": "a subtraction",
    "*": "a multiplication",
    "/": "a division",
    "neg": "a negation",
    "tanh": "tanh",
    "sigmoid": "the sigmoid",
    "exp": "exp",
    "log": "log",
    "relu": "ReLU",
}


_BINARY = {"+": "+", "-": "\u2212", "*": "\u00d7", "/": "/"}


def forward(root, *, rankdir=ORIENTATION, max_nodes=30):
    """Record the forward pass that computed ``root``: one node per step, in topological order.

    ``root`` is a :class:`~chainrule.value.Value`. The graph is walked in the order of
    :func:`chainrule.graph.topological_order`, the order in which the engine can compute
    it: every node comes after its inputs. Each step is a dict::

        {"node": "p", "op": "*", "inputs": ["a", "b"], "value": -1.0,
         "formula": "p = a × b = 2 × (−0.5) = −1", "sentence": "..."}

    where ``value`` is the number the engine computed (``node.data``); a leaf has
    ``op`` ``""`` and no inputs. Returns an :class:`Explorable`. Raises TypeError for
    anything but a Value, and :class:`~chainrule.figures.GraphTooLargeError` for a graph of
    more than ``max_nodes`` values.
    """
    order, names, node_ids, edge_ids = _value_graph("explore.forward", root, max_nodes)
    steps, frames, known = [], [], set()
    for number, node in enumerate(order):
        known.add(node)
        inputs = [names[parent] for parent in node.parents]
        formula = _forward_formula(node, names)
        if node.parents:
            which = and_list(dict.fromkeys(inputs))
            both = "both known by now" if len(set(inputs)) == 2 else "known by now"
            sentence = f"{names[node]} is {_OP_WORDS.get(node.op, node.op)} of {which}, {both}: {formula}."
        else:
            kind = "a leaf: an input" if node.label else "a leaf: a constant"
            sentence = f"{names[node]} is {kind}, with the value {number_text(node.data)}."
        if number == len(order) - 1:
            sentence += " The forward pass is complete."
        steps.append(
            {
                "node": names[node],
                "op": node.op,
                "inputs": inputs,
                "value": node.data,
                "formula": formula,
                "sentence": sentence,
            }
        )
        frames.append(_forward_frame(order, node, known, names, node_ids, edge_ids, root, number))
    texts = {node: [value_text(node.data), "data ?"] for node in order}
    final_classes = frames[-1]["nodes"]
    figure = _value_figure(order, names, node_ids, edge_ids, texts, final_classes, rankdir, with_grad=False)
    title = f"The forward pass of {names[root]}, step by step"
    return Explorable(
        "forward",
        title,
        figure,
        steps,
        frames,
        legend=FORWARD_LEGEND,
        text_roles={"node": ["value"]},
        note="The final state of the forward pass. With JavaScript on, the buttons step through it.",
    )


def backward(root, *, rankdir=ORIENTATION, max_nodes=30):
    """Run ``root.backward()`` and record it: one edge of the graph per step.

    ``root`` is a :class:`~chainrule.value.Value`. Its graph's gradients are set to zero
    (:meth:`~chainrule.value.Value.zero_grad`), then ``root.backward(on_node=...)`` runs
    and tells the recording each node it reaches, in its order, with every gradient as
    the engine holds it at that moment. A node then sends its gradient to each parent
    in turn, where the parent's running sum grows by ``child gradient × local
    gradient``: one step per edge. The first step seeds the root's gradient with 1.
    Each later step is a dict::

        {"child": "n", "parent": "p", "local": 1.0, "child_grad": 0.786, "product": 0.786,
         "before": 0.0, "after": 0.786, "gradients": {"L": 1.0, "n": 0.786, ...},
         "formula": "p̄ += n̄ · ∂n/∂p = 0.7864 × 1 = 0.7864", "sentence": "..."}

    ``gradients`` holds every node's running sum after the step, so the last step's are
    the gradients. Where the engine reaches the next node, or ends, the sums must be
    exactly the gradients it holds; a difference raises AssertionError. A step with a
    ``"quiz"`` can be guessed before it is shown, in the widget's "Predict, then reveal"
    mode: the product, or, where the parent already holds a term from another edge
    (fan-out), its new running sum; its ``"mistakes"`` are the numbers that one slip alone gives,
    each with its words and name, as the drills name them (:func:`_quiz_mistakes`).

    Returns an :class:`Explorable`. Raises TypeError for anything but a Value, and
    :class:`~chainrule.figures.GraphTooLargeError` for more than ``max_nodes`` values.
    """
    order, names, node_ids, edge_ids = _value_graph("explore.backward", root, max_nodes)
    root.zero_grad()
    reached = []  # (node, every node's gradient) each time the engine reaches a node
    root.backward(on_node=lambda node: reached.append((node, {other: other.grad for other in order})))
    reached.append((None, {node: node.grad for node in order}))
    edges = _backward_edges(order, [node for node, _ in reached[:-1]], edge_ids)
    steps, frames = _record_backward(order, names, node_ids, root, edges, reached)
    texts = {node: [value_text(node.data), grad_text(node.grad)] for node in order}
    for frame in frames:  # the widest text of a box's gradient row, over all the steps
        for node in order:
            texts[node].append(frame["texts"][f"text-grad-{node_ids[node][5:]}"])
    figure = _value_figure(order, names, node_ids, edge_ids, texts, frames[-1]["nodes"], rankdir, with_grad=True)
    shown = {state for frame in frames for state in frame["nodes"].values()} | {"cr-current", "cr-target"}
    legend = [entry for entry in BACKWARD_LEGEND if entry[0] in shown]
    legend.append(("cr-local", "local gradient \u2202child/\u2202parent, on the edge"))
    return Explorable(
        "backward",
        f"The backward pass of {names[root]} from {_leaf_names(order, names)}, one edge at a time",
        figure,
        steps,
        frames,
        legend=legend,
        text_roles={"node": ["value", "grad"], "edge": ["local"]},
        quiz=True,
        note="The final state of the backward pass: every box shows its "
        "gradient. With JavaScript on, the buttons step through it.",
    )


def _leaf_names(order, names):
    """``"a, b and c"``: the graph's inputs, which tell two widgets of one page apart."""
    leaves = [names[node] for node in order if not node.parents]
    return leaves[0] if len(leaves) == 1 else ", ".join(leaves[:-1]) + " and " + leaves[-1]


def _backward_edges(order, visited, edge_ids):
    """``(children, edge_order, edge_text)``: what the recording of a backward pass walks.

    ``children`` counts the edges that leave each node towards a child; ``edge_order``
    lists the edges as ``(child, index of the parent)`` in the order of ``visited``, the
    nodes as the engine reached them; ``edge_text`` gives the id of the text on each edge.
    """
    children = {node: 0 for node in order}
    for node in order:
        for parent in node.parents:
            children[parent] += 1
    edge_order = [(node, index) for node in visited for index in range(len(node.parents))]
    edge_text = {}
    for node in order:
        seen: dict = {}
        for index, parent in enumerate(node.parents):
            number = seen[parent] = seen.get(parent, -1) + 1
            edge_text[(node, index)] = edge_ids[(parent, node)][number]
    return children, edge_order, edge_text


def _record_backward(order, names, node_ids, root, edges, reached):
    """The steps and frames of the backward pass from ``root``, from what the engine held.

    ``reached`` lists, for each node the engine reached and then for the end of the
    pass, every node's gradient at that moment. A node's steps start from the gradients
    of its own moment; after its last edge they must be those of the next moment.
    """
    children, edge_order, edge_text = edges
    top = names[root]
    heard = {node: 0 for node in order}
    running = dict(reached[0][1])  # the root seeded, every other gradient still 0
    steps = [
        {
            "event": "seed",
            "node": top,
            "gradients": _gradients(running, names),
            "formula": f"{_bar(top)} = \u2202{top}/\u2202{top} = {number_text(running[root])}",
            "sentence": (
                f"Start at the root: {_bar(top)} = \u2202{top}/\u2202{top} = 1. Every other "
                "global gradient starts at 0."
            ),
        }
    ]
    frames = [_backward_frame(order, running, heard, children, names, node_ids, root, None, edge_text, edge_order, 0)]
    number = 0
    for (node, held), (_, after_node) in pairwise(reached):
        _same_gradients(running, held, names)
        running = dict(held)
        for index, (parent, local) in enumerate(zip(node.parents, node.local_grads, strict=True)):
            number += 1
            before, grad = running[parent], running[node]
            product = grad * local
            running[parent] = before + product
            heard[parent] += 1
            step = _edge_step(
                node, index, names, local, grad, product, before, running[parent], heard[parent] == children[parent]
            )
            step["quiz"]["mistakes"] = _quiz_mistakes(node, index, names, top, step)
            step["gradients"] = _gradients(running, names)
            if number == len(edge_order):
                step["sentence"] += " The backward pass is complete: every gradient is final."
            steps.append(step)
            frames.append(
                _backward_frame(
                    order, running, heard, children, names, node_ids, root, (node, index), edge_text, edge_order, number
                )
            )
        _same_gradients(running, after_node, names)
    return steps, frames


def _same_gradients(recorded, held, names):
    """Raise AssertionError where the recording's sums are not the gradients the engine holds."""
    for node, grad in held.items():
        if recorded[node] != grad:
            raise AssertionError(
                f"explore.backward: the recorded gradient of {names[node]} is {recorded[node]!r}, "
                f"but backward() holds {grad!r}; the recording no longer follows Value.backward"
            )


def _value_graph(where, root, max_nodes):
    """The graph of a Value ``root``: order, names and the SVG ids of nodes and edges."""
    if not (hasattr(root, "local_grads") and hasattr(root, "data")) or hasattr(root, "grad_fn"):
        raise TypeError(
            f"{where}: expected a chainrule Value (a scalar graph), got {type(root).__name__}; "
            "the explorables step through scalar graphs only"
        )
    order = topological_order(root)
    if len(order) > max_nodes:
        raise GraphTooLargeError(
            f"{where}: the graph has {len(order)} values, more than max_nodes={max_nodes}; "
            f"step through a smaller graph (a sub-expression), or raise the limit with "
            f"max_nodes={len(order)}."
        )
    names = unique_names(trace_names(dfs_trace(root)))
    node_ids, edge_ids = dfs_element_ids(root, max_nodes=max_nodes)
    return order, names, node_ids, edge_ids


def _bar(name):
    """The global gradient of ``name`` in the bar notation: ``n̄``; a longer name is overlined whole."""
    mark = "\u0304" if len(name) == 1 else "\u0305"
    return "".join(char + mark for char in name)


def _operand(x):
    """A number inside a formula: a negative one in parentheses."""
    return f"({number_text(x)})" if x < 0 else number_text(x)


def _gradients(running, names):
    return {names[node]: grad for node, grad in running.items()}


def _forward_formula(node, names):
    """``p = a × b = 2 × (−0.5) = −1``, or ``a = 2`` for a leaf."""
    name, value = names[node], number_text(node.data)
    if not node.parents:
        return f"{name} = {value}"
    inputs = [names[parent] for parent in node.parents]
    numbers = [_operand(parent.data) for parent in node.parents]
    if node.op in _BINARY and len(inputs) == 2:
        symbol = _BINARY[node.op]
        return f"{name} = {inputs[0]} {symbol} {inputs[1]} = {numbers[0]} {symbol} {numbers[1]} = {value}"
    if node.op.startswith("**"):
        power = node.op[2:]
        return f"{name} = {inputs[0]}^{power} = {numbers[0]}^{power} = {value}"
    if node.op == "neg":
        return f"{name} = \u2212{inputs[0]} = \u2212{numbers[0]} = {value}"
    return f"{name} = {node.op}({inputs[0]}) = {node.op}({number_text(node.parents[0].data)}) = {value}"


def _local_rule(node, index, names):
    """The local gradient of an edge as a rule: ``∂p/∂a = b``; None when it is just a number."""
    child, parent = names[node], names[node.parents[index]]
    other = names[node.parents[1 - index]] if len(node.parents) == 2 else ""
    op = node.op
    if op == "*":
        return other
    if op == "/":
        return f"1/{other}" if index == 0 else f"\u2212{child}/{other}"
    if op == "tanh":
        return f"1 \u2212 {child}\u00b2"
    if op == "sigmoid":
        return f"{child}(1 \u2212 {child})"
    if op == "exp":
        return child
    if op == "log":
        return f"1/{parent}"
    if op == "relu":
        return f"1 if {parent} > 0, else 0"
    if op.startswith("**"):
        power = float(op[2:])
        return f"{op[2:]}\u00b7{parent}^{format_number(power - 1)}"
    return None


def _edge_step(node, index, names, local, grad, product, before, after, complete):
    """One step of the backward pass: ``node`` sends its gradient to its parent number ``index``."""
    child, parent = names[node], names[node.parents[index]]
    # Global gradients in the chapter's bar notation, local ones as derivatives.
    d_child, d_parent = _bar(child), _bar(parent)
    d_local = f"\u2202{child}/\u2202{parent}"
    rule = _local_rule(node, index, names)
    local_text = f"{d_local} = {rule} = {number_text(local)}" if rule else f"{d_local} = {number_text(local)}"
    formula = (
        f"{d_parent} += {d_child} \u00b7 {d_local} = {_operand(grad)} \u00d7 {_operand(local)} = {number_text(product)}"
    )
    masked = f"{d_parent} += {d_child} \u00b7 {d_local} = {_operand(grad)} \u00d7 ? = ?"
    op_words = _OP_WORDS.get(node.op, node.op)
    total = (
        f"{d_parent} = {number_text(product)}"
        if before == 0.0
        else f"{d_parent} = {number_text(before)} + {_operand(product)} = {number_text(after)}"
    )
    status = (
        f"{parent} has heard from every child: its gradient is complete."
        if complete
        else f"{parent} waits for its other children."
    )
    sentence = (
        f"{child} sends its gradient back to {parent} through {op_words}, whose local "
        f"gradient is {local_text}. {total}. {status}"
    )
    if before == 0.0:
        hidden = (
            f"{child} sends its gradient back to {parent} through {op_words}. Work out the "
            f"local gradient {d_local}, then guess the product {d_child} · {d_local}: "
            f"what {d_parent} gains."
        )
        quiz = {"answer": product, "formula": masked, "label": f"{d_child} \u00b7 {d_local}"}
    else:  # a second (or later) contribution: the quiz asks for the sum
        hidden = (
            f"{child} sends its gradient back to {parent} through {op_words}. {parent} already "
            f"holds {number_text(before)} from another edge. Work out the local gradient {d_local}, "
            f"then guess {d_parent} after this step: {number_text(before)} + {d_child} · {d_local}."
        )
        masked = f"{d_parent} = {number_text(before)} + {_operand(grad)} \u00d7 ? = ?"
        quiz = {"answer": after, "formula": masked, "label": f"{d_parent} after this step"}
    return {
        "event": "edge",
        "child": child,
        "parent": parent,
        "local": local,
        "child_grad": grad,
        "product": product,
        "before": before,
        "after": after,
        "formula": formula,
        "sentence": sentence,
        "quiz": {**quiz, "sentence": hidden},
    }


def _quiz_mistakes(node, index, names, top, step):
    """``[[number, words, name], ...]``: each number a slip gives for the step's quiz, named as the drills name it.

    The slips: those of the edge's local gradient (:func:`.slips.local_slips`, as the drill of a local
    gradient has them: a product's factors swapped, the sign, ...), each times the child's gradient and
    added to what the parent held; at a fan-out node also the new term alone, or the held value times it,
    where the two must be added. A number is kept only where the drills' matcher
    (:func:`chainrule_course.exercises.mistakes.named_slip`) names it: one slip alone gives it.
    """
    child, parent = names[node], names[node.parents[index]]
    d_child, d_local = _bar(child), partial(child, parent)
    before, grad, product, answer = step["before"], step["child_grad"], step["product"], step["quiz"]["answer"]
    rule = _local_rule(node, index, names) or number_text(step["local"])
    slips = {
        f"your {d_local} is wrong. {words}": (name, before + grad * wrong)
        for words, (name, wrong) in local_slips(node, index, rule, names.get, top).items()
    }
    if before != 0.0:
        slips[
            f"that is only what this edge adds, {d_child} \u00b7 {d_local}. {parent} already holds "
            f"{number_text(before)}, and the terms add: {number_text(before)} + that."
        ] = ("a contribution missing", product)
        slips["that multiplies the two terms; a node adds its children's terms."] = (
            "product for sum",
            before * product,
        )
    mistakes: dict[float, list] = {}
    for _, value in slips.values():
        found = named_slip(answer, value, {words: v for words, (_, v) in slips.items()}, lambda w: slips[w][0], close)
        if found and not any(close(value, known) for known in mistakes):
            mistakes[value] = [value, *found]
    return list(mistakes.values())


def _forward_frame(order, node, known, names, node_ids, edge_ids, root, number):
    """The picture after computing ``node``: computed and pending nodes, the edges into it."""
    classes, texts = {}, {}
    for other in order:
        key = node_ids[other]
        classes[key] = "cr-computed" if other in known else "cr-pending"
        texts[f"text-value-{key[5:]}"] = value_text(other.data) if other in known else "data ?"
    edges = [edge for parent in dict.fromkeys(node.parents) for edge in edge_ids[(parent, node)]]
    pending = [names[other] for other in order if other not in known]
    alt = (
        f"The forward pass of {names[root]}, step {number + 1} of {len(order)}: "
        f"{_forward_formula(node, names)}; not computed yet: {joined(pending) or 'none'}."
    )
    return {"nodes": classes, "current": node_ids[node], "edges": edges, "texts": texts, "alt": alt}


def _backward_frame(order, running, heard, children, names, node_ids, root, edge, edge_text, edge_order, number):
    """The picture after a step of the backward pass (``edge`` is (child, index), None at the start)."""
    classes, texts = {}, {}
    for node in order:
        key = node_ids[node]
        if node is root or (children[node] and heard[node] == children[node]):
            classes[key] = "cr-complete"
        elif heard[node]:
            classes[key] = "cr-partial"
        else:
            classes[key] = "cr-waiting"
        texts[f"text-grad-{key[5:]}"] = grad_text(running[node]) if node is root or heard[node] else "grad 0"
    frame = {"nodes": classes, "texts": texts, "edges": []}
    later = [edge_text[pair] for pair in edge_order[number:]]
    frame["later"] = [f"text-local-{edge_id[5:]}" for edge_id in later]
    if edge is None:
        frame["current"] = node_ids[root]
        frame["alt"] = (
            f"The backward pass of {names[root]} at its start: the root's gradient is 1, every other gradient 0."
        )
        return frame
    node, index = edge
    parent = node.parents[index]
    frame.update(current=node_ids[node], target=node_ids[parent], edges=[edge_text[edge]])
    frame["alt"] = (
        f"The backward pass of {names[root]}, step {number + 1} of {len(edge_order) + 1}: "
        f"{names[node]} sends its gradient to {names[parent]}; gradients so far: "
        + ", ".join(f"{names[n]} {number_text(running[n])}" for n in reversed(order))
        + "."
    )
    return frame


def _value_figure(order, names, node_ids, edge_ids, texts, classes, rankdir, with_grad):
    """The graph as boxes of label, value (and gradient), with an id on every node and edge.

    ``texts[node]`` lists the node's value and gradient rows as the final state shows
    them, then any other text a step writes into them: each row is made wide enough for
    the longest, so the box never has to grow. With ``with_grad`` the edges point back to
    the parents and carry the local gradients, as in
    :func:`chainrule.figures.draw.draw_gradient_flow`.
    """
    dot = new_digraph(rankdir)
    dot.attr(nodesep="0.25", ranksep="0.45")
    dot_ids = numbered_ids(order)
    widest = max(len(text) for node in order for text in texts[node])
    width = round(10 + 6.3 * widest)  # points: the widest row of any box, at 12 pt, plus the padding
    for node in order:
        header = f"<B>{escaped(names[node])}</B>"
        if node.op:
            header += f' <FONT COLOR="{MUTED}">({escaped(op_symbol(node.op))})</FONT>'
        rows = [header, escaped(texts[node][0])]
        if with_grad:
            rows.append(f'<FONT COLOR="{GLOBAL_GRAD_COLOR}"><B>{escaped(texts[node][1])}</B></FONT>')
        body = "".join(f'<TR><TD ALIGN="LEFT" WIDTH="{width}">{row}</TD></TR>' for row in rows)
        label = (
            f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" '
            f'BGCOLOR="white" COLOR="{INK}">{body}</TABLE>>'
        )
        dot.node(dot_ids[node], label, shape="plain", id=node_ids[node], **{"class": classes[node_ids[node]]})
    for node in order:
        seen: dict = {}
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            number = seen[parent] = seen.get(parent, -1) + 1
            attributes = {"id": edge_ids[(parent, node)][number]}
            if with_grad:
                attributes.update(
                    dir="back",
                    color=LOCAL_GRAD_COLOR,
                    fontcolor=LOCAL_GRAD_COLOR,
                    style="dashed",
                    label=f"<{escaped(number_text(local))}>",
                )
            dot.edge(dot_ids[parent], dot_ids[node], **attributes)
    return Figure(dot, "")

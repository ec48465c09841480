"""The engine chapter's drills: what ``backward()`` does when it is called twice, or on an inner node.

Both ask about a graph of :mod:`.graphs` and take their answers from
:meth:`chainrule.value.Value.backward` itself:

* ``twice``: a leaf's ``.grad`` after ``L.backward()`` is called twice with no
  ``zero_grad()`` between; the named mistakes are one call's gradient, and what the
  chapter's ``Scalar`` engine gives, whose second call sets ``L.grad = 1`` again (as
  micrograd's ``backward()`` does) and passes on everything each node holds, the first
  call's gradients included (the chapter's third way a small engine fails);
* ``inner``: the nodes a ``backward()`` called on an inner node, rather than on ``L``, sends a
  gradient to (the engine's own search from that node); the named mistakes are the nodes
  after it, and its inputs alone.
"""

import random

from chainrule.graph import topological_order

from .graphs import LEVELS, factor_text, make_graph, number_text
from .problems import Mistake, Problem, distinct
from .registry import drill

__all__ = ["inner", "twice"]


def _one_call(graph):
    root = graph.root
    root.zero_grad()
    root.backward()
    return {node.label: node.grad for node in graph.order}


def _kept_and_passed_on(graph, first):
    """Every node's .grad after a second call of the chapter's ``Scalar.backward()``: it sets ``L.grad = 1``
    (it does not add 1, as micrograd's does not) and passes on all that each node holds, the first call's
    gradients included."""
    grads = dict(first)
    grads["L"] = 1.0
    for node in reversed(graph.order):
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            grads[parent.label] += grads[node.label] * local
    return grads


@drill("twice", "engine", "the .grad after two backward() calls", LEVELS, "number")
def twice(level, seed):
    """``x.grad`` after two calls of ``L.backward()``, as the engine stores it."""
    graph = make_graph(seed, level)
    rng = random.Random(f"chainrule-drill-twice:{level}:{seed}")
    first = _one_call(graph)
    graph.root.backward()  # the second call, with no zero_grad() between
    second = {node.label: node.grad for node in graph.order}
    naive = _kept_and_passed_on(graph, first)
    return distinct(lambda: _twice(graph, rng.choice(graph.leaves()).label, first, second, naive))


def _twice(graph, name, first, second, naive):
    answer = second[name]
    return Problem(
        "twice",
        f"After L.zero_grad(), L.backward() is called twice, with no zero_grad() between "
        f"the calls. What is {name}.grad then?",
        graph.description(),
        answer,
        [
            f"One call stores \u2202L/\u2202{name} in {name}.grad. What does the second call do "
            "with what the first left there?",
            f"One call gives \u2202L/\u2202{name} = {number_text(first[name])}. What does a second call add to it?",
        ],
        [
            f"The first call leaves {name}.grad = \u2202L/\u2202{name} = {number_text(first[name])}.",
            "The second call sets aside what the inner nodes kept, runs the same pass again, and "
            f"adds {number_text(first[name])} to what {name}.grad holds.",
            f"So {name}.grad = 2 \u00d7 {factor_text(first[name])} = {number_text(answer)}: "
            "gradients accumulate until zero_grad().",
        ],
        [
            Mistake(
                first[name],
                f"That is what one call stores. The second call adds to {name}.grad, "
                "it does not start again from 0: only zero_grad() does that.",
                "one call",
            ),
            Mistake(
                naive[name],
                "That is what the chapter's Scalar engine gives. Its second call sets L.grad = 1 again, "
                "as micrograd's backward() does, but passes on all that each node holds, the first "
                f"call's gradient included, so {name} gets that gradient again through every node between "
                "it and L. chainrule.Value passes on only each call's own gradients, so each call adds "
                f"exactly \u2202L/\u2202{name}.",
                "inner gradients passed on again",
            ),
        ],
        words="The graph in words:",
        graph=graph.root,
        walk=graph.root,
        data={"leaf": name},
    )


def _listed(names):
    """``"e"``, ``"e and f"``, ``"a, e and f"``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _users(graph, node):
    """Every node that depends on ``node``: those after it on some path to L."""
    after = []
    for candidate in graph.results():
        if candidate is not node and node in topological_order(candidate):
            after.append(candidate.label)
    return after


@drill("inner", "engine", "a backward() from an inner node", LEVELS, "names")
def inner(level, seed):
    """The nodes ``e.backward()`` gives a gradient, for an inner node e."""
    graph = make_graph(seed, level)
    rng = random.Random(f"chainrule-drill-inner:{level}:{seed}")
    inner_nodes = [n for n in graph.results() if n is not graph.root]
    deep = [n for n in inner_nodes if any(p.parents for p in n.parents)]
    return distinct(lambda: _inner(graph, rng.choice(deep or inner_nodes)))


def _inner(graph, node):
    name = node.label
    # The nodes the pass visits: the engine's own search from the node (a gradient sent may add up to 0).
    answer = sorted(n.label for n in topological_order(node) if n is not node)
    inputs = sorted({p.label for p in node.parents})
    after = _users(graph, node)
    mistakes = [
        Mistake(
            sorted(set(answer) | set(after)),
            f"{_listed(after)} {'comes' if len(after) == 1 else 'come'} after {name}: "
            f"{name}.backward() sends gradients only to what {name} was computed from.",
            "nodes after it",
        ),
        Mistake(
            after,
            f"Those are the nodes that use {name}. The backward pass goes the other way: "
            f"to {name}'s inputs, and theirs.",
            "nodes after it",
        ),
    ]
    if set(inputs) != set(answer):
        mistakes.append(
            Mistake(
                inputs,
                f"Those are {name}'s inputs. The pass does not stop there: it goes on to their inputs.",
                "inputs only",
            )
        )
    return Problem(
        "inner",
        f"After L.zero_grad(), {name}.backward() is called on the inner node {name}, not on L. "
        f"Which nodes other than {name} does the pass send a gradient to? List them, in any order.",
        graph.description(),
        answer,
        [
            f"{graph.formula(node)}. The pass starts at {name} and follows edges back to inputs.",
            f"{name}'s inputs are {_listed(inputs)}; from each input that was computed, go on to its inputs.",
        ],
        [
            f"{name}.backward() sets {name}.grad = 1 and sends gradients back along the edges into {name}.",
            f"Those reach {', '.join(answer)}: every node {name} was computed from (a gradient may add up to 0 "
            "there; it is still sent).",
            f"The nodes after {name} ({_listed(after)}) get nothing: {name} does not depend on them.",
        ],
        mistakes,
        form="names",
        known=graph.nodes,
        words="The graph in words:",
        graph=graph.root,
        walk=node,
        data={"node": name},
    )

"""The kinds of drill question: each asks one thing about a graph and knows its answer.

Three kinds practise the graph chapter and four the backward chapter:

* ``finish``: the order in which the chapter's depth-first search finishes the nodes;
* ``topological``: any valid topological order;
* ``reach``: the nodes computed from a given leaf (a path of edges leads to them);
* ``value``: a node's forward value;
* ``local``: the local gradient on one edge;
* ``adjoint``: a node's global gradient (its adjoint), at a node that feeds two or more
  operations where the graph has one;
* ``adjoints``: every global gradient of the graph, in backward order.

:func:`question` builds a :class:`Question`; its :meth:`~Question.check` reads what the
reader typed and returns a verdict ``{"right": bool, "message": str, "mistake": str or
None}``. The answers are the engine's: :func:`chainrule.graph.topological_order` and
:func:`chainrule.graph.depth_first_events` for the orders, ``.data`` and ``local_grads``
for values and local gradients, and the ``.grad`` that ``backward()`` stores.

A wrong number is named by the checks' generator (:mod:`chainrule_course.exercises.mistakes`): the
slips a reader makes (another node's value, the global gradient for the local one, a contribution
left out, the product for the sum, ...) are the variants of the answer, and one is named only when
no slip of another name gives the same number on this graph.
"""

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from chainrule.graph import VISIT, depth_first_events
from chainrule_course.exercises.mistakes import named_slip
from chainrule_course.explore.slips import local_slips

from .graphs import LEVELS, Graph, factor_text, make_graph, number_text
from .reading import ReadingError, close, read_names, read_number, read_numbers
from .registry import drill

__all__ = ["BUILDERS", "Question", "graph_drill", "question"]

#: Each kind's builder, ``builder(graph, rng) -> Question``, by name: :func:`graph_drill` fills it.
BUILDERS: dict[str, Callable[[Graph, random.Random], "Question"]] = {}


def graph_drill(name, chapter, title, form):
    """Declare the decorated ``builder(graph, rng)`` as the drill kind ``name``, asked on the graphs of
    :data:`~.graphs.LEVELS` (:func:`.registry.drill`); the kinds of a chapter are declared easiest first."""

    def register(builder):
        def build(level, seed):
            return question(name, level, seed)

        BUILDERS[name] = builder
        drill(name, chapter, title, LEVELS, form)(build)
        return builder

    return register


@dataclass
class Question:
    """One drill: the graph, what is asked, the expected answer and the hints."""

    kind: str
    graph: Graph
    prompt: str
    answer: object  # a number, a list of names or a list of numbers
    hints: list = field(default_factory=list)
    target: str = ""  # the node (or the edge "c->f") the question is about

    def check(self, text):
        """The verdict on what the reader typed."""
        try:
            return CHECKS[self.kind](self, text)
        except ReadingError as error:
            return verdict(False, f"{error}.", "unreadable")

    def slip_answers(self):
        """The answers the slips a reader makes give on this graph (each a number or a list, as typed)."""
        return SLIPS[self.kind](self)


def verdict(right, message, mistake=None):
    """A verdict as the page shows it; a wrong one's message opens with no verdict word (the page says Not right)."""
    return {"right": right, "message": message, "mistake": mistake}


def question(kind, level, seed):
    """The question of ``kind`` on the graph of ``(seed, level)``."""
    if kind not in BUILDERS:
        raise ValueError(f"drills.question: kind must be one of {', '.join(BUILDERS)}, got {kind!r}")
    graph = make_graph(seed, level)
    graph.root.zero_grad()
    graph.root.backward()
    rng = random.Random(f"chainrule-drill-question:{kind}:{level}:{seed}")
    return BUILDERS[kind](graph, rng)


# --------------------------------------------------------------------------- the graph chapter


@graph_drill("finish", "graph", "the order the search finishes the nodes", "names")
def _finish(graph, rng):
    first = graph.order[0].label
    start = graph.root.parents[0].label
    return Question(
        "finish",
        graph,
        "The chapter's depth-first search starts at L and takes each node's inputs in the order "
        "they are written. In what order does it finish the nodes? Type their names, the first "
        "to finish first.",
        [node.label for node in graph.order],
        [
            f"From L the search goes to L's first input, {start}, before its second. A leaf "
            "finishes as soon as the search reaches it; any other node when all its inputs have.",
            f"The first node to finish is {first}.",
        ],
    )


@graph_drill("topological", "graph", "a topological order", "names")
def _topological(graph, rng):
    leaves = ", ".join(sorted(leaf.label for leaf in graph.leaves()))
    node = rng.choice(graph.results())
    inputs = " and ".join(sorted({p.label for p in node.parents}))
    return Question(
        "topological",
        graph,
        "Give a topological order of the graph: every node after all of its inputs. Any such order is right.",
        [n.label for n in graph.order],
        [f"The leaves {leaves} have no inputs: they can come first.", f"{node.label} can come only after {inputs}."],
    )


def _reached(graph, leaf):
    reached, frontier = [], [leaf]
    while frontier:
        node = frontier.pop()
        for child, _ in graph.uses(node):
            if child not in reached:
                reached.append(child)
                frontier.append(child)
    return reached


@graph_drill("reach", "graph", "the nodes computed from a leaf", "names")
def _reach(graph, rng):
    leaf = rng.choice(graph.leaves())
    users = sorted({child.label for child, _ in graph.uses(leaf)})
    return Question(
        "reach",
        graph,
        f"Which nodes are computed from {leaf.label}, directly or through other nodes (a path of edges leads "
        f"from {leaf.label} to them)? List them all (not {leaf.label} itself), in any order.",
        sorted(n.label for n in _reached(graph, leaf)),
        [
            f"Follow the edges out of {leaf.label}: which operations use it?",
            f"{leaf.label} is used by {' and '.join(users)}. Then follow the edges out of those.",
        ],
        leaf.label,
    )


def _order_mistake(q, names, valid_only):
    """The verdict on an order of the nodes (``valid_only``: any topological order is right)."""
    graph = q.graph
    missing = [n for n in q.answer if n not in names]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if missing or repeated:
        what = f"missing: {', '.join(missing)}" if missing else f"listed twice: {', '.join(repeated)}"
        return verdict(False, f"Every node once, please ({what}).", "not every node once")
    if names == q.answer:
        return verdict(True, f"Right: {', '.join(names)}.")
    visits = [node.label for event, node in depth_first_events(graph.root) if event == VISIT]
    if not valid_only and (names == visits[::-1] or names == visits):  # before "reversed": a visit order is one
        return verdict(
            False,
            "That is the order in which the search visits (reaches) the nodes. A node finishes "
            "only when all of its inputs have.",
            "visit order",
        )
    position = {name: i for i, name in enumerate(names)}
    early = [(p.label, n.label) for n in graph.results() for p in n.parents if position[p.label] > position[n.label]]
    late = [(p.label, n.label) for n in graph.results() for p in n.parents if position[p.label] < position[n.label]]
    if early and not late:
        return verdict(False, "That is a backward order: every node comes before its inputs. Reverse it.", "reversed")
    if early:
        parent, child = early[0]
        return verdict(False, f"{child} comes before its input {parent}.", "node before its input")
    if valid_only:
        return verdict(True, f"Right: {', '.join(names)} is a topological order.")
    return verdict(
        False,
        "That is a valid topological order, but not the one this search finds: it takes "
        "each node's inputs in the order they are written, the first one first.",
        "another topological order",
    )


def _check_finish(q, text):
    return _order_mistake(q, read_names(text, q.graph.nodes), valid_only=False)


def _check_topological(q, text):
    return _order_mistake(q, read_names(text, q.graph.nodes), valid_only=True)


def _check_reach(q, text):
    names = [n for n in read_names(text, q.graph.nodes) if n != q.target]
    missing = [n for n in q.answer if n not in names]
    extra = sorted({n for n in names if n not in q.answer})
    if not missing and not extra:
        return verdict(True, f"Right: {', '.join(q.answer)}.")
    if extra:
        return verdict(False, f"{extra[0]} does not depend on {q.target}.", "a node it does not reach")
    node = q.graph.nodes[missing[0]]
    via = sorted({p.label for p in node.parents if p.label == q.target or p.label in q.answer})
    return verdict(False, f"{missing[0]} is missing: it uses {' and '.join(via)}.", "a node missing")


# --------------------------------------------------------------------------- the backward chapter


@graph_drill("value", "backward", "a node's value", "number")
def _value(graph, rng):
    node = rng.choice(graph.results())
    return Question(
        "value",
        graph,
        f"What is the value of {node.label}?",
        node.data,
        [
            f"{graph.formula(node)}. What are the values of its inputs?",
            f"{graph.formula(node, numbers=True)}.",
        ],
        node.label,
    )


def _check_value(q, text):
    guess = read_number(text)
    if close(guess, q.answer):
        return verdict(True, f"Right: {q.target} = {number_text(q.answer)}.")
    # nodes of equal values are one slip: which of them was meant, the number cannot tell
    alike: dict[float, list[str]] = {}
    for other in q.graph.order:
        if other.label != q.target:
            alike.setdefault(other.data, []).append(other.label)
    others = {f"That is the value of {' and of '.join(names)}.": value for value, names in alike.items()}
    found = _slip(q.answer, guess, others, lambda words: "another node's value")
    return found or verdict(False, f"Work out {q.target}'s inputs first.")


def _d(top, bottom):
    """``∂top/∂bottom``."""
    return f"\u2202{top}/\u2202{bottom}"


def _local_rule(node, index):
    """The local gradient ∂node/∂(its input ``index``) as a formula in the nodes' names."""
    a = node.parents[0].label
    b = node.parents[1].label if len(node.parents) == 2 else ""
    rules = {
        "+": ("1", "1"),
        "-": ("1", "\u22121"),
        "*": (b, a),
        "/": (f"1/{b}", f"\u2212{a}/{b}\u00b2"),
        "tanh": (f"1 \u2212 {node.label}\u00b2",),
        "exp": (node.label,),
        "log": (f"1/{a}",),
    }
    return rules[node.op][index]


@graph_drill("local", "backward", "an edge's local gradient", "number")
def _local(graph, rng):
    edges = [(child, i) for child in graph.results() for i in range(len(child.parents))]
    # Not into L, where the local gradient is also the global one; not into a * a.
    edges = [(c, i) for c, i in edges if c is not graph.root and len(set(map(id, c.parents))) == len(c.parents)]
    child, index = rng.choice(edges)
    parent = child.parents[index]
    rule = _local_rule(child, index)
    return Question(
        "local",
        graph,
        f"What is the local gradient \u2202{child.label}/\u2202{parent.label} on the edge "
        f"{parent.label} \u2192 {child.label}?",
        child.local_grads[index],
        [
            f"{graph.formula(child)}. Hold {child.label}'s other inputs fixed: how does it change with {parent.label}?",
            f"\u2202{child.label}/\u2202{parent.label} = {rule}.",
        ],
        f"{parent.label}->{child.label}",
    )


def _check_local(q, text):
    guess = read_number(text)
    parent_name, child_name = q.target.split("->")
    child = q.graph.nodes[child_name]
    if close(guess, q.answer):
        return verdict(True, f"Right: \u2202{child_name}/\u2202{parent_name} = {number_text(q.answer)}.")
    slips = _local_slips(q)
    found = _slip(q.answer, guess, {w: v for w, (_, v) in slips.items()}, lambda w: slips[w][0])
    return found or verdict(False, f"Look up the rule for {q.graph.formula(child)} in the chapter's table.")


def _local_slips(q):
    """What each slip a reader makes gives for the edge's local gradient, by its words, with its name: the
    slips the backward widget's Predict mode names too (:func:`chainrule_course.explore.slips.local_slips`)."""
    parent_name, child_name = q.target.split("->")
    parent, child = q.graph.nodes[parent_name], q.graph.nodes[child_name]
    index = next(i for i, p in enumerate(child.parents) if p is parent)
    return local_slips(child, index, _local_rule(child, index), lambda node: node.label, q.graph.root.label)


def _contributions(graph, node):
    """``(child, index, contribution)`` for each edge out of ``node``: ∂L/∂child · ∂child/∂node."""
    return [(child, i, child.grad * child.local_grads[i]) for child, i in graph.uses(node)]


def _users_text(users):
    """``"f twice and L"``: the children of a node's edges, each once."""
    once = list(dict.fromkeys(users))
    return " and ".join(f"{name} twice" if users.count(name) == 2 else name for name in once)


def _adjoint_hints(graph, node):
    terms = _contributions(graph, node)
    users = [child.label for child, _, _ in terms]
    if len(terms) == 1:
        chain = f"{_d('L', node.label)} = {_d('L', users[0])} \u00b7 {_d(users[0], node.label)}"
        first = f"{node.label} feeds only {users[0]}: {chain}."
    elif len(set(users)) == 1:
        first = f"{users[0]} uses {node.label} twice: what does each use contribute?"
    else:
        first = f"{node.label} feeds {_users_text(users)}: what does each contribute?"
    shown = [f"{factor_text(child.grad)} \u00d7 {factor_text(child.local_grads[i])}" for child, i, _ in terms]
    shown[-1] = f"{factor_text(terms[-1][0].grad)} \u00d7 ___"
    second = f"\u2202L/\u2202{node.label} = {' + '.join(shown)}."
    return [first, second]


@graph_drill("adjoint", "backward", "a node's global gradient", "number")
def _adjoint(graph, rng):
    candidates = [n for n in graph.order if n is not graph.root]
    fanned = [n for n in candidates if len(graph.uses(n)) >= 2]
    node = rng.choice(fanned or candidates)
    return Question(
        "adjoint",
        graph,
        f"What is the global gradient \u2202L/\u2202{node.label}?",
        node.grad,
        _adjoint_hints(graph, node),
        node.label,
    )


def _adjoint_slips(graph, node):
    """What each slip a reader makes gives for ∂L/∂node, by its words, with its name."""
    terms = _contributions(graph, node)
    users = [child.label for child, _, _ in terms]
    slips = {}
    if len(terms) >= 2:
        product = 1.0
        for _, _, term in terms:
            product *= term
        said = f"You multiplied the contributions. {node.label} feeds {_users_text(users)}: their contributions add."
        slips[said] = ("product for sum", product)
        for j, (child, _, _) in enumerate(terms):
            rest = sum(term for k, (_, _, term) in enumerate(terms) if k != j)
            twice = users.count(child.label) > 1
            said = (
                f"{child.label} uses {node.label} twice, and each use contributes."
                if twice
                else (f"That leaves out what {child.label} contributes.")
            )
            slips[said] = ("a contribution missing", rest)
        said = "You added the local gradients; each must first be multiplied by its child's global gradient."
        slips[said] = ("local for global", sum(child.local_grads[i] for child, i, _ in terms))
    for child, i, _ in terms:
        if close(child.grad, 1.0):
            continue  # where ∂L/∂child is 1, the local gradient is that edge's contribution
        said = (
            f"That is the local gradient \u2202{child.label}/\u2202{node.label}. The global gradient "
            f"multiplies it by \u2202L/\u2202{child.label}."
        )
        slips.setdefault(said, ("local for global", child.local_grads[i]))
    return slips


def _adjoint_mistake(graph, node, guess):
    """The verdict that names the one slip giving ``guess`` for ∂L/∂node, or None."""
    slips = _adjoint_slips(graph, node)
    return _slip(node.grad, guess, {w: v for w, (_, v) in slips.items()}, lambda w: slips[w][0])


def _slip(answer, guess, slips, name):
    """The verdict naming the one mistake of ``slips`` (its words -> what it gives; ``name(words)`` its name)
    that ``guess`` fits (:func:`chainrule_course.exercises.mistakes.named_slip`), or None."""
    found = named_slip(answer, guess, slips, name, close)
    return None if found is None else verdict(False, *found)


def _check_adjoint(q, text):
    guess = read_number(text)
    node = q.graph.nodes[q.target]
    if close(guess, q.answer):
        return verdict(True, f"Right: \u2202L/\u2202{q.target} = {number_text(q.answer)}.")
    found = _adjoint_mistake(q.graph, node, guess)
    return found or verdict(False, "Find every edge out of the node, and what each contributes.")


@graph_drill("adjoints", "backward", "every global gradient, in backward order", "numbers")
def _adjoints(graph, rng):
    backward = graph.order[::-1]
    names = ", ".join(node.label for node in backward)
    second = backward[1]
    return Question(
        "adjoints",
        graph,
        f"Give every global gradient \u2202L/\u2202n, in backward order: {names}. Separate them with commas.",
        [node.grad for node in backward],
        [
            "Start with \u2202L/\u2202L = 1 and go backwards: a node's gradient is complete once every "
            "node that uses it is done.",
            _adjoint_hints(graph, second)[1],
        ],
        names,
    )


def _check_adjoints(q, text):
    backward = q.graph.order[::-1]
    guesses = read_numbers(text, len(backward))
    wrong = [(node, g) for node, g in zip(backward, guesses, strict=True) if not close(g, node.grad)]
    if not wrong:
        return verdict(True, "Right: every gradient.")
    if all(close(g, node.grad) for node, g in zip(q.graph.order, guesses, strict=True)):
        return verdict(
            False, "Those are in forward order; the question lists the nodes from L back to the leaves.", "reversed"
        )
    node, guess = wrong[0]
    count = f"{len(wrong)} of {len(backward)} are wrong; the first is \u2202L/\u2202{node.label}"
    if node is q.graph.root:
        return verdict(False, f"{count}: \u2202L/\u2202L is 1, where the backward pass starts.", "the seed")
    found = _adjoint_mistake(q.graph, node, guess)
    if found:
        return verdict(False, f"{count}. {found['message']}", found["mistake"])
    return verdict(False, f"{count}.")


def _order_slips(q):
    visits = [node.label for event, node in depth_first_events(q.graph.root) if event == VISIT]
    return [visits, visits[::-1], q.answer[::-1]]


def _reach_slips(q):
    others = [name for name in q.graph.nodes if name != q.target and name not in q.answer]
    return [q.answer[1:]] + [q.answer + [name] for name in others[:1]]


def _value_slips(q):
    return [node.data for node in q.graph.order if node.label != q.target]


def _adjoints_slips(q):
    return [[node.grad for node in q.graph.order]]


SLIPS = {
    "finish": _order_slips,
    "topological": lambda q: [q.answer[::-1]],
    "reach": _reach_slips,
    "value": _value_slips,
    "local": lambda q: [value for _, value in _local_slips(q).values()],
    "adjoint": lambda q: [value for _, value in _adjoint_slips(q.graph, q.graph.nodes[q.target]).values()],
    "adjoints": _adjoints_slips,
}
CHECKS = {
    "finish": _check_finish,
    "topological": _check_topological,
    "reach": _check_reach,
    "value": _check_value,
    "local": _check_local,
    "adjoint": _check_adjoint,
    "adjoints": _check_adjoints,
}

"""The check of the graph chapter's exercise: ``dfs_order_with_stack(root, parents)``, a depth-first search
written with a stack, must give the order of the chapter's recursive search.

The check calls the answer on every graph it tries (the exercise's and more) before it judges
any: the reference order is a derivation (:class:`~.mistakes.Derivation`), and a mistake (parents
taken last first or sorted, a pre-order, a breadth-first search, the order reversed) is named only
when it gives the answer's order on every graph. The public graphs list some parents out of
sorted order, as the hidden ones do. Pure Python: it runs in the page's Python too.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Mapping, Sequence

from chainrule.graph import VISIT, depth_first_events, topological_order

from ..grading.contract import allowed, seeded
from .answers import AnswerError, require_answer
from .calling import call
from .mistakes import Derivation, Named, Slips

# --------------------------------------------------------------------------- graph: the order of a DFS

#: The graph of the graph chapter: each node's parents (inputs), in the order the search visits them.
EXAMPLE_GRAPH = {"a": [], "b": [], "x": [], "c": ["a", "b"], "d": ["x", "c"], "e": ["c"], "f": ["d"]}
#: Two paths lead to a: a search must not list it twice. d's parents are listed out of sorted order.
DIAMOND = {"a": [], "b": ["a"], "c": ["a"], "d": ["c", "b"]}
#: Longer than Python's recursion limit (1,000 frames by default): a recursive search fails on it.
#: Fixed, not read from sys.getrecursionlimit(): the grader replays the calls by their inputs.
CHAIN_LENGTH = 5_000


def _brief(order: Sequence) -> str:
    """An order as a message shows it: all of it when short, else its ends."""
    order = list(order)
    if len(order) <= 12:
        return str(order)
    return f"[{', '.join(map(repr, order[:4]))}, ... {len(order) - 8} more ..., {', '.join(map(repr, order[-4:]))}]"


def _breadth_first(parents_of: Callable, root: str) -> list:
    """The order in which a breadth-first search (a queue) first reaches the nodes, root first."""
    order, seen = [root], {root}
    for node in order:  # the list is the queue: it grows while the loop walks it
        for parent in parents_of(node):
            if parent not in seen:
                seen.add(parent)
                order.append(parent)
    return order


REVERSED = "the order is reversed"
LAST_FIRST = "a search that takes each node's parents last first"
SORTED = "a search that takes each node's parents in sorted order"
PRE_ORDER = "the order in which the search first visits the nodes (pre-order)"
BFS_REVERSED = "a breadth-first search (a queue), reversed"
BFS = "the order in which a breadth-first search (a queue) first reaches the nodes"
#: How to mend each mistake ({root} is the graph's root).
MENDS = {
    REVERSED: "a topological order lists every node after its inputs, leaves first and {root} last; "
    "the backward pass walks it in reverse",
    LAST_FIRST: "pushing all of a node's parents on a stack and popping them takes the last one first; "
    "visit them in the order they are listed",
    SORTED: "the parents are visited in the order each node lists them, not sorted by name",
    PRE_ORDER: "a node joins the order when it finishes, after all of its parents, not when it is first reached",
    BFS_REVERSED: "a queue takes the nodes level by level, and the reverse of that can put a node before an input "
    "that a longer path reaches; search depth-first instead, always going on from the last node of the path",
    BFS: "search depth-first instead, always going on from the last node of the path, and add a node to the "
    "order when it finishes, after all of its parents",
}


def dfs_derivation(graph: tuple[Mapping[str, Sequence[str]], str], at: Slips) -> list:
    """The depth-first topological order of (parents, root), with the slips of each step: the parents'
    order, the kind of search, and the direction of the result."""
    parents, root = graph
    parents_of = at.choose(
        "the parents' order",
        parents.__getitem__,
        {
            LAST_FIRST: lambda: lambda node: list(reversed(parents[node])),
            SORTED: lambda: lambda node: sorted(parents[node]),
        },
    )
    order = at.choose(
        "the search",
        topological_order(root, parents_of=parents_of),
        {
            PRE_ORDER: lambda: [node for event, node in depth_first_events(root, parents_of) if event == VISIT],
            BFS_REVERSED: lambda: _breadth_first(parents_of, root)[::-1],
            BFS: lambda: _breadth_first(parents_of, root),
        },
    )
    return at.choose("the direction", order, {REVERSED: lambda: order[::-1]})


DFS = Derivation(dfs_derivation)
#: On one graph alone, a pair of slips fits too many orders by chance: only one is named there.
DFS_ALONE = Derivation(dfs_derivation, depth=1)


def _as_order(answer) -> list | None:
    """An answer as the list of nodes it holds, or None when it is not a sequence of them."""
    if answer is None or isinstance(answer, (str, bytes)) or not isinstance(answer, Sequence):
        return None
    return list(answer)


def same_order(answer, result) -> bool:
    """Whether ``answer`` is the order ``result``, as a list or a tuple."""
    return _as_order(answer) == result


def _named_words(description: str, root: str) -> str:
    """A named mistake and how to mend each of its slips."""
    slips = description.split(", and ")
    return f"{description}: " + "; ".join(MENDS[slip].format(root=root) for slip in slips)


class _Alone(enum.Enum):
    """The default of ``named``: check_topological_order's own graph names the mistake, a check of one input."""

    ALONE = "alone"


_ALONE = _Alone.ALONE


def check_topological_order(
    order, parents: Mapping[str, Sequence[str]], root: str, title: str = "", named: Named | None | _Alone = _ALONE
) -> None:
    """``order`` must be the depth-first topological order of the nodes ``root`` depends on (leaves first).

    ``parents`` maps each node to its inputs, in the order the search visits them. ``named`` is the
    mistake the answer makes on every graph its check tried (:meth:`~.mistakes.Derivation.mistake`),
    or None; called alone, the mistake is read from this graph, all of them when several give the order.
    """
    expected = topological_order(root, parents_of=lambda node: parents[node])
    name = "order"
    require_answer(name, order)
    head = f"{title}: " if title else ""
    if _as_order(order) is None:
        example = f"a list of node names such as {expected[:2]}"
        raise AnswerError(name, f"{head}the order should be {example}, got {order!r:.80}.")
    order = list(order)
    if order == expected:
        return
    alone = named is _ALONE
    if named is _ALONE:
        named = DFS_ALONE.mistake([(parents, root)], [order], same_order)
    said = f"Expected {_brief(expected)}, received {_brief(order)}."
    found = list(named.descriptions) if named else []
    if found == [REVERSED]:  # what the order is, more than how it came about
        mend = MENDS[REVERSED].format(root=root)
        raise AnswerError(name, f"{head}{REVERSED}: {_brief(order)}. {mend[0].upper()}{mend[1:]}.", REVERSED)
    if len(found) == 1:
        raise AnswerError(name, f"{head}this is {_named_words(found[0], root)}. {said}", found[0])
    if found:
        listed = "; or ".join(f"({number}) {_named_words(text, root)}" for number, text in enumerate(found, 1))
        where = "on this graph" if alone else "on every graph tried"
        raise AnswerError(
            name,
            f"{head}{len(found)} known mistakes give this order {where}, and the check cannot tell which: "
            f"{listed}. {said}",
            found[0],
        )
    _check_nodes(name, head, order, expected, root, said)
    position = {node: index for index, node in enumerate(order)}
    for node in order:
        for parent in parents[node]:
            if position[parent] > position[node]:
                raise AnswerError(
                    name,
                    f"{head}{node} comes before its input {parent}: every node must come after its inputs. {said}",
                    "a node before its input",
                )
    first = next(i for i, (a, b) in enumerate(zip(order, expected, strict=True)) if a != b)
    raise AnswerError(
        name,
        f"{head}{_brief(order)} is a valid topological order, but not the one depth-first search from "
        f"{root} gives (inputs visited in the order listed): position {first} should be "
        f"{expected[first]}, not {order[first]}. {said}",
    )


def _check_nodes(name: str, head: str, order: list, expected: list, root: str, said: str) -> None:
    """Each node that ``root`` depends on once, and no other."""
    if order in (expected[1:], expected[:-1]) or expected in (order[1:], order[:-1]):
        if len(order) < len(expected):
            which = f"leaves out {expected[0] if order == expected[1:] else expected[-1]}"
        else:
            which = f"has one node too many ({order[0] if order[1:] == expected else order[-1]})"
        raise AnswerError(name, f"{head}the order is off by one: it {which}. {said}", "the order is off by one")
    wanted = set(expected)
    missing = [node for node in expected if node not in order]
    extra = [node for node in order if node not in wanted]
    seen: set = set()
    repeated = []  # each node again after its first place
    for node in order:
        if node in seen:
            repeated.append(node)
        seen.add(node)
    if repeated and not missing and not extra:
        raise AnswerError(
            name,
            f"{head}{_brief(sorted(set(repeated)))} appear more than once: a node that two paths reach joins the "
            f"order once. Keep a set of the nodes already seen. {said}",
            "a node twice",
        )
    if missing or extra or repeated:
        parts = [
            f"missing {_brief(missing)}" if missing else "",
            f"{_brief(extra)} do not lead to {root}" if extra else "",
            f"{_brief(sorted(set(repeated)))} appear more than once" if repeated else "",
        ]
        raise AnswerError(name, f"{head}the order has the wrong nodes: {'; '.join(p for p in parts if p)}. {said}")


def dfs_graphs(seed: int) -> list[tuple[str, dict[str, list[str]], str]]:
    """The graphs a check gives ``dfs_order_with_stack``: (what it is, parents, root).

    Seed 0 gives the exercise's graph from e and from f (where d lists its parents x, c out of
    sorted order), the same from f with d's parents ['c', 'x'], a diamond, then a chain too deep
    for a recursive search. Another seed gives two random graphs (their roots reach every node,
    some by two paths, and some node lists its parents out of sorted order), and a deep chain with
    side inputs. So each known mistake gives another order than the right one on some graph.
    """
    chain = {f"n{i}": [f"n{i - 1}"] if i else [] for i in range(CHAIN_LENGTH)}
    if seed == 0:
        return [
            ("the example graph from e", EXAMPLE_GRAPH, "e"),
            ("the example graph from f", EXAMPLE_GRAPH, "f"),
            ("the example graph from f, with d's parents ['c', 'x']", dict(EXAMPLE_GRAPH, d=["c", "x"]), "f"),
            ("a diamond: d's parents c and b share the input a", DIAMOND, "d"),
            (f"a chain of {CHAIN_LENGTH:,} nodes, n0 to n{CHAIN_LENGTH - 1}", chain, f"n{CHAIN_LENGTH - 1}"),
        ]
    rng = random.Random(f"dfs {seeded(seed)}")
    graphs = []
    for size in (9, 14):
        while True:
            names = [f"v{i}" for i in rng.sample(range(100), size)]
            parents: dict[str, list[str]] = {names[0]: []}
            for i, node in enumerate(names[1:], start=1):  # one parent is the node before: the root reaches all
                parents[node] = rng.sample(names[: i - 1], min(i - 1, rng.randint(0, 2))) + [names[i - 1]]
                rng.shuffle(parents[node])
            if any(parents[node] != sorted(parents[node]) for node in names):
                break
        graphs.append((f"a graph of {size} nodes drawn from seed {seeded(seed)}", parents, names[-1]))
    for i in range(1, CHAIN_LENGTH, 7):
        chain[f"side{i}"] = []
        chain[f"n{i}"] = [f"side{i}", f"n{i - 1}"] if i % 2 else [f"n{i - 1}", f"side{i}"]
    graphs.append((f"a chain of {CHAIN_LENGTH:,} nodes with side inputs", chain, f"n{CHAIN_LENGTH - 1}"))
    return graphs


@allowed()
def check_dfs_order_function(dfs_order_with_stack: Callable, seed: int = 0) -> None:
    """``dfs_order_with_stack(root, parents)`` must return the order of the chapter's recursive search.

    It is called on every graph first, so that a mistake is named only when it gives the answer's
    order on all of them (two mistakes can give the same order on a small graph).
    """
    graphs = dfs_graphs(seed)
    received = [
        call("dfs_order_with_stack", dfs_order_with_stack, root, parents, names=("root", "parents"))
        for _, parents, root in graphs
    ]
    named = None
    if all(_as_order(result) is not None for result in received):
        named = DFS.mistake([(parents, root) for _, parents, root in graphs], received, same_order)
    for (what, parents, root), result in zip(graphs, received, strict=True):
        check_topological_order(result, parents, root, title=f"dfs_order_with_stack on {what}", named=named)

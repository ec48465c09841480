"""Every kind of drill in the book, in the book's order: its chapter, title, levels and answer's form.

This table is the one place a kind is declared. The page's script and the Practice page's
record read it (the book's build writes it into the page), and :func:`question` builds a
kind's question from a level and a seed: a :class:`~.kinds.Question` on a drawn graph for
the graph and backward chapters, a :class:`~.problems.Problem` for the later ones.
"""

from dataclasses import dataclass
from functools import partial

from . import budgets, deep, kinds, losses, matrices, network, neurons, passes, programs, recurrences, tangents, windows
from .graphs import LEVELS

__all__ = ["KINDS", "Kind", "catalog", "question"]


@dataclass(frozen=True)
class Kind:
    """One kind of drill: the chapter (its page's name) that teaches it, a title, levels and the answer's form."""

    chapter: str
    title: str
    levels: dict
    form: str  # "number", "numbers" or "names"
    build: object  # build(level, seed) -> Question or Problem


def _graph_kind(name, form):
    chapter, title = kinds.KINDS[name]
    return Kind(chapter, title, LEVELS, form, partial(kinds.question, name))


KINDS = {
    "neuron": Kind(
        "intro",
        "a neuron's gradient",
        {1: "y = wx + b", 2: "y = tanh(wx + b)", 3: "the change from a nudge"},
        "number",
        neurons.neuron,
    ),
    "finish": _graph_kind("finish", "names"),
    "topological": _graph_kind("topological", "names"),
    "reach": _graph_kind("reach", "names"),
    "value": _graph_kind("value", "number"),
    "local": _graph_kind("local", "number"),
    "adjoint": _graph_kind("adjoint", "number"),
    "adjoints": _graph_kind("adjoints", "numbers"),
    "twice": Kind("engine", "the .grad after two backward() calls", LEVELS, "number", passes.twice),
    "inner": Kind("engine", "a backward() from an inner node", LEVELS, "names", passes.inner),
    "matmul": Kind(
        "tensors",
        "an entry of a product's gradient",
        {1: "(2, 2) times (2, 2)", 2: "(2, 3) times (3, 2)"},
        "number",
        matrices.matmul,
    ),
    "broadcast": Kind(
        "tensors",
        "the sum that undoes a broadcast",
        {1: "b added to every row", 2: "b added to every column", 3: "b multiplying every row"},
        "numbers",
        matrices.broadcast,
    ),
    "softmax": Kind(
        "mlp",
        "cross-entropy's gradient",
        {1: "one example", 2: "a batch of two"},
        "numbers",
        losses.softmax,
    ),
    "decay": Kind(
        "mlp",
        "a gradient with weight decay",
        {1: "the first weight", 2: "either weight"},
        "number",
        losses.decay,
    ),
    "tangent": Kind("forward", "a node's tangent (a JVP)", LEVELS, "number", tangents.tangent),
    "dual": Kind(
        "forward",
        "one operation on dual numbers",
        {1: "sums and products", 2: "products, quotients, squares", 3: "tanh, exp, log"},
        "number",
        tangents.dual,
    ),
    "chain": Kind(
        "depth",
        "the factor a gradient gains through layers",
        {1: "linear layers", 2: "tanh layers"},
        "number",
        deep.chain,
    ),
    "batchnorm": Kind(
        "depth",
        "batch norm's gradient on three numbers",
        {1: "\u03b3 = 1", 2: "\u03b3 \u2260 1"},
        "number",
        deep.batchnorm,
    ),
    "flops": Kind("cost", "the flops of a linear layer", {1: "forward", 2: "backward"}, "number", budgets.flops),
    "revolve": Kind(
        "cost",
        "binomial checkpointing's forward steps",
        {1: "one slot", 2: "two slots", 3: "three slots"},
        "number",
        budgets.revolve,
    ),
    "detach": Kind("frameworks", "a gradient past detach()", {1: "one detach"}, "number", programs.detach),
    "vjp": Kind(
        "frameworks",
        "the x.grad that backward(gradient=v) leaves",
        {1: "products", 2: "tanh and a cube"},
        "number",
        programs.vjp,
    ),
    "accumulate": Kind(
        "profiling",
        "gradients without zero_grad()",
        {1: "two passes", 2: "three or four passes"},
        "number",
        programs.accumulate,
    ),
    "overflow": Kind(
        "profiling",
        "the first number that is not finite",
        {1: "exp and a square"},
        "names",
        programs.overflow,
    ),
    "conv": Kind(
        "layers",
        "an entry of a convolution's gradient",
        {1: "the kernel's", 2: "the image's"},
        "number",
        windows.conv,
    ),
    "maxpool": Kind(
        "layers",
        "where max pooling routes the gradient",
        {1: "ties are rare", 2: "many ties"},
        "numbers",
        windows.maxpool,
    ),
    "embedding": Kind(
        "layers",
        "an embedding's gradient",
        {1: "each token once", 2: "a token repeats"},
        "numbers",
        windows.embedding,
    ),
    "bptt": Kind(
        "sequences",
        "backpropagation through time",
        {1: "two steps", 2: "three steps"},
        "number",
        recurrences.bptt,
    ),
    "jacobian": Kind(
        "sequences",
        "an entry of softmax's Jacobian",
        {1: "on the diagonal", 2: "off the diagonal"},
        "number",
        recurrences.jacobian,
    ),
    "bias": Kind("capstone", "the output bias's gradient", {1: "a batch of two"}, "numbers", network.bias),
    "hidden": Kind(
        "capstone",
        "the gradient before the tanh",
        {1: "a batch of two"},
        "numbers",
        network.hidden,
    ),
}


def question(kind, level, seed):
    """The question of ``kind`` at ``level`` for ``seed``; ValueError names a bad kind, level or seed."""
    if kind not in KINDS:
        raise ValueError(f"drills.question: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if level not in KINDS[kind].levels:
        raise ValueError(
            f"drills.question: level must be one of {sorted(KINDS[kind].levels)} for {kind}, got {level!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"drills.question: seed must be a whole number >= 0, got {seed!r}")
    return KINDS[kind].build(level, seed)


def catalog():
    """The table as the page reads it: ``{kind: {chapter, title, levels: [[number, name], ...], form}}``."""
    return {
        name: {
            "chapter": kind.chapter,
            "title": kind.title,
            "levels": [[number, f"{number}: {text}"] for number, text in kind.levels.items()],
            "form": kind.form,
        }
        for name, kind in KINDS.items()
    }

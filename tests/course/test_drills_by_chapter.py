"""The drills of the chapters after the backward pass: answers from the engine, the same as PyTorch's,
on 1,000 seeds per kind; every named mistake planted and named; the page's calls; the book's pages."""

import functools
import json
import math
from collections import defaultdict

import pytest
import torch

from chainrule_course.drills import KINDS, Problem, ask, catalog, check, question, steps
from chainrule_course.drills.graphs import make_graph

LATER = [name for name, kind in KINDS.items() if kind.chapter not in ("graph", "backward")]
SEEDS = range(1000)
F64 = torch.float64


def level_of(kind, seed):
    levels = list(KINDS[kind].levels)
    return levels[seed % len(levels)]


@functools.cache
def drawn(kind, seed):
    """The question of ``kind`` at ``seed``, at the level the seed picks. Drawn once per run and shared:
    several tests below read the same seeds, and a question is the same for a seed (tested below)."""
    return question(kind, level_of(kind, seed), seed)


def typed(q, value):
    """``value`` as a reader types it."""
    if q.form == "names":
        return ", ".join(value)
    if isinstance(value, list):
        return ", ".join(repr(float(v)) for v in value)
    return repr(float(value))


@pytest.mark.parametrize("kind", LATER)
def test_each_kind_takes_its_answer_and_refuses_another_on_1000_seeds(kind):
    for seed in SEEDS:
        q = drawn(kind, seed)
        assert isinstance(q, Problem) and q.form == KINDS[kind].form
        assert q.check(typed(q, q.answer))["right"], (kind, seed, q.prompt, q.answer)
        if q.form == "names":
            assert not q.check(typed(q, q.answer[:-1]))["right"]
        elif q.form == "numbers":
            assert not q.check(typed(q, [a + 0.5 for a in q.answer]))["right"]
        else:
            assert not q.check(typed(q, q.answer + 0.5 + abs(q.answer) / 100))["right"]


def replay(graph):
    """A graph of drills.graphs rebuilt op by op in PyTorch (float64), every node keeping its grad."""
    made = {}
    ops = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div}
    for node in graph.order:
        if not node.parents:
            made[node.label] = torch.tensor(node.data, dtype=F64, requires_grad=True)
            continue
        args = [made[p.label] for p in node.parents]
        made[node.label] = ops[node.op](*args) if node.op in ops else getattr(torch, node.op)(args[0])
        made[node.label].retain_grad()
    return made


def torch_neuron(q, level, seed):
    d = q.data
    inputs = {n: torch.tensor(d[n], dtype=F64, requires_grad=True) for n in "xwb"}
    z = inputs["w"] * inputs["x"] + inputs["b"]
    (torch.tanh(z) if d["tanh"] else z).backward()
    gradient = inputs[d["wrt"]].grad.item()
    return gradient * d["h"] if level == 3 else gradient


def torch_twice(q, level, seed):
    made = replay(make_graph(seed, level))
    made["L"].backward(retain_graph=True)
    made["L"].backward()
    return made[q.data["leaf"]].grad.item()


def torch_inner(q, level, seed):
    made = replay(make_graph(seed, level))
    made[q.data["node"]].backward()
    return sorted(name for name, t in made.items() if name != q.data["node"] and t.grad is not None)


def torch_matmul(q, level, seed):
    a = torch.tensor(q.data["A"], dtype=F64, requires_grad=True)
    b = torch.tensor(q.data["B"], dtype=F64, requires_grad=True)
    (a @ b).backward(torch.tensor(q.data["C_bar"], dtype=F64))
    i, j = q.data["entry"]
    return (a if q.data["of"] == "A" else b).grad[i, j].item()


def torch_broadcast(q, level, seed):
    x = torch.tensor(q.data["X"], dtype=F64)
    b = torch.tensor(q.data["b"], dtype=F64, requires_grad=True)
    how = q.data["how"]
    y = x * b if how == "times" else x + (b[:, None] if how == "column" else b)
    y.backward(torch.tensor(q.data["Y_bar"], dtype=F64))
    return b.grad.tolist()


def torch_softmax(q, level, seed):
    logits = torch.tensor(q.data["logits"], dtype=F64, requires_grad=True)
    torch.nn.functional.cross_entropy(logits, torch.tensor(q.data["labels"])).backward()
    return logits.grad[0].tolist()


def torch_decay(q, level, seed):
    d = q.data
    w = torch.tensor(d["w"], dtype=F64, requires_grad=True)
    ((w @ torch.tensor(d["x"], dtype=F64) - d["t"]) ** 2 + d["lam"] / 2 * (w**2).sum()).backward()
    return w.grad[d["k"]].item()


def torch_tangent(q, level, seed):
    graph = make_graph(seed, level)
    leaves = graph.leaves()

    def node_of(*inputs):
        made = dict(zip([leaf.label for leaf in leaves], inputs, strict=True))
        ops = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div}
        for node in graph.results():
            args = [made[p.label] for p in node.parents]
            made[node.label] = ops[node.op](*args) if node.op in ops else getattr(torch, node.op)(args[0])
        return made[q.data["node"]]

    primals = tuple(torch.tensor(leaf.data, dtype=F64) for leaf in leaves)
    tangents = tuple(torch.tensor(q.data["direction"][leaf.label], dtype=F64) for leaf in leaves)
    return torch.func.jvp(node_of, primals, tangents)[1].item()


def torch_dual(q, level, seed):
    op = q.data["op"]
    functions = {
        "+": torch.add,
        "-": torch.sub,
        "*": torch.mul,
        "/": torch.div,
        "**2": lambda x, y: x**2,
        "tanh": lambda x, y: torch.tanh(x),
        "exp": lambda x, y: torch.exp(x),
        "log": lambda x, y: torch.log(x),
    }
    (x0, dx), (y0, dy) = q.data["x"], q.data["y"]
    primals = (torch.tensor(x0, dtype=F64), torch.tensor(y0, dtype=F64))
    return torch.func.jvp(functions[op], primals, (torch.tensor(dx, dtype=F64), torch.tensor(dy, dtype=F64)))[1].item()


def torch_chain(q, level, seed):
    d = q.data
    x = torch.tensor(d["x"], dtype=F64, requires_grad=True)
    h = x
    for weight in d["w"]:
        h = torch.tanh(weight * h) if d["tanh"] else weight * h
    h.backward()
    return x.grad.item()


def torch_batchnorm(q, level, seed):
    """torch.nn.functional.batch_norm refuses eps = 0 in training: its formula, differentiated by autograd."""
    d = q.data
    x = torch.tensor(d["x"], dtype=F64, requires_grad=True)
    x_hat = (x - x.mean()) / x.var(correction=0).sqrt()
    (d["gamma"] * x_hat).backward(torch.tensor(d["y_bar"], dtype=F64))
    return x.grad[d["i"]].item()


def torch_conv(q, level, seed):
    d = q.data
    x = torch.tensor(d["X"], dtype=F64, requires_grad=True)
    k = torch.tensor(d["K"], dtype=F64, requires_grad=True)
    torch.nn.functional.conv2d(x[None, None], k[None, None]).backward(torch.tensor(d["Y_bar"], dtype=F64)[None, None])
    i, j = (int(n) - 1 for n in d["entry"][d["entry"].index("[") + 1 : -1].split(", "))
    return (k if d["of"] == "K" else x).grad[i, j].item()


def torch_maxpool(q, level, seed):
    d = q.data
    x = torch.tensor(d["X"], dtype=F64, requires_grad=True)
    torch.nn.functional.max_pool2d(x[None, None], 2).backward(torch.tensor(d["Y_bar"], dtype=F64)[None, None])
    return x.grad[d["row"]].tolist()


def torch_embedding(q, level, seed):
    d = q.data
    table = torch.tensor(d["E"], dtype=F64, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(d["tokens"]), table).backward(torch.tensor(d["Y_bar"], dtype=F64))
    return table.grad[d["token"]].tolist()


def torch_bptt(q, level, seed):
    d = q.data
    w = torch.tensor(d["w"], dtype=F64, requires_grad=True)
    h = torch.tensor(d["h0"], dtype=F64)
    for x in d["x"]:
        h = torch.tanh(w * h + d["u"] * x)
    h.backward()
    return w.grad.item()


def torch_jacobian(q, level, seed):
    d = q.data
    jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, 0), torch.tensor(d["s"], dtype=F64))
    return jac[d["i"], d["j"]].item()


def torch_flops(q, level, seed):
    """PyTorch's own flop counter on the layer's forward, or its backward, in float64."""
    from torch.utils.flop_counter import FlopCounterMode

    d = q.data
    x = torch.zeros(d["n"], d["d"], dtype=F64, requires_grad=True)
    w = torch.zeros(d["d_h"], d["d"], dtype=F64, requires_grad=True)
    with FlopCounterMode(display=False) as forward:
        z = x @ w.T
    with FlopCounterMode(display=False) as backward:
        z.backward(torch.ones_like(z))
    return (backward if d["backward"] else forward).get_total_flops()


def torch_revolve(q, level, seed):
    """Griewank and Walther's closed form, the cost chapter's check of its recursion."""
    steps, slots = q.data["D"], q.data["c"]
    tau = next(t for t in range(steps + 1) if math.comb(slots + t, slots) >= steps)
    return tau * steps - math.comb(slots + tau, slots + 1)


def torch_detach(q, level, seed):
    a = torch.tensor(q.data["a"], dtype=F64, requires_grad=True)
    y = a * q.data["b"]
    (y.detach() * a + y).backward()
    return a.grad.item()


def torch_vjp(q, level, seed):
    d = q.data
    x = torch.tensor(d["x"], dtype=F64, requires_grad=True)
    y = torch.stack([torch.tanh(x), x**3] if d["tanh"] else [x * x, x * d["c"]])
    y.backward(gradient=torch.tensor(d["v"], dtype=F64))
    return x.grad.item()


def torch_accumulate(q, level, seed):
    d = q.data
    w = torch.tensor(d["w"], dtype=F64, requires_grad=True)
    for _ in range(d["passes"]):
        ((w * d["x"] - d["t"]) ** 2).backward()
    return w.grad.item()


def torch_overflow(q, level, seed):
    """The first line whose float64 number is not finite, as torch computes them."""
    values = {"x": torch.tensor(q.data["x"], dtype=F64)}
    for line in q.data["lines"]:
        name, expression = line.split(" = ")
        values[name] = eval(expression, {}, dict(values))  # the program's own lines, on tensors
        if not torch.isfinite(values[name]):
            return [name]
    return ["none"]


def torch_bias(q, level, seed):
    b = torch.zeros(3, dtype=F64, requires_grad=True)
    logits = torch.tensor(q.data["logits"], dtype=F64) + b
    torch.nn.functional.cross_entropy(logits, torch.tensor(q.data["labels"])).backward()
    return b.grad.tolist()


def torch_hidden(q, level, seed):
    d = q.data
    u = torch.tensor(d["U"], dtype=F64, requires_grad=True)
    (torch.tanh(u) @ torch.tensor(d["W2"], dtype=F64).T).backward(torch.tensor(d["O_bar"], dtype=F64))
    return u.grad[0].tolist()


ORACLES = {
    "flops": torch_flops,
    "revolve": torch_revolve,
    "detach": torch_detach,
    "vjp": torch_vjp,
    "accumulate": torch_accumulate,
    "overflow": torch_overflow,
    "bias": torch_bias,
    "hidden": torch_hidden,
    "chain": torch_chain,
    "batchnorm": torch_batchnorm,
    "conv": torch_conv,
    "maxpool": torch_maxpool,
    "embedding": torch_embedding,
    "bptt": torch_bptt,
    "jacobian": torch_jacobian,
    "neuron": torch_neuron,
    "twice": torch_twice,
    "inner": torch_inner,
    "matmul": torch_matmul,
    "broadcast": torch_broadcast,
    "softmax": torch_softmax,
    "decay": torch_decay,
    "tangent": torch_tangent,
    "dual": torch_dual,
}


def test_every_later_kind_has_an_oracle():
    assert sorted(ORACLES) == sorted(LATER)


@pytest.mark.parametrize("kind", LATER)
def test_the_engine_s_answers_agree_with_pytorch(kind):
    for seed in range(0, 1000, 7):
        level = level_of(kind, seed)
        q = question(kind, level, seed)
        expected = ORACLES[kind](q, level, seed)
        if q.form == "names":
            assert q.answer == expected, (kind, seed)
        else:
            got = q.answer if isinstance(q.answer, list) else [q.answer]
            want = expected if isinstance(expected, list) else [expected]
            assert all(math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-12) for g, w in zip(got, want, strict=True)), (
                kind,
                seed,
                got,
                want,
            )


@pytest.mark.parametrize("kind", LATER)
def test_every_named_mistake_is_planted_and_named(kind):
    """Each mistake a kind can name is named when planted, on every seed whose mistakes are told apart."""
    named = defaultdict(int)
    for seed in range(300):
        q = drawn(kind, seed)
        if not q.told_apart():
            continue
        for mistake in q.mistakes:
            result = q.check(typed(q, mistake.value))
            assert not result["right"] and result["mistake"] == mistake.name, (kind, seed, mistake, result)
            named[mistake.name] += 1
    declared = {m.name for seed in range(300) for m in drawn(kind, seed).mistakes}
    assert set(named) == declared and all(count >= 5 for count in named.values()), dict(named)


def test_most_instances_tell_their_mistakes_apart():
    for kind in LATER:
        apart = sum(drawn(kind, seed).told_apart() for seed in range(300))
        assert apart >= 0.7 * 300, (kind, apart)


def test_a_list_answer_names_its_first_wrong_entry_and_a_wrong_count():
    q = question("broadcast", 1, 3)
    wrong = [q.answer[0], q.answer[1] + 3]
    assert "1 of 2 is wrong; the first is b\u0304[2]" in q.check(typed(q, wrong))["message"]
    assert q.check("1")["mistake"] == "unreadable"
    softmax = question("softmax", 2, 4)
    assert "give 3 numbers" in softmax.check("0.1, 0.2")["message"]


def test_a_names_answer_names_a_node_too_many_or_missing():
    q = next(q for seed in SEEDS if len((q := question("inner", 2, seed)).answer) >= 2)
    assert q.check(typed(q, q.answer[1:]))["mistake"] in ("one missing", "inputs only")
    assert q.check(typed(q, [*q.answer, "L"]))["mistake"] in ("one too many", "nodes after it")
    assert q.check("zz")["mistake"] == "unreadable"


@pytest.mark.parametrize("kind", LATER)
def test_the_page_gets_each_kind_s_question_and_steps(kind):
    level = list(KINDS[kind].levels)[-1]
    asked = json.loads(ask(kind, level, 12))
    assert asked["answer"] == KINDS[kind].form and asked["prompt"] and asked["lines"] and len(asked["hints"]) == 2
    assert asked["levelName"] == KINDS[kind].levels[level] and asked["words"].endswith(":")
    assert asked["figure"] == "" or asked["figure"].startswith("<svg")
    shown = steps(kind, level, 12)
    worked = shown.split('<ol class="cr-drill-worked">')[1].split("</ol>")[0]
    assert worked.count("<li>") == len(question(kind, level, 12).steps)
    q = question(kind, level, 12)
    assert json.loads(check(kind, level, 12, typed(q, q.answer)))["right"]


def test_the_catalog_lists_every_kind_in_the_book_s_order_with_two_per_chapter():
    """Every numbered chapter of _toc.yml has its drills, in the table's order: two kinds, or one of three
    levels (the introduction's)."""
    from common import ROOT

    from tools.book.book_model import numbered_chapters, read_toc

    table = catalog()
    assert list(table) == list(KINDS)
    chapters = [entry["chapter"] for entry in table.values()]
    numbered = [chapter.removeprefix("chapters/") for chapter in numbered_chapters(read_toc(ROOT))]
    without = [chapter for chapter in numbered if chapter not in chapters]
    assert not without, (
        f"{without} have no drill kind: every numbered chapter has two, or one of three levels "
        "(CONTRIBUTING.md, Adding a drill)"
    )
    unlisted = [chapter for chapter in dict.fromkeys(chapters) if chapter not in numbered]
    assert not unlisted, f"drill kinds of {unlisted}, which _toc.yml's numbered part does not list: add them there"
    assert list(dict.fromkeys(chapters)) == numbered, (
        f"the catalog's MODULES give the chapters in the order {list(dict.fromkeys(chapters))}, not _toc.yml's"
    )
    kinds_of = {chapter: [e for e in table.values() if e["chapter"] == chapter] for chapter in numbered}
    assert all(len(kinds) >= 2 or len(kinds[0]["levels"]) >= 3 for kinds in kinds_of.values()), kinds_of
    assert all(entry["levels"] and entry["form"] in ("number", "count", "numbers", "names") for entry in table.values())


def test_every_neuron_question_has_a_mistake_to_name():
    """Next for you and the drill's own feedback need one: ∂y/∂b = 1 with x = 1 had none."""
    for level in KINDS["neuron"].levels:
        assert all(question("neuron", level, seed).mistakes for seed in range(400)), level


def test_bad_levels_and_seeds_are_named():
    with pytest.raises(ValueError, match=r"level must be one of \[1, 2\] for matmul, got 3"):
        question("matmul", 3, 1)
    with pytest.raises(ValueError, match="seed must be a whole number"):
        question("dual", 1, -2)


def test_a_question_is_the_same_for_a_seed_and_changes_with_it():
    for kind in LATER:
        first, again = question(kind, 1, 5), question(kind, 1, 5)
        assert (first.prompt, first.lines, first.answer) == (again.prompt, again.lines, again.answer)
        seen = {(question(kind, 1, seed).prompt, tuple(question(kind, 1, seed).lines)) for seed in range(10)}
        assert len(seen) >= 4, kind


def test_answers_are_numbers_a_person_works_out_by_hand():
    """At most 100 in size; the cost chapter's counts, whole numbers, larger (products, or D(D − 1)/2)."""
    from chainrule_course.drills import costs

    for kind in LATER:
        for seed in range(300):
            q = drawn(kind, seed)
            numbers = [] if q.form == "names" else q.answer if isinstance(q.answer, list) else [q.answer]
            largest = {"flops": costs.LARGEST_COUNT, "revolve": costs.LARGEST_STEPS}.get(kind, 100)
            assert all(abs(x) <= largest for x in numbers), (kind, seed, q.answer)


@pytest.mark.parametrize("kind", ["softmax", "decay"])
def test_a_drill_s_derivation_gives_the_engine_s_answer_and_its_slips_are_its_mistakes(kind):
    """The kinds whose mistakes are generated (drills.problems.derived): the hand derivation agrees with the
    engine on every seed, and the slips include the new ones the lists lacked."""
    from chainrule_course.drills import losses
    from chainrule_course.exercises.mistakes import Derivation

    derive = {"softmax": losses._softmax_row, "decay": losses._decay_entry}[kind]
    names = set()
    for seed in range(200):
        q = drawn(kind, seed)
        d = q.data
        if kind == "softmax":
            instance = {"row": d["logits"][0], "label": d["labels"][0], "n": len(d["labels"])}
            instance["other"] = (instance["label"] + 1) % 3
            got = Derivation(derive).right(instance)
            assert all(math.isclose(g, a, abs_tol=1e-12) for g, a in zip(got, q.answer, strict=True)), seed
        else:
            k = d["k"]
            residual = d["w"][0] * d["x"][0] + d["w"][1] * d["x"][1] - d["t"]
            instance = {"residual": residual, "x": d["x"][k], "w": d["w"][k], "lam": d["lam"], "name": "w"}
            assert math.isclose(Derivation(derive).right(instance), q.answer, abs_tol=1e-12), seed
        names |= {m.name for m in q.mistakes}
    new = {"softmax": {"log-softmax for softmax", "\u00f7 classes for \u00f7 n"}, "decay": {"the penalty's sign"}}
    assert new[kind] <= names, names


def test_a_drill_names_no_mistake_two_slips_explain():
    """When two named mistakes give the same answer on an instance, neither is named: a coincidence names
    nothing."""
    from chainrule_course.drills.problems import Mistake, Problem

    q = Problem("made", "?", [], 3.0, ["a hint"], [], [Mistake(1.0, "first", "one"), Mistake(1.0, "second", "two")])
    result = q.check("1")
    assert not result["right"] and result["mistake"] is None and result["message"] == "a hint"
    q.mistakes.pop()
    assert q.check("1")["mistake"] == "one"


def test_the_visit_order_is_named_as_that_and_never_told_to_reverse():
    """The classic slip of the finish-order drill, typing the order in which the search reaches the nodes,
    was told "That is a backward order… Reverse it" on most seeds; reversing it is never right."""
    from chainrule.graph import VISIT, depth_first_events

    told = []
    for seed in range(200):
        q = question("finish", 1 + seed % 3, seed)
        visits = [node.label for event, node in depth_first_events(q.graph.root) if event == VISIT]
        if visits != q.answer:
            told.append(q.check(", ".join(visits))["mistake"])
    assert told and set(told) == {"visit order"}, set(told)


def test_a_global_gradient_slip_is_named_only_when_no_other_slip_gives_its_number():
    """Where a contribution is exactly 1, leaving out the other one gives the product of the two: such an
    answer was told "You multiplied the contributions"; now neither is named."""
    from chainrule_course.drills.graph_kinds import _adjoint_slips

    checked = 0
    for seed in range(300):
        q = question("adjoint", 2 + seed % 2, seed)
        node = q.graph.nodes[q.target]
        slips = _adjoint_slips(q.graph, node)
        for words, (name, value) in slips.items():
            if abs(value - q.answer) < 0.05:
                continue
            result = q.check(repr(value))
            others = {n for w, (n, v) in slips.items() if abs(v - value) < 1e-9}
            assert result["mistake"] == (name if len(others) == 1 else None), (seed, words, result)
            checked += 1
    assert checked > 300


class Micrograd:
    """micrograd's design, as the engine chapter's Scalar follows it: backward() sets the root's grad to 1 (it
    does not add 1) and each node's step adds its local gradient times all the grad it holds."""

    def __init__(self, parents=(), locals_=()):
        self.grad, self.parents, self.locals = 0.0, list(parents), list(locals_)

    def backward(self, order):
        self.grad = 1.0
        for node in reversed(order):
            for parent, local in zip(node.parents, node.locals, strict=True):
                parent.grad += local * node.grad


def micrograd_twice(graph):
    """Every node's .grad after two calls of a micrograd-style backward() on a graph of drills.graphs."""
    made = {}
    for node in graph.order:
        made[node.label] = Micrograd([made[p.label] for p in node.parents], node.local_grads)
    order = [made[node.label] for node in graph.order]
    order[-1].backward(order)
    order[-1].backward(order)
    return {label: node.grad for label, node in made.items()}


def test_micrograd_s_answer_to_two_backward_calls_is_named_when_it_alone_fits():
    """A reader who works the drill as the chapter's Scalar engine (micrograd's backward()) does gets 3 where
    chainrule.Value gives 2: the answer was told only the generic hint. It is named, with what that engine does,
    unless another named mistake gives the same number; a number beside it is not named as it."""
    named = 0
    for seed in range(1000):
        q = drawn("twice", seed)
        theirs = micrograd_twice(make_graph(seed, level_of("twice", seed)))[q.data["leaf"]]
        if math.isclose(theirs, q.answer, abs_tol=1e-9):
            continue
        result = q.check(typed(q, theirs))
        others = [m for m in q.mistakes if m.name != "inner gradients passed on again"]
        alone = not any(math.isclose(m.value, theirs, abs_tol=1e-9) for m in others)
        assert not result["right"], (seed, theirs, q.answer)
        assert result["mistake"] == ("inner gradients passed on again" if alone else None), (seed, theirs, result)
        if alone:
            assert "Scalar engine" in result["message"] and "L.grad = 1" in result["message"], result
            named += 1
        beside = theirs + 0.5 + abs(theirs) / 10  # a number beside it, which no mistake gives, is not named as it
        assert q.check(typed(q, beside))["mistake"] != "inner gradients passed on again", (seed, beside)
    assert named >= 900, named


def test_the_tensors_drills_say_their_entries_count_from_1_as_the_notation_page_does():
    """Ā[2, 1] looked like numpy's index, which names another entry, and the prompt never said how it counted.
    The Notation page counts the maths' indices from 1; the prompts now say so, and give numpy's index of the
    entry whose gradient the answer is (the index the PyTorch oracle reads)."""
    from common import ROOT

    notation = (ROOT / "chapters" / "notation.md").read_text(encoding="utf-8")
    assert "Indices count from 1 in the maths" in notation
    for seed in range(200):
        q = drawn("matmul", seed)
        i, j = q.data["entry"]
        entry = f"{q.data['of']}\u0304[{i + 1}, {j + 1}]"
        assert f"What is {entry}, the entry in row {i + 1}, column {j + 1} of" in q.prompt, q.prompt
        assert "Rows and columns count from 1, as in the chapter's maths" in q.prompt, q.prompt
        assert f"numpy counts from 0: there {entry} is at index [{i}, {j}])" in q.prompt, q.prompt
        b = drawn("broadcast", seed)
        size = len(b.answer)
        assert f"b\u0304[1] to b\u0304[{size}]: they count from 1, as in the chapter's maths" in b.prompt, b.prompt
        assert b.entries == [f"b\u0304[{n}]" for n in range(1, size + 1)]

"""The package's layers: each module imports only modules of its own layer or below, and no import cycles.

Read from the source with ``ast``, so a function-level import counts as much as one at the top.
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "chainrule"

# Layer 1 is the engine, 2 drawing and gradient checks, 3 nn, cost and course helpers.
LAYERS = {
    "graph": 1, "node": 1, "rules": 1, "backward": 1, "tensor": 1, "checkpointing": 1, "value": 1,
    "draw": 2, "gradcheck": 2,
    "functional": 3, "nn": 3, "cost": 3, "plots": 3, "feedback": 3,
}  # fmt: skip
ORACLES = {"torch", "jax", "jaxlib"}


def imports_of(module):
    """The chainrule modules and the top-level packages that ``module`` imports, anywhere in it."""
    tree = ast.parse((SRC / f"{module}.py").read_text())
    ours, theirs = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                ours.add(node.module.split(".")[0])
            else:
                ours.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            theirs.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            theirs.update(alias.name.split(".")[0] for alias in node.names)
    return ours, theirs


def test_every_module_has_a_layer():
    modules = {path.stem for path in SRC.glob("*.py")} - {"__init__"}
    assert modules == set(LAYERS), f"give these a layer: {modules - set(LAYERS)}"


def test_modules_import_only_their_layer_or_below_and_never_torch_or_jax():
    for module, layer in LAYERS.items():
        ours, theirs = imports_of(module)
        above = {name for name in ours if LAYERS[name] > layer}
        assert not above, f"{module} (layer {layer}) imports {above} from a higher layer"
        assert not theirs & ORACLES, f"{module} imports {theirs & ORACLES}"


def test_there_are_no_import_cycles():
    graph = {module: imports_of(module)[0] for module in LAYERS}
    state = {}  # module -> "open" while on the path, "done" after

    for start in graph:
        stack = [(start, iter(sorted(graph[start])))]
        if state.get(start) == "done":
            continue
        state[start] = "open"
        while stack:
            module, pending = stack[-1]
            for name in pending:
                assert state.get(name) != "open", f"import cycle through {module} -> {name}"
                if state.get(name) is None:
                    state[name] = "open"
                    stack.append((name, iter(sorted(graph[name]))))
                    break
            else:
                state[module] = "done"
                stack.pop()


def test_the_cycle_check_can_fail(monkeypatch):
    original = imports_of

    def with_a_cycle(module):
        ours, theirs = original(module)
        return (ours | {"tensor"}, theirs) if module == "rules" else (ours, theirs)

    monkeypatch.setattr(__import__(__name__), "imports_of", with_a_cycle)
    try:
        test_there_are_no_import_cycles()
    except AssertionError as error:
        assert "import cycle" in str(error)
    else:
        raise AssertionError("a cycle rules -> tensor -> rules went unnoticed")

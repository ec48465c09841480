"""The differential harness (``make differential``, tools/differential) runs apart from the
tests; these only show that each of its parts finds a fault when one is planted, and finds
nothing in chainrule as it is, on a small share of what it runs."""

import numpy as np

from chainrule.rules import RULES
from tools.differential import fuzz, opinfo, probes

OPS = ["tanh", "maximum", "__getitem__", "cat", "nn.functional.conv2d"]


def test_the_opinfo_comparison_finds_a_wrong_rule_and_an_unclear_error(monkeypatch):
    clean = opinfo.run_opinfo(OPS)
    assert clean.compared > 30 and not clean.mismatches and not clean.unclear
    assert any("conv2d: groups" in reason for reason in clean.reasons)  # refused, and said so
    off = RULES["tanh"]._replace(vjp=lambda g, node, saved: (g * (1 - saved[-1] * saved[-1]) * 1.001,))
    monkeypatch.setitem(RULES, "tanh", off)
    monkeypatch.setitem(opinfo.ADAPTERS, "cat", opinfo.Adapter(lambda xs, dim=0: xs.shape, ("cat",)))
    planted = opinfo.run_opinfo(OPS)
    assert planted.mismatches and all(line.startswith("tanh: gradient") for line in planted.mismatches)
    assert planted.unclear and all("AttributeError" in line for line in planted.unclear)


def _whole_tie_to_a(g, node, saved):
    """maximum's rule right everywhere but at a tie, where A gets all of G."""
    a, b, _ = saved
    share = (a.data >= b.data).astype(a.dtype)
    return g * share, g * (1 - share)


def test_random_programs_find_a_rule_wrong_only_at_ties(monkeypatch):
    assert fuzz.run_tensor_programs(500) == [] and fuzz.run_scalar_programs(150) == []
    monkeypatch.setitem(RULES, "maximum", RULES["maximum"]._replace(vjp=_whole_tie_to_a))
    assert any("maximum" in problem for problem in fuzz.run_tensor_programs(500))


def test_the_probes_find_nothing_and_can_fail(monkeypatch):
    assert probes.run_probes() == []
    assert probes._raises(lambda: None, RuntimeError, "backward") == "no RuntimeError: a silent result"
    # numpy's own message starts with "index" too, but not with "index:"
    monkeypatch.setitem(RULES, "index", RULES["index"]._replace(forward=lambda a, key: a[key]))
    assert "index: IndexError: index 9 is out of bounds" in probes.every_refusal_names_its_call()
    monkeypatch.setattr(np, "array_equal", lambda *args: False)  # every comparison a probe makes now fails
    assert len(probes.run_probes()) >= 4

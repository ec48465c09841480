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


def test_random_programs_find_a_wrong_tie_rule(monkeypatch):
    assert fuzz.run_tensor_programs(150) == [] and fuzz.run_scalar_programs(150) == []
    halves = RULES["maximum"]._replace(vjp=lambda g, node, saved: (g * 0.5, g * 0.5))
    monkeypatch.setitem(RULES, "maximum", halves)
    assert any("maximum" in problem for problem in fuzz.run_tensor_programs(150))


def test_the_probes_find_nothing_and_can_fail(monkeypatch):
    assert probes.run_probes() == []
    assert probes._raises(lambda: None, RuntimeError, "backward") == "no RuntimeError: a silent result"
    monkeypatch.setattr(np, "array_equal", lambda *args: False)  # every comparison a probe makes now fails
    assert len(probes.run_probes()) >= 4

"""The differential harness (``make differential``, tools/differential) runs apart from the
tests; these only show that each of its parts finds a fault when one is planted, and finds
nothing in chainrule as it is, on a small share of what it runs (for the OpInfo part, a few
samples of the same form, since torch's database takes seconds to import)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from chainrule.rules import RULES
from tools.differential import fuzz, opinfo, probes

RNG = np.random.default_rng(5)


def sample(*tensors_then_args, **kwargs):
    """A sample as torch's OpInfo database gives one: float64 leaves that require grad, then constants."""
    made = [torch.tensor(v, requires_grad=True) if isinstance(v, np.ndarray) else v for v in tensors_then_args]
    return SimpleNamespace(input=made[0], args=tuple(made[1:]), kwargs=kwargs)


SAMPLES = {  # a few samples written here: torch's database takes seconds to import
    "tanh": (torch.tanh, [sample(RNG.normal(size=(3, 2)))]),
    "maximum": (torch.maximum, [sample(np.array([1.0, 2.0]), np.array([1.0, 0.5]))]),
    "nn.functional.conv2d": (
        torch.nn.functional.conv2d,
        [sample(RNG.normal(size=(1, 4, 5, 5)), RNG.normal(size=(2, 2, 3, 3)), None, groups=2)],
    ),
}


def compare(name, adapter=None):
    call, samples = SAMPLES[name]
    opinfo.OPINFO_CALLS[name] = call
    return [opinfo.compare_sample(name, adapter or opinfo.ADAPTERS[name], s, RNG) for s in samples]


def ops_without_adapter(rules, adapters, reasons) -> list[str]:
    """The rows of ``rules`` no adapter names (by the name its messages use) and ``reasons`` does not explain."""
    called = {name for adapter in adapters.values() for name in adapter.names}
    return [op for op, rule in rules.items() if rule.name not in called and op not in reasons]


def test_every_op_is_compared_with_torch_s_opinfo_samples_or_says_why_not():
    assert not ops_without_adapter(RULES, opinfo.ADAPTERS, opinfo.WITHOUT_ADAPTER), (
        "add an adapter to ADAPTERS in tools/differential/opinfo.py (keyed by the OpInfo's name), "
        "or say in its WITHOUT_ADAPTER why torch's samples cannot test the op"
    )
    assert not set(opinfo.WITHOUT_ADAPTER) - set(RULES), "WITHOUT_ADAPTER names an op RULES no longer has"
    planted = {**RULES, "planted_op": RULES["exp"]._replace(name="planted_op")}
    assert ops_without_adapter(planted, opinfo.ADAPTERS, opinfo.WITHOUT_ADAPTER) == ["planted_op"]


def test_an_adapter_keyed_by_no_opinfo_s_name_is_found():
    """An adapter under a key torch's database lacks compares nothing: make differential reports it."""
    db = [
        SimpleNamespace(name=name, variant_test_name="", op=None, sample_inputs=lambda *a, **k: [])
        for name in ("tanh", "exp")
    ]
    adapters = {"tanh": opinfo.ADAPTERS["tanh"], "nn.functional.exp": opinfo.ADAPTERS["exp"]}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(opinfo, "ADAPTERS", adapters)
        assert opinfo.run_opinfo(db=db).unmatched == ["nn.functional.exp"]
        assert opinfo.run_opinfo(["tanh"], db=db).unmatched == []


def test_the_opinfo_comparison_finds_a_wrong_rule_and_an_unclear_error(monkeypatch):
    assert compare("tanh") == [None] and compare("maximum") == [None]
    [(kind, message)] = compare("nn.functional.conv2d")
    assert kind == "refused" and message.startswith("conv2d: groups=2 is not supported")  # and said so
    off = RULES["tanh"]._replace(vjp=lambda g, node, saved: (g * (1 - saved[-1] * saved[-1]) * 1.001,))
    monkeypatch.setitem(RULES, "tanh", off)
    [(kind, message)] = compare("tanh")
    assert kind == "mismatch" and message.startswith("gradient of input 0: differs from torch")
    [(kind, message)] = compare("maximum", opinfo.Adapter(lambda x, y: x.no_such_method(), ("maximum",)))
    assert kind == "unclear" and message.startswith("AttributeError")
    [(kind, message)] = compare("maximum", opinfo.Adapter(lambda x, y: x.shape, ("maximum",)))
    assert (kind, message) == ("mismatch", "chainrule returned a tuple, not a Tensor")
    [(kind, message)] = compare("maximum", opinfo.Adapter(lambda x, y: x[9], ("maximum", "index")))
    assert kind == "refused" and message.startswith("index: index 9 is out of bounds")
    monkeypatch.setitem(RULES, "index", RULES["index"]._replace(forward=lambda a, key: a[key]))
    [(kind, message)] = compare("maximum", opinfo.Adapter(lambda x, y: x[9], ("maximum", "index")))
    assert kind == "unclear" and message.startswith("IndexError: index 9 is out of bounds")  # numpy's own


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

"""The reload's cheaper paths (plugin36) decide exactly as the paths they shortcut, each with a
canary: a planted copy of the shortcut done wrong goes red.

* :meth:`DictVersions.adopt` takes the bytes and the ints of the read :meth:`changed` made (no
  second conversion); a read that found nothing leaves the snapshot as it is.
* :func:`harmless` decides a rebuilt closure of the same code object by identity; an equal copy
  of the code still passes by ``==``, other code is still refused.
* :meth:`Sweep._compare` reads the values of its hits again after one streaming sweep: the values
  it hands on are the ones the dicts hold.
* :meth:`Plan.run` skips ``no_grad`` when grad mode is already off: same values, grad mode as it
  was, no autograd history either way.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan, dict_versions
from derivgraph.dict_versions import DictVersions
from derivgraph.guard import Guard
from derivgraph.guard.holders import MISSING
from derivgraph.guard.template import CallSig, harmless, value_template
from tests.toy import Toy


def _versions() -> tuple[dict[str, int], dict[str, int], DictVersions]:
    if not dict_versions.AVAILABLE:
        pytest.skip("no PEP 509 version tags on this interpreter")
    a, b = {"k": 1}, {"k": 2}
    return a, b, DictVersions([a, b])


def test_adopt_takes_the_moved_read_whole() -> None:
    a, b, versions = _versions()
    assert versions.changed() == []
    versions.adopt()  # nothing moved: the snapshot stands
    a["k"] = 3
    assert versions.changed() == [0]
    versions.adopt()  # its bytes and its ints become the snapshot
    assert versions.unchanged() and versions.changed() == []
    b["k"] = 4
    assert versions.changed() == [1]  # a stale int for dict 0 would say [0, 1]
    versions.adopt()
    versions.adopt()  # twice: still that read
    assert versions.changed() == [] and versions.unchanged()
    a["k"] = 5
    versions.rebase()
    versions.adopt()  # after a rebase there is no read to take
    assert versions.changed() == [] and versions.unchanged()


def test_canary_adopt_without_the_ints_reports_a_dict_twice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: an adopt that takes the moved read's bytes but keeps the old ints names a dict
    that did not move again (the test above asserts ``[1]``)."""
    a, b, versions = _versions()

    def adopt_bytes_only(self: DictVersions) -> None:
        moved, self._moved = self._moved, None
        if moved is not None:
            self._tags, self._bytes = moved[0], moved[1]  # the planted bug: the ints stay

    monkeypatch.setattr(DictVersions, "adopt", adopt_bytes_only)
    a["k"] = 3
    assert versions.changed() == [0]
    versions.adopt()
    b["k"] = 4
    assert versions.changed() == [0, 1]  # red for the real adopt: [1]


def _closure(n: object):  # noqa: ANN202 - a fresh closure of one code object per call
    return lambda x: x * n


def _bare(x: object) -> object:
    return x


def test_same_code_by_identity_an_equal_copy_by_value_other_code_refused() -> None:
    template = value_template(_bare)
    assert isinstance(template, CallSig) and template.code is _bare.__code__

    def rebuilt(x: object) -> object:  # another function object, another code object
        return x

    copy = type(_bare)(_bare.__code__.replace(), {})  # an equal code object, not the same one
    assert copy.__code__ is not _bare.__code__ and copy.__code__ == _bare.__code__
    assert harmless(template, type(_bare)(_bare.__code__, {}))  # the same code: identity
    assert harmless(template, copy)                             # equal code: still passes
    assert not harmless(template, lambda x: x + 1)              # other code: refused
    assert not harmless(template, rebuilt)                      # other code (name, line)


def test_canary_identity_alone_would_refuse_an_equal_copy() -> None:
    """Canary: a check by identity only refuses an equal copy of the code (walked whole: slower,
    and different from the ``==`` it shortcuts), which the test above asserts passes."""
    template = value_template(_bare)
    copy = type(_bare)(_bare.__code__.replace(), {})
    assert copy.__code__ is not template.code  # identity alone: False
    assert harmless(template, copy)


class _Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 3), requires_grad=False)

    def post_load(self, n: object) -> None:
        self.scratch = self.weight * 2  # guarded: the layer is on a chain
        self.cpu_linear = _closure(n)


def test_compare_hands_on_the_values_the_dicts_hold_now() -> None:
    layer = _Layer()
    layer.post_load(2)
    guard = Guard()
    guard.snapshot(layer)
    sweep = guard.watch.sweep
    layer.post_load(5)  # a fresh closure (harmless) and a fresh scratch (rebound)
    everything = set(range(len(sweep.live)))
    resized, wrong, now = sweep._compare(everything)
    held = {sweep.acc_keys[b]: v for b, v in zip(wrong, now)}
    assert held["cpu_linear"] is layer.__dict__["cpu_linear"]
    assert held["scratch"] is layer.__dict__["scratch"]
    assert resized == [] and all(v is not MISSING for v in now)
    del layer.cpu_linear
    _, wrong, now = sweep._compare(everything)
    assert {sweep.acc_keys[b]: v for b, v in zip(wrong, now)}["cpu_linear"] is MISSING
    report = guard.restore(layer)  # the restore decides as before
    assert [c.path for c in report.restored] == ["scratch"] and not report.recapture


def _plan() -> tuple[Toy, object]:
    model = Toy()
    spec = Spec(name="t", target=Target(module_class=["Toy"]), params={}, derived=[
        DerivedTensor(name="inv", formula="reciprocal(scale)", kind="attribute")])
    return model, compile_plan(model, [spec])


def test_run_with_grad_off_or_on_writes_the_same_and_keeps_the_mode() -> None:
    model, plan = _plan()
    model.scale.requires_grad_(True)
    model.load(seed=7)
    with torch.no_grad():
        plan.run(verify=True)
        assert not torch.is_grad_enabled()
    off = model.inv.clone()
    model.load(seed=7)
    assert torch.is_grad_enabled()
    plan.run(verify=True)
    assert torch.is_grad_enabled()
    assert torch.equal(model.inv, off) and torch.equal(off, torch.reciprocal(model.scale.detach()))
    assert model.inv.grad_fn is None and not model.inv.requires_grad  # no autograd history


def test_canary_a_pass_run_with_grad_on_without_no_grad_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a run that skips ``no_grad`` although grad mode is on (the planted bug: grad mode
    read as off) runs its ``out=`` ops on a source that requires grad, which torch refuses; the
    test above asserts the run passes."""
    model, plan = _plan()
    model.scale.requires_grad_(True)
    model.load(seed=7)
    monkeypatch.setattr(torch, "is_grad_enabled", lambda: False)
    with pytest.raises(Exception, match="automatic differentiation|requires grad|grad"):
        plan.run(verify=True)

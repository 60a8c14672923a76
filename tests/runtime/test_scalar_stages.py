"""Derived Python scalars of one-element tensors: their reductions (the identity on one element)
are not run, their staging copies read the tensors directly, as one ``torch._foreach_copy_``
into one buffer per dtype, read back to the host in one transfer; bit for bit what one op each
gives (:mod:`derivgraph.compiler.copies`)."""

from __future__ import annotations

import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import codegen
from derivgraph.runtime import storage

ONE = ("s0", "s1", "s2")  # one-element scales (like vLLM's attention _q_scale / _k_scale)


class Scales(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.s0 = nn.Parameter(torch.tensor(0.5), requires_grad=False)
        self.s1 = nn.Parameter(torch.tensor([-0.0]), requires_grad=False)  # a signed zero
        self.s2 = nn.Parameter(torch.tensor([2.25], dtype=torch.float64), requires_grad=False)
        self.rows = nn.Parameter(torch.tensor([1.0, 3.0, -2.0]), requires_grad=False)

    def load(self, values: dict[str, float]) -> None:
        with torch.no_grad():
            for name, v in values.items():
                getattr(self, name).fill_(v)


def _plan(model: Scales):
    derived = [DerivedTensor(name=f"{n}_max", kind="scalar", formula=f"amax({n})")
               for n in (*ONE, "rows")]
    return compile_plan(model, [Spec(name="scales", target=Target(module_class=["Scales"]),
                                     derived=derived)])


def _bits(x: float) -> str:
    return float(x).hex()


def _expected(model: Scales) -> dict[str, str]:
    return {f"{n}_max": _bits(torch.amax(getattr(model, n)).item()) for n in (*ONE, "rows")}


def _now(model: Scales) -> dict[str, str]:
    return {f"{n}_max": _bits(getattr(model, f"{n}_max")) for n in (*ONE, "rows")}


def test_one_element_reductions_are_staged_directly_in_one_call():
    model = Scales()
    plan = _plan(model)
    src = plan.source()
    assert "torch._foreach_max(" not in src  # s0, s1 ([1]) and s2 (float64): no reduction run
    assert src.count("ops.amax.fn(") == 1  # rows has three elements: its amax runs
    assert src.count("torch._foreach_copy_(stages, group)") == 1  # the three, read directly
    groups = {dtype: targets for buffer, targets in plan.tensors.stage_groups
              for dtype in [buffer.dtype]}
    assert groups == {torch.float32: ["s0_max", "s1_max", "rows_max"],
                      torch.float64: ["s2_max"]}
    assert _now(model) == _expected(model)


def test_grouped_scalars_are_bit_exact_with_one_op_each_after_a_reload():
    model = Scales()
    plan = _plan(model)
    targets = [f"{n}_max" for n in (*ONE, "rows")]
    for values in ({"s0": 7.5, "s1": 0.0, "s2": -1.0, "rows": -0.0},
                   {"s0": float("-inf"), "s1": -0.0, "s2": 1e-300, "rows": 4.0}):
        model.load(values)
        plan.run()
        staged = {t: _bits(v) for t, v in plan.tensors.staged(targets).items()}
        assert staged == _expected(model)  # the staged bits, signed zeros included
    model.load({"s0": 1.5, "s1": 2.5, "s2": 3.5, "rows": 4.5})
    report = plan.run()
    assert _now(model) == _expected(model)
    assert sorted(report.recapture_required) == sorted(targets)
    model.load({"s0": float("nan")})
    plan.run()
    assert model.s0_max != model.s0_max  # NaN staged and read back as NaN


def test_refill_reads_the_staged_scalars_in_one_transfer_per_buffer(monkeypatch):
    model = Scales()
    plan = _plan(model)
    model.load({"s0": 3.0, "rows": 9.0})
    calls = []
    host_tolist = storage.host_tolist  # each buffer's one read (NumPy's view or torch's)

    def counted(buffer: torch.Tensor):  # noqa: ANN202
        read = host_tolist(buffer)
        return lambda: calls.append(buffer.numel()) or read()

    monkeypatch.setattr(storage, "host_tolist", counted)
    plan.tensors._stage_rows.clear()  # the rows (and their reads) made again, counted
    plan.refill()
    assert sorted(calls) == [1, 3]  # the float64 buffer, the float32 buffer
    assert _now(model) == _expected(model)


def test_canary_stages_grouped_in_the_wrong_order_give_wrong_scalars(monkeypatch):
    """Planted bug: the grouped staging copy pairs each stage with another scalar's value."""
    emit = codegen._emit_group

    def swapped(em, key, members):  # noqa: ANN001, ANN202
        lines = emit(em, key, members)
        if key.kind is codegen.GroupKind.STAGE:  # the values read (a bound list): s1, s2 swapped
            ins = lines[0][0].partition(", ")[2].partition(")")[0]
            values = list(em.bindings.globals[ins])
            i, j = [k for k, v in enumerate(values) if v.shape == (1,)]  # s1 (f32), s2 (f64)
            values[i], values[j] = values[j], values[i]
            em.bindings.globals[ins] = values
        return lines

    monkeypatch.setattr(codegen, "_emit_group", swapped)
    model = Scales()
    plan = _plan(model)
    model.load({"s0": 3.0, "s1": 5.0, "rows": 9.0})
    plan.run()
    assert _now(model) != _expected(model)  # red: the scalars are crossed

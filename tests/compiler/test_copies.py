"""One ``_foreach_copy_`` per level for copies, dim-0 ``cat`` rows and directly staged one-element
reductions (:mod:`derivgraph.compiler.copies`): the structure of the pass, bit-exact values
after a reload, what stays out, and canaries for the two rewrites."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import codegen, copies

MERGED = "# copies, rows of cat, stages: one call"


class Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Parameter(torch.randn(3, 4), requires_grad=False)
        self.b = nn.Parameter(torch.randn(2, 4), requires_grad=False)
        self.c = nn.Parameter(torch.randn(3, 4, dtype=torch.float64), requires_grad=False)
        self.sc = nn.Parameter(torch.tensor(0.25), requires_grad=False)
        self.sc1 = nn.Parameter(torch.tensor([-0.0]), requires_grad=False)  # [1], signed zero

    def load(self, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in (self.a, self.b, self.c):
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
            self.sc.fill_(float(torch.rand((), generator=g)))
            self.sc1.fill_(-float(torch.rand((), generator=g)))


def _d(name: str, formula: str, kind: str = "attribute") -> DerivedTensor:
    return DerivedTensor(name=name, kind=kind, formula=formula)


def _plan(model: Heads, *extra: DerivedTensor):
    derived = [_d("kv", "cat([a, b], 0)"), _d("a_t", "contiguous(t(a))"),
               _d("sc_max", "amax(sc)", "scalar"), _d("sc1_max", "amax(sc1)", "scalar"),
               _d("wide", "cat([a, a], 1)"), _d("mixed", "cat([a, c], 0)"), *extra]
    return compile_plan(model, [Spec(name="heads", target=Target(module_class=["Heads"]),
                                     derived=derived)])


def _expected(m: Heads) -> dict[str, object]:
    return {"kv": torch.cat([m.a, m.b], 0), "a_t": m.a.t().contiguous(),
            "sc_max": float(torch.amax(m.sc)).hex(), "sc1_max": float(torch.amax(m.sc1)).hex(),
            "wide": torch.cat([m.a, m.a], 1), "mixed": torch.cat([m.a, m.c], 0)}


def _now(m: Heads) -> dict[str, object]:
    return {"kv": m.kv, "a_t": m.a_t, "sc_max": float(m.sc_max).hex(),
            "sc1_max": float(m.sc1_max).hex(), "wide": m.wide, "mixed": m.mixed}


def _same(m: Heads) -> bool:
    now, want = _now(m), _expected(m)
    return all(torch.equal(now[k], v) if isinstance(v, torch.Tensor) else now[k] == v
               for k, v in want.items())


def test_copies_rows_and_stages_of_a_level_are_one_call():
    model = Heads()
    plan = _plan(model)
    src = plan.program.source
    assert src.count(MERGED) == 1 and src.count("torch._foreach_copy_(") == 1, src
    assert "_foreach_max" not in src and "amax" not in src  # both scales staged directly
    # stay out: a cat along dim 1, a cat whose inputs are not all of the storage's dtype
    assert src.count("ops.cat.out(") == 2, src
    header = plan.source()
    assert "kv[0:3], kv[3:5]" in header and "sc_max (staged)" in header, header
    assert _same(model)


def test_the_merged_pass_is_bit_exact_after_reloads():
    model = Heads()
    plan = _plan(model)
    kv, a_t = model.kv, model.a_t
    for seed in (1, 2, 3):
        model.load(seed)
        report = plan.run()
        assert _same(model)
        assert model.kv is kv and model.a_t is a_t  # written in place
        assert sorted(report.recapture_required) == ["sc1_max", "sc_max"]
    model.sc.fill_(float("nan"))
    plan.run()
    assert model.sc_max != model.sc_max  # NaN staged and read back as NaN


def test_a_reduction_read_by_another_step_still_runs():
    model = Heads()
    plan = _plan(model, _d("scaled", "mul(a, amax(sc))"))
    assert "amax" in plan.program.source  # read by the mul too: not dropped
    model.load(4)
    plan.run()
    assert _same(model) and torch.equal(model.scaled, model.a * torch.amax(model.sc))


def test_ungrouped_pass_keeps_one_op_per_step():
    model = Heads()
    plan = _plan(model)
    ungrouped = plan.programs._compile(plan.programs.steps, "ungrouped", group=False)
    assert MERGED not in ungrouped.source and ungrouped.source.count("ops.cat.out(") == 3


def test_canary_rows_in_the_wrong_place_are_caught_at_compile(monkeypatch, caplog):
    """Planted bug: each cat input copied into the other's rows (offsets reversed): the
    compile-time check of the grouped pass against eager evaluation names ``kv`` and falls
    back to one op per step (whose values are right)."""
    def crossed(ctx, step):  # noqa: ANN001, ANN202
        rows = copies.row_copies(ctx, step)
        if rows is None:
            return None
        n = rows[-1].stop
        return [copies.Rows(n - r.stop, n - r.start, r.input) for r in rows]

    monkeypatch.setattr(codegen, "row_copies", crossed)
    model = Heads()
    model.b.data = model.b.data.new_zeros(3, 4)  # the same rows as a: the crossed copy fits
    with caplog.at_level("WARNING", logger="derivgraph.planner"):
        plan = _plan(model)
    assert "grouped pass differs from eager evaluation at kv" in caplog.text  # red
    assert MERGED not in plan.program.source
    model.load(5)
    plan.run()
    assert _same(model)


def test_canary_a_reduction_dropped_despite_another_reader_fails(monkeypatch):
    """Planted bug: every identity reduction with a stage reader dropped, other readers or not
    (the mul then reads a node no step makes)."""
    from dataclasses import replace

    def careless(ctx, steps):  # noqa: ANN001, ANN202
        direct = {s.node: src for s in steps if (src := copies._identity_input(ctx, s))}
        out = [replace(s, input=direct[s.input]) if s.input in direct else s
               for s in steps if s.node not in direct]
        return out, direct

    monkeypatch.setattr(codegen, "stage_directly", careless)
    with pytest.raises(KeyError):
        _plan(Heads(), _d("scaled", "mul(a, amax(sc))"))

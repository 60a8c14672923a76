"""Groups of many small CPU tensors run over flat buffers, addressed by memory
(:mod:`derivgraph.compiler.flat`): one gather per operand list, the op once, one scatter.

The flat pass must write bit for bit what the one-op-per-tensor reference writes (the eager
interpreter, and the same pass with ``Programs.flat`` off), and its element addresses must
never outlive what they address: a source moved by ``p.data = new`` recompiles the pass, a
derived tensor re-pointed by ``t.data = new`` gets its startup storage back before the pass
writes it. Each shortcut has a canary: the planted bug goes red. Every test runs with the
dicts' version tags proven and without them (``dict_tags``).
"""

from __future__ import annotations

import gc
import itertools

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.compiler import flat

LAYERS = flat.MIN_GROUP


class Layer(nn.Module):
    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        w, bias, m, gscale = _values(seed)
        self.w = nn.Parameter(w, requires_grad=False)
        self.bias = nn.Parameter(bias, requires_grad=False)
        self.m = nn.Parameter(m.t(), requires_grad=False)  # a strided source
        self.register_buffer("gscale", gscale)

    def load(self, seed: int) -> None:
        with torch.no_grad():
            for name, value in zip(("w", "bias", "m", "gscale"), _values(seed)):
                getattr(self, name).copy_(value.t() if name == "m" else value)


def _values(seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(8, generator=g), torch.randn(8, generator=g),
            torch.randn(3, 8, generator=g), 0.5 + torch.rand((), generator=g))


SPEC = Spec(name="layer", target=Target(module_class=["Layer"]), derived=[
    DerivedTensor(name="inv", kind="attribute", formula="3.0 / gscale"),  # unary with scale
    DerivedTensor(name="rw", kind="attribute", formula="1.0 / w"),        # unary
    DerivedTensor(name="prod", kind="attribute", formula="w * gscale"),   # broadcast binary
    DerivedTensor(name="total", kind="parameter", formula="w + bias"),    # binary
    DerivedTensor(name="mt", kind="attribute", formula="m * 2.0"),        # strided, scalar
    DerivedTensor(name="cp", kind="buffer", formula="contiguous(w)"),     # copy
])
NAMES = ("inv", "rw", "prod", "total", "mt", "cp")


def _expected(layer: Layer) -> dict[str, torch.Tensor]:
    """Each derived tensor computed one op at a time from the layer's current sources."""
    w, bias, m, gscale = layer.w, layer.bias, layer.m, layer.gscale
    return {"inv": torch.reciprocal(gscale) * 3.0, "rw": torch.reciprocal(w),
            "prod": w * gscale, "total": w + bias, "mt": m * 2.0, "cp": w.clone()}


def _compiled(flat_groups: bool = True) -> tuple[nn.Sequential, object]:
    model = nn.Sequential(*[Layer(i) for i in range(LAYERS)])
    plan = compile_plan(model, [SPEC])
    if not flat_groups:
        plan.programs.flat = False
        plan.install(plan.steps)
    return model, plan


def _wrong(model: nn.Sequential) -> list[str]:
    """The derived tensors whose holder does not hold the one-op-at-a-time value, bit for bit."""
    bad = []
    for i, layer in enumerate(model):
        for name, want in _expected(layer).items():
            if not torch.equal(getattr(layer, name), want):
                bad.append(f"{i}.{name}")
    return bad


def _flat_groups(plan: object) -> int:
    return plan.program.source.count(".index_copy_(")


def test_every_group_runs_flat_and_bit_exact(dict_tags):
    model, plan = _compiled()
    assert _flat_groups(plan) == len(NAMES)  # one scatter per group
    assert "_foreach_" not in plan.program.source
    source = plan.source()
    assert "index_select" in source and "derivgraph.compiler.flat" in source  # described
    for seed in (11, 12):
        for layer in model:
            layer.load(seed)
        plan.run()
        assert _wrong(model) == []


def test_the_flat_pass_writes_what_the_foreach_pass_writes(dict_tags):
    results = []
    for flat_groups in (True, False):
        model, plan = _compiled(flat_groups)
        assert (_flat_groups(plan) > 0) == flat_groups
        for layer in model:
            layer.load(21)
        plan.run()
        results.append({f"{i}.{n}": getattr(layer, n).clone()
                        for i, layer in enumerate(model) for n in NAMES})
    assert results[0].keys() == results[1].keys()
    assert all(torch.equal(results[0][k], results[1][k]) for k in results[0])


def test_the_pass_holds_every_storage_it_addresses(dict_tags):
    """A source moved by ``p.data = new`` frees nothing the compiled addresses point into."""
    model, plan = _compiled()
    old = model[3].w.untyped_storage()
    held = [s for key, name in plan.programs.bindings.names.items()
            if getattr(key, "role", None) == "held" for s in plan.bindings[name]]
    assert any(s.data_ptr() == old.data_ptr() for s in held)


def _held_at(plan: object, ptr: int) -> list[torch.Tensor]:
    """What the pass's ``held`` globals keep at data address ``ptr``, each read as 8 floats
    over the memory it keeps (the old tensor at that address is gone)."""
    held = [s for key, name in plan.programs.bindings.names.items()
            if getattr(key, "role", None) == "held" for s in plan.bindings[name]]
    return [torch.empty(0).set_(s if isinstance(s, torch.UntypedStorage)
                                else s.untyped_storage(), 0, (8,))
            for s in held if s.data_ptr() == ptr]


@pytest.mark.parametrize("moved", ["source", "derived"])
def test_the_pass_holds_the_startup_memory_after_a_move(moved, dict_tags):
    """After ``t.data = new`` (a source the engine replaced, a derived tensor it re-pointed),
    the only reference left to the memory the compiled addresses point into is the pass's (and
    a derived tensor's startup record): it stays allocated, still holding its values, until
    the pass is recompiled or the storage put back. The pass holding the tensors instead of
    their storages (each one's current storage, not the addressed one) is red here."""
    model, plan = _compiled()
    t = model[3].w if moved == "source" else model[3].rw
    ptr, values = t.data_ptr(), t.detach().clone()
    t.data = torch.full((8,), 4.0)
    gc.collect()
    kept = _held_at(plan, ptr)
    assert kept, "nothing the pass holds keeps the compiled address"
    assert all(torch.equal(k, values) for k in kept)


def test_a_source_moved_by_data_assignment_is_read_at_its_new_address(dict_tags):
    model, plan = _compiled()
    moved = model[3]
    moved.w.data = torch.full((8,), 4.0)  # a new storage: the compiled addresses are stale
    report = plan.run()
    assert any(r.startswith("3.w ") for r in report.recapture_required)
    assert _wrong(model) == []
    assert torch.equal(moved.rw, torch.full((8,), 0.25))
    model[3].load(31)  # in place, at the new address: the recompiled pass reads it
    plan.run()
    assert _wrong(model) == []


def test_canary_a_pass_not_recompiled_after_a_move_reads_the_old_address(dict_tags,
                                                                         monkeypatch):
    """The planted bug: the plan re-binds the sources but keeps the pass compiled against the
    old addresses."""
    model, plan = _compiled()
    monkeypatch.setattr(plan, "install", lambda steps, group=True: plan.program)
    model[3].w.data = torch.full((8,), 4.0)
    plan.run()
    assert "3.rw" in _wrong(model)


def test_a_repointed_derived_tensor_gets_its_startup_storage_back(dict_tags):
    model, plan = _compiled()
    startup = model[2].total.untyped_storage().data_ptr()
    model[2].total.data = torch.zeros(8)  # the engine re-pointed a derived tensor
    for layer in model:
        layer.load(41)
    report = plan.run()
    assert "2.total" in report.restored
    assert model[2].total.untyped_storage().data_ptr() == startup
    assert _wrong(model) == []


def test_canary_without_the_restore_a_repointed_derived_tensor_keeps_stale_values(
        dict_tags, monkeypatch):
    """The planted bug: no startup storage is put back, so the flat scatter writes memory the
    holder's tensor no longer points at."""
    model, plan = _compiled()
    monkeypatch.setitem(plan.programs.helpers, "restore_storage", lambda: [])
    plan.install(plan.steps)  # the entry functions bind the patched helper
    model[2].total.data = torch.zeros(8)
    for layer in model:
        layer.load(41)
    plan.run()
    assert _wrong(model) == ["2.total"]


def test_capture_records_the_foreach_pass_and_replays_bit_exact(dict_tags):
    """A recording is checked for writes into sources storage by storage: capture records the
    pass with one foreach call per operation (no flat group), and the replay is exact."""
    model, plan = _compiled()
    assert _flat_groups(plan) > 0
    plan.capture()
    assert _flat_groups(plan) == 0 and "_foreach_" in plan.program.source
    for seed in (51, 52):
        for layer in model:
            layer.load(seed)
        report = plan.run()
        assert report.replayed
        assert _wrong(model) == []


def _plant_rotated_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug: the output element addresses of each group rotated by one (its
    operands' left as they are)."""
    span_of, calls = flat.span_of, itertools.count()

    class Rotated(flat.Span):
        def index(self, tensors, shapes=None):  # noqa: ANN001, ANN202
            return super().index(tensors, shapes).roll(1)

    def planted(tensors):  # noqa: ANN001, ANN202 - the first span of each group: its outputs
        span = span_of(tensors)
        return Rotated(span.view, span.low, span.itemsize) if next(calls) % 2 == 0 else span

    monkeypatch.setattr(flat, "span_of", planted)


def test_canary_output_addresses_in_another_order_go_red(dict_tags, monkeypatch):
    model, plan = _compiled()
    _plant_rotated_outputs(monkeypatch)
    plan.install(plan.steps)  # as compiled, with the planted addresses
    for layer in model:
        layer.load(61)
    plan.run()
    assert len(_wrong(model)) > LAYERS


def test_canary_compile_refuses_a_flat_pass_that_differs(dict_tags, monkeypatch, caplog):
    """The same planted bug at compile: the planner's check of the grouped pass against the
    eager evaluation catches it and runs per op (still bit exact)."""
    _plant_rotated_outputs(monkeypatch)
    with caplog.at_level("WARNING"):
        model, plan = _compiled()
    assert "grouped pass differs from eager evaluation" in caplog.text
    assert _flat_groups(plan) == 0
    for layer in model:
        layer.load(62)
    plan.run()
    assert _wrong(model) == []


@pytest.mark.parametrize("case", ["large", "integer op"])
def test_groups_the_flat_path_does_not_take_keep_the_foreach_calls(case):
    """Large tensors (memcpy-bound) and an op on an integer dtype stay one
    ``torch._foreach_*`` call per operation."""
    if case == "large":
        model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(LAYERS)])  # 4096 each
        spec = Spec(name="big", target=Target(module_class=["Linear"]), derived=[
            DerivedTensor(name="inv", kind="attribute", formula="1.0 / weight")])
    else:
        model = nn.Sequential(*[Counts() for _ in range(LAYERS)])
        spec = Spec(name="counts", target=Target(module_class=["Counts"]), derived=[
            DerivedTensor(name="twice", kind="attribute", formula="n + n")])
    plan = compile_plan(model, [spec])
    assert _flat_groups(plan) == 0
    assert "_foreach_" in plan.program.source
    plan.run()


class Counts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("n", torch.arange(4, dtype=torch.int32))


def test_span_index_addresses_strided_and_broadcast_elements():
    base = torch.arange(24, dtype=torch.float32)
    a = base[2:14].view(3, 4).t()        # strided
    b = base[20]                         # one element, broadcast below
    span = flat.span_of([a, b])
    assert span is not None
    picked = span.view.index_select(0, span.index([a, b], [a.shape, torch.Size([4, 3])]))
    assert torch.equal(picked, torch.cat([a.reshape(-1), b.expand(4, 3).reshape(-1)]))


def test_span_of_refuses_what_it_cannot_address():
    assert flat.span_of([]) is None
    assert flat.span_of([torch.zeros(3), torch.zeros(3, dtype=torch.float64)]) is None
    assert flat.span_of([torch.zeros(0)]) is None
    assert flat.span_of([torch.zeros(3, device="meta")]) is None

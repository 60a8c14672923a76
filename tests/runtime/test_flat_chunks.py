"""A group over :data:`derivgraph.compiler.flat.MAX_ELEMENTS` (and within the flat path's other
limits) runs as consecutive chunks of its members, each emitted by the flat path itself: the
same checks on each chunk, and a chunk the path refuses runs as ``torch._foreach_*`` calls, that
chunk alone. The chunked pass must write bit for bit what the foreach form writes; each refusal
has a canary (the source names the chunk that fell back: removing its check goes red).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler import codegen, flat
from derivgraph.compiler.ir import NodeKind

SIZE = 512  # elements per tensor (within flat.MAX_MEAN)
PER_CHUNK = flat.MAX_ELEMENTS // SIZE  # tensors per full chunk
assert PER_CHUNK >= flat.MIN_GROUP and SIZE <= flat.MAX_MEAN


class Layer(nn.Module):
    def __init__(self, seed: int, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.dtype = dtype
        w, bias, gscale = _values(seed, dtype)
        self.w = nn.Parameter(w, requires_grad=False)
        self.bias = nn.Parameter(bias, requires_grad=False)
        self.register_buffer("gscale", gscale)

    def load(self, seed: int) -> None:
        with torch.no_grad():
            for name, value in zip(("w", "bias", "gscale"), _values(seed, self.dtype)):
                getattr(self, name).copy_(value)


def _values(seed: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(SIZE, generator=g).to(dtype), torch.randn(SIZE, generator=g).to(dtype),
            (0.5 + torch.rand((), generator=g)).to(dtype))


def _spec(*formulas: tuple[str, str]) -> Spec:
    return Spec(name="layer", target=Target(module_class=["Layer"]), derived=[
        DerivedTensor(name=name, kind="attribute", formula=formula) for name, formula in formulas])


#: one group of each flat kind: unary with a scale, unary, broadcast binary, binary, scalar
OPS = (("inv", "3.0 / w"), ("rw", "1.0 / w"), ("prod", "w * gscale"), ("total", "w + bias"),
       ("halved", "w * 0.5"))


def _expected(layer: Layer) -> dict[str, torch.Tensor]:
    """Each derived tensor of :data:`OPS` and ``cp``, one op at a time."""
    w, bias, gscale = layer.w, layer.bias, layer.gscale
    return {"inv": torch.reciprocal(w) * 3.0, "rw": torch.reciprocal(w), "prod": w * gscale,
            "total": w + bias, "halved": w * 0.5, "cp": w.clone()}


def _model(layers: int, dtype: torch.dtype = torch.float32) -> nn.Sequential:
    return nn.Sequential(*[Layer(i, dtype) for i in range(layers)])


def _compile(model: nn.Sequential, spec: Spec, caplog: pytest.LogCaptureFixture,
             flat_groups: bool = True) -> object:
    """The plan, its compile's bit check of the grouped pass against eager evaluation passed
    (no warning), installed as the foreach form where ``flat_groups`` is False."""
    with caplog.at_level(logging.WARNING):
        plan = compile_plan(model, [spec])
    assert "differs from eager" not in caplog.text
    if not flat_groups:
        plan.programs.flat = False
        plan.install(plan.steps)
    return plan


def _wrong(model: nn.Sequential, names: tuple[str, ...]) -> list[str]:
    return [f"{i}.{n}" for i, layer in enumerate(model) for n in names
            if not torch.equal(getattr(layer, n), _expected(layer)[n])]


def _after_reload(layers: int, spec: Spec, names: tuple[str, ...], caplog, dtype=torch.float32,
                  flat_groups: bool = True) -> tuple[str, dict[str, torch.Tensor]]:
    """The pass's source and every derived tensor after a reload of new values."""
    model = _model(layers, dtype)
    plan = _compile(model, spec, caplog, flat_groups)
    for layer in model:
        layer.load(1000 + layers)
    plan.run()
    assert _wrong(model, names) == []
    return plan.program.source, {f"{i}.{n}": getattr(layer, n).clone()
                                 for i, layer in enumerate(model) for n in names}


def _chunk_lines(source: str, i: int, k: int) -> list[str]:
    return [line for line in source.splitlines() if f"chunk {i} of {k} of a group" in line]


def test_fits_and_chunks_are_the_flat_rule():
    assert flat.fits(flat.MAX_ELEMENTS, flat.MIN_GROUP)
    assert not flat.fits(flat.MAX_ELEMENTS + 1, 64)                   # too many elements
    assert not flat.fits(flat.MIN_GROUP * 8, flat.MIN_GROUP - 1)      # too few tensors
    assert not flat.fits((flat.MAX_MEAN + 1) * 40, 40)                 # too large a mean
    assert flat.chunks([SIZE] * (2 * PER_CHUNK + 5)) == [
        (0, PER_CHUNK), (PER_CHUNK, 2 * PER_CHUNK), (2 * PER_CHUNK, 2 * PER_CHUNK + 5)]
    big = flat.MAX_ELEMENTS + 1  # a member above the limit alone, in order
    assert flat.chunks([8, big, 8, 8]) == [(0, 1), (1, 2), (2, 4)]
    numels = [7, 300, 1, 1024, 5] * 200
    cuts = flat.chunks(numels)
    assert cuts[0][0] == 0 and cuts[-1][1] == len(numels)
    assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))  # consecutive, covering
    for start, end in cuts:
        assert sum(numels[start:end]) <= flat.MAX_ELEMENTS
        assert end == len(numels) or sum(numels[start:end + 1]) > flat.MAX_ELEMENTS  # longest


def test_a_group_over_the_limit_runs_flat_in_chunks_bit_exact(caplog):
    names = tuple(n for n, _ in OPS)
    source, got = _after_reload(3 * PER_CHUNK, _spec(*OPS), names, caplog)
    assert "_foreach_" not in source
    assert source.count(".index_copy_(") == 3 * len(OPS)  # three chunks a group, each flat
    assert len(_chunk_lines(source, 1, 3)) == len(OPS)
    assert len(_chunk_lines(source, 3, 3)) == len(OPS)
    reference, want = _after_reload(3 * PER_CHUNK, _spec(*OPS), names, caplog, flat_groups=False)
    assert ".index_copy_(" not in reference
    assert got.keys() == want.keys()
    assert all(torch.equal(got[k], want[k]) for k in got)


def test_bf16_copies_run_in_chunks_and_bf16_ops_stay_foreach(caplog):
    """A copy of any plain dtype takes the flat path (bf16 here); an op on bf16 does not, so
    its group is not split."""
    spec = _spec(("cp", "contiguous(w)"), ("rw", "1.0 / w"))
    source, got = _after_reload(3 * PER_CHUNK, spec, ("cp", "rw"), caplog, torch.bfloat16)
    assert source.count(".index_copy_(") == 3  # the copies only
    assert len(_chunk_lines(source, 2, 3)) == 1
    assert "torch._foreach_reciprocal_(" in source
    _, want = _after_reload(3 * PER_CHUNK, spec, ("cp", "rw"), caplog, torch.bfloat16,
                            flat_groups=False)
    assert all(torch.equal(got[k], want[k]) for k in got)


def test_a_chunk_below_min_group_runs_foreach_alone(caplog):
    layers = 2 * PER_CHUNK + flat.MIN_GROUP - 1
    source, _ = _after_reload(layers, _spec(("rw", "1.0 / w")), ("rw",), caplog)
    assert source.count(".index_copy_(") == 2
    tail = _chunk_lines(source, 3, 3)
    assert len(tail) == 1 and "not on the flat path" in tail[0] and "_foreach_copy_" in tail[0]


def _emit_rw(plan: object, outs: list[torch.Tensor]) -> tuple[str, object]:
    """The plan's ``rw = 1.0 / w`` group emitted by codegen into ``outs`` (one per layer, in
    place of the plan's own storages), flat: the source and the compiled function."""
    graph = plan.programs.tensors.graph
    targets = [ref for ref in graph.derived if ref.endswith(".rw")]
    bindings = codegen.Bindings()
    bindings.helper("torch", torch)
    bindings.reserve("f")
    em = codegen.Emitter(plan.programs.tensors, bindings, flat=True)
    key = codegen.GroupKey(codegen.GroupKind.UNARY, "reciprocal", torch.float32,
                           torch.device("cpu"))
    sources = [f"{t.rsplit('.', 1)[0]}.w" for t in targets]  # each layer's w
    assert all(graph.nodes[s].kind is NodeKind.SOURCE for s in sources)
    members = codegen.Members(targets, outs, sources, [])
    program = codegen.compile_function(bindings, "f", codegen._emit_members(em, key, members))
    return program.source, program.fn


@pytest.mark.parametrize("case", ["shared", "strided"])
def test_canary_a_chunk_the_flat_path_refuses_runs_foreach_that_chunk_alone(case, caplog):
    """Two outputs of the middle chunk at the same memory (its scatter would not be
    independent steps), or one of its outputs not contiguous (the group is then mixed: split,
    and each chunk checked): that chunk runs foreach, the others flat, bit for bit the one-op
    value (groups emitted by codegen over outputs the test makes: no schedule groups either)."""
    layers, at = 3 * PER_CHUNK, PER_CHUNK + 3
    model = _model(layers)
    plan = _compile(model, _spec(("rw", "1.0 / w")), caplog)
    outs = [torch.full((SIZE,), float("nan")) for _ in range(layers)]
    if case == "shared":
        with torch.no_grad():
            model[at + 1].w.copy_(model[at].w)  # the same values: one memory may hold both
        outs[at + 1] = outs[at][:]
    else:
        outs[at] = torch.full((2 * SIZE,), float("nan"))[::2]
    source, fn = _emit_rw(plan, outs)
    middle = _chunk_lines(source, 2, 3)
    assert len(middle) == 1 and "not on the flat path" in middle[0]
    assert "_foreach_copy_" in middle[0] and "torch._foreach_reciprocal_(" in source
    assert source.count(".index_copy_(") == 2  # chunks 1 and 3
    with torch.no_grad():
        fn()
    # two outputs at one memory are not independent steps in any form (the foreach form's
    # in-place op runs twice on it: the schedule never groups them); every other is exact
    shared = {at, at + 1} if case == "shared" else set()
    bad = [i for i, (o, layer) in enumerate(zip(outs, model))
           if not torch.equal(o, torch.reciprocal(layer.w))]
    assert set(bad) <= shared and len(bad) < layers


def test_canary_an_op_not_exact_is_not_split(caplog):
    """``exp`` is not an exact IEEE op (:data:`flat.EXACT_UNARY`): the group stays one
    foreach call over every member, never chunked."""
    assert "exp" not in flat.EXACT_UNARY
    model = _model(3 * PER_CHUNK)
    plan = _compile(model, _spec(("e", "exp(w)")), caplog)
    source = plan.program.source
    assert "chunk" not in source and ".index_copy_(" not in source
    assert source.count("torch._foreach_exp_(") == 1
    for layer in model:
        layer.load(5)
    plan.run()
    assert all(torch.equal(layer.e, torch.exp(layer.w)) for layer in model)


@pytest.mark.parametrize("broadcast", [False, True])
def test_span_index_of_one_layout_is_one_sweep_and_the_same_elements(broadcast, monkeypatch):
    """Tensors of one shape and stride (the usual group) are indexed in one sweep over their
    addresses; the elements picked are each tensor's, in order, as the per-tensor form's."""
    base = torch.arange(200, dtype=torch.float32)
    ts = [base[i * 20 + 1:i * 20 + 13].view(3, 4).t() for i in range(9)]  # strided, [4, 3]
    shapes = None
    if broadcast:
        ts = [base[i * 20 + 7:i * 20 + 8] for i in range(9)]  # [1], broadcast to [4, 3]
        shapes = [torch.Size([4, 3])] * len(ts)
    span = flat.span_of(ts)
    assert span is not None
    want = torch.cat([t.expand(4, 3).reshape(-1) for t in ts])
    swept = span.index(ts, shapes)
    assert torch.equal(span.view.index_select(0, swept), want)
    calls = []  # the per-tensor form (one arange per tensor) is not taken
    arange = torch.arange
    monkeypatch.setattr(torch, "arange", lambda *a, **k: calls.append(a) or arange(*a, **k))
    span.index(ts, shapes)
    assert len(calls) == 1
    extra = base[195:196].view(1, 1) if broadcast else base[181:193].view(4, 3)  # another layout
    mixed = [*ts, extra]
    span = flat.span_of(mixed)
    assert span is not None
    picked = span.view.index_select(0, span.index(mixed, None if shapes is None else
                                                  [*shapes, torch.Size([4, 3])]))
    assert torch.equal(picked, torch.cat([want, extra.expand(4, 3).reshape(-1)]))
    assert len(calls) == 1 + len(mixed)  # the per-tensor form: one arange per tensor


_CPU = torch.device("cpu")


def _record(cls: type = torch.Tensor) -> ColumnLayout:
    return ColumnLayout(cls, torch.float32, torch.Size([SIZE]), _CPU, True)


def test_disjoint_is_by_address_and_size():
    """Tensors of ``nbytes`` each are disjoint only where no two of their starts, sorted,
    are closer than that (one shared byte refuses)."""
    assert flat.disjoint(np.array([64, 0, 32], dtype=np.int64), 32)
    assert not flat.disjoint(np.array([64, 0, 31], dtype=np.int64), 32)  # one byte shared
    assert not flat.disjoint(np.array([0, 96, 0], dtype=np.int64), 32)   # one memory twice


def test_noted_addresses_are_the_columns_own_in_order():
    """A column's noted addresses answer it whole, or after its template's (read); any other
    run (a stranger among it, a part of it) is read per tensor (None here)."""
    column = [torch.zeros(SIZE) for _ in range(4)]
    ptrs = [t.data_ptr() for t in column]
    book = ColumnLayouts()
    book.add(column, _record())
    book.note_addresses(column, ptrs)
    template = torch.zeros(SIZE)
    assert codegen._noted(book, column) == ptrs
    assert codegen._noted(book, [template, *column]) == [template.data_ptr(), *ptrs]
    assert codegen._noted(book, [*column[:2], torch.zeros(SIZE), *column[3:]]) is None
    assert codegen._noted(book, column[1:]) is None
    assert codegen._noted(None, column) is None


@pytest.mark.parametrize("template", ["row-major", "strided", "other shape"])
def test_a_columns_template_is_proved_only_by_its_own_facts(template):
    """A compact column's template (first) is taken under its rows' record only where its
    own facts are the record's: a strided one, or one of another shape, leaves the column
    unproved (read per tensor)."""
    rows = [torch.zeros(SIZE) for _ in range(4)]
    book = ColumnLayouts()
    book.add(rows, _record())
    first = {"row-major": torch.zeros(SIZE), "strided": torch.zeros(2 * SIZE)[::2],
             "other shape": torch.zeros(SIZE + 1)}[template]
    facts = codegen._column_facts([first, *rows], book)
    want = torch.Size([SIZE]) if template == "row-major" else None
    assert codegen._proved(facts, torch.float32) == want
    assert codegen._proved(codegen._column_facts(rows, book), torch.float32) == want or \
        template != "row-major"


def _reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the flat path's per-tensor reads: shapes (codegen) and data addresses
    (flat)."""
    got = {"shape": 0, "ptr": 0}
    shape, ptr = codegen._shape, flat._ptr

    def count_shape(t: torch.Tensor) -> torch.Size:
        got["shape"] += 1
        return shape(t)

    def count_ptr(t: torch.Tensor) -> int:
        got["ptr"] += 1
        return ptr(t)

    monkeypatch.setattr(codegen, "_shape", count_shape)
    monkeypatch.setattr(flat, "_ptr", count_ptr)
    return got


@pytest.mark.parametrize("case", ["proved", "overlap", "strided operand", "other shape"])
def test_a_proved_group_reads_its_shapes_and_addresses_from_the_records(case, caplog,
                                                                        monkeypatch):
    """With the compile's layout book recording the outputs (their addresses noted) and the
    operands, the flat runs read no shape and only the operands' addresses, and write bit for
    bit the one-op value. Canaries: two outputs the record proves (contiguous, of its shape)
    overlapping in the middle chunk still refuse that chunk (foreach alone); a first operand
    the record would not prove (strided: not admitted under its rows' record) makes the group
    read every shape again, the flat path still exact; outputs whose record proves another
    shape than the operands' (as many elements) are refused, every chunk foreach (source
    only: no form runs that step)."""
    layers, at = 3 * PER_CHUNK, PER_CHUNK + 3
    model = _model(layers)
    if case == "strided operand":
        with torch.no_grad():
            model[0].w = nn.Parameter(torch.randn(2 * SIZE)[::2], requires_grad=False)
    plan = _compile(model, _spec(("rw", "1.0 / w")), caplog)
    shape = (2, SIZE // 2) if case == "other shape" else (SIZE,)
    outs = [torch.full(shape, float("nan")) for _ in range(layers)]
    if case == "overlap":
        shared = torch.full((SIZE + SIZE // 2,), float("nan"))
        outs[at], outs[at + 1] = shared[:SIZE], shared[SIZE // 2:]
    ctx = plan.programs.tensors
    ws = ctx.bound_values([f"{i}.w" for i in range(layers)])
    assert all(w is layer.w for w, layer in zip(ws, model))
    book = ColumnLayouts()
    book.add(outs, ColumnLayout(torch.Tensor, torch.float32, torch.Size(shape), _CPU, True))
    book.note_addresses(outs, [o.data_ptr() for o in outs])
    book.add(ws[1:], _record(nn.Parameter))  # the first (a template's place) admitted
    ctx.layouts = book
    reads = _reads(monkeypatch)
    try:
        source, fn = _emit_rw(plan, outs)
    finally:
        ctx.layouts = None
    if case == "other shape":  # (not a step any form runs: the schedule never groups it)
        assert ".index_copy_(" not in source and source.count("not on the flat path") == 3
        return
    with torch.no_grad():
        fn()
    bad = [i for i, (o, layer) in enumerate(zip(outs, model))
           if not torch.equal(o, torch.reciprocal(layer.w))]
    if case == "overlap":
        middle = _chunk_lines(source, 2, 3)
        assert len(middle) == 1 and "not on the flat path" in middle[0]
        assert source.count(".index_copy_(") == 2
        assert set(bad) <= {at, at + 1}
        return
    assert bad == []
    assert source.count(".index_copy_(") == 3 and "_foreach_" not in source
    if case == "proved":
        assert reads == {"shape": 0, "ptr": layers}  # the operands' addresses only
    else:
        assert reads["shape"] >= 2 * layers  # outputs' and operands' shapes, each chunk

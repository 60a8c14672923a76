"""The flat path's held storages (``held``: every storage a flat run addresses, kept alive by the
pass) take an entry column's storages from its startup record, noted in the layout book
(:meth:`~derivgraph.column_layout.ColumnLayouts.storages`), instead of one
``untyped_storage()`` per output. The oracle: every held storage is the tensor's own (its
``data_ptr()``), and the outputs' are the very objects their entries' startup record holds.
Canaries: a run that is not a noted column's very tensors in order, or a column noted without
storages, is read tensor by tensor.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target, compile_plan
from derivgraph.column_layout import ColumnLayout, ColumnLayouts
from derivgraph.compiler import codegen, flat
from derivgraph.runtime.entry import StartupColumn

SIZE = 64


class Layer(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w = nn.Parameter(0.5 + torch.rand(SIZE, generator=g), requires_grad=False)
        self.register_buffer("gscale", 0.5 + torch.rand((), generator=g))


SPEC = Spec(name="layer", target=Target(module_class=["Layer"]), derived=[
    DerivedTensor(name="rw", kind="attribute", formula="1.0 / w"),
    DerivedTensor(name="prod", kind="attribute", formula="w * gscale")])


def _storage_ptrs(tensors: list[torch.Tensor]) -> list[int]:
    return [t.untyped_storage().data_ptr() for t in tensors]


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many tensors the flat path called ``untyped_storage()`` on (torch hands one object
    per storage, so the count, not the object, tells a read from a noted one)."""
    reads = [0]
    method = codegen.tensor_method

    def counting(types: object, name: str) -> object:
        call = method(types, name)

        def read(t: torch.Tensor) -> object:
            reads[0] += name == "untyped_storage"
            return call(t)
        return read

    monkeypatch.setattr(codegen, "tensor_method", counting)
    return reads


def _column(n: int = 4) -> tuple[list[torch.Tensor], list[object], ColumnLayouts]:
    column = [torch.zeros(SIZE) for _ in range(n)]
    storages = [t.untyped_storage() for t in column]
    book = ColumnLayouts()
    book.add(column, ColumnLayout(torch.Tensor, torch.float32, torch.Size([SIZE]),
                                  torch.device("cpu"), True))
    book.note_addresses(column, [t.data_ptr() for t in column], storages)
    return column, storages, book


def _noted(book: ColumnLayouts | None, tensors: list[torch.Tensor]) -> list[object] | None:
    return codegen._noted(book, tensors, storages=True)


def test_a_noted_column_hands_its_storages_whole_or_after_its_template(monkeypatch):
    column, storages, book = _column()
    reads = _counted(monkeypatch)
    assert _noted(book, column) == storages
    assert reads == [0]  # none read
    template = torch.zeros(SIZE)
    held = _noted(book, [template, *column])
    assert [s.data_ptr() for s in held] == _storage_ptrs([template, *column])
    assert reads == [1]  # the template's own
    assert _noted(book, []) is None


def test_a_chunk_takes_its_rows_storages():
    """A chunk's facts (:meth:`codegen._RunFacts.cut`) keep its rows' storages, as their
    addresses."""
    column, storages, _book = _column(6)
    facts = codegen._RunFacts(torch.float32, torch.Size([SIZE]), None, None,
                              [t.data_ptr() for t in column], storages)
    part = facts.cut(2, 5)
    assert part.out_storages == storages[2:5]
    assert part.out_ptrs == [t.data_ptr() for t in column[2:5]]
    assert facts._replace(out_storages=None).cut(2, 5).out_storages is None


@pytest.mark.parametrize("case", ["stranger", "part", "no book", "no storages"])
def test_canary_anything_else_is_not_noted(case):
    """A stranger in the column's place (red if the identity sweep is dropped: it would get
    the noted row's storage), a part of the column, no book, or a column noted with its
    addresses only (a source column's): none noted, the flat run reads each."""
    column, _storages, book = _column()
    if case == "no storages":
        book = ColumnLayouts()
        book.note_addresses(column, [t.data_ptr() for t in column])
    tensors = {"stranger": [*column[:2], torch.zeros(SIZE), *column[3:]],
               "part": column[1:]}.get(case, column)
    assert _noted(None if case == "no book" else book, tensors) is None


@pytest.mark.parametrize("layers", [flat.MIN_GROUP, flat.MAX_ELEMENTS // SIZE + flat.MIN_GROUP],
                         ids=["one run", "chunks"])
def test_a_compiled_flat_pass_holds_its_outputs_noted_storages(layers, monkeypatch):
    """End to end, both groups flat (in one run each, or in chunks): the held storages are
    every output's and operand's own, and only the operands' (and each column's template's)
    were read. Then a reload's run is exact."""
    model = nn.Sequential(*[Layer(i) for i in range(layers)])
    reads = _counted(monkeypatch)
    plan = compile_plan(model, [SPEC])
    runs = plan.program.source.count("index_copy_")
    assert runs == (2 if layers == flat.MIN_GROUP else 4)  # every run flat
    outs = [plan.entries[f"{i}.{name}"].storage for name in ("rw", "prod") for i in range(layers)]
    operands = [layer.w for layer in model] * 2 + [layer.gscale for layer in model]
    held = [s for k, v in plan.bindings.items() if k.startswith("held") for s in v]
    assert sorted(s.data_ptr() for s in held) == sorted(_storage_ptrs(outs + operands))
    templates = sum(type(plan.entries[f"0.{name}"].startup_data) is not StartupColumn
                    for name in ("rw", "prod"))
    assert reads == [3 * layers + templates]  # w, w and gscale; no output but a template
    with torch.no_grad():
        for layer in model:
            layer.w.mul_(2.0)
    plan.run()
    for layer in model:
        assert torch.equal(layer.rw, 1.0 / layer.w)
        assert torch.equal(layer.prod, layer.w * layer.gscale)

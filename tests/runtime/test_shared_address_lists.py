"""refsA84: the address checks keep their callers' read-only lists, not copies.

:class:`~derivgraph.addresses.AtAddresses` keeps the tensor and address lists it is given
(the holder table's storages and startup addresses, the bound sources' columns), and the
storage words it takes (:class:`~derivgraph.addresses.Addresses`) keep its tensor list: one
list of references where there were three, each a young list the first collection after
the compile walks. The exact compare's ``range`` list is made only where that compare runs.
Checked here: the very lists, their values read independently of the compile, and that the
checks still find a moved storage and a refill still gives eager's values."""

from __future__ import annotations

import torch

from derivgraph import compile_plan
from derivgraph.addresses import AtAddresses
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.fixtures.scaling_refill import assert_refill_matches_eager

LAYERS = 12


def test_the_address_checks_keep_the_tables_lists() -> None:
    torch.manual_seed(0)
    model = scaling_model(LAYERS)
    plan = compile_plan(model, [scaling_spec()])
    table = plan.holders.table
    at = table._at  # made by prepare's check
    assert at is not None and at.proven()
    # real values: each holder's entry storage, at its own data address
    entries = list(table.entries)
    assert len(table.storages) == len(entries) == 4 * LAYERS  # inv, prod, strides, scale_alias
    assert all(s is e.storage for s, e in zip(table.storages, entries))
    assert table.ptrs == [s.data_ptr() for s in table.storages]
    assert all(getattr(model.get_submodule(e.node.id.rsplit(".", 1)[0]),
                       e.node.id.rsplit(".", 1)[1]) is s for e, s in zip(entries, table.storages))
    # the very lists: the check's, its words', and the holder table's
    assert at.tensors is table.storages and at.ptrs is table.ptrs
    assert at.words is not None and at.words.tensors is at.tensors
    assert table.startup_ptrs() is table.ptrs
    assert at._indices is None  # its words proved it: no exact compare, no range list
    # the sources' check keeps the bound sources' columns
    sources, checks = plan.holders._sources, plan.holders._source_checks
    assert checks is not None and checks[2].tensors is sources.tensors
    assert checks[2].ptrs is sources.ptrs
    names = [f"layers.{i}.{n}" for i in range(LAYERS) for n in ("weight", "scale")]
    params = dict(model.named_parameters())
    assert sorted(sources.paths) == sorted(names)
    assert all(t is params[p] for p, t in zip(sources.paths, sources.tensors))
    assert sources.ptrs == [t.data_ptr() for t in sources.tensors]
    # the derived storages' startup check: its words keep its list
    startup = plan.tensors._startup
    if startup is not None and startup.words is not None:
        assert startup.words.tensors is startup.tensors
    # still a working plan: a derived storage moved is found, and a refill gives eager's
    # values on every layer
    moved = model.layers[3].inv
    moved.data = moved.data.clone()
    assert not table.at_startup_addresses()
    assert_refill_matches_eager(model, plan, LAYERS, 1.5)


def test_the_exact_compare_makes_its_indices_where_it_runs() -> None:
    tensors = [torch.zeros(6), torch.zeros(4), torch.zeros(3)]
    ptrs = [t.data_ptr() for t in tensors]
    at = AtAddresses(tensors, ptrs)
    assert at.tensors is tensors and at.ptrs is ptrs and at._indices is None
    assert at.intact() and at.words is not None and at.words.tensors is tensors
    startup = tensors[1].data
    tensors[1].data = torch.ones(4)  # `.data =`: another storage, no list written
    assert not at.intact()
    assert at._indices == [0, 1, 2]  # the exact compare ran
    tensors[1].data = startup
    assert at.intact()
    # an address that is not the tensor's: refused by the exact compare too
    other = AtAddresses(tensors, [*ptrs[:2], ptrs[2] + 4])
    assert not other.intact() and other._indices == [0, 1, 2]
    # a tuple is kept as a list of its own
    kept = AtAddresses(tuple(tensors), tuple(ptrs))
    assert type(kept.tensors) is list and kept.tensors == tensors and kept.intact()

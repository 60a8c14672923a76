"""The startup tensors' address check takes its words from the holders' storages' check.

:meth:`Plan.prepare <derivgraph.runtime.plan.Plan.prepare>` proves the holders' storages at their
startup addresses (an exact compare, then their storage words read once); where those storages
hold every startup tensor (the same tensors at the same addresses), the startup tensors' check
takes its words from that proof (:meth:`AtAddresses.take_words
<derivgraph.addresses.AtAddresses.take_words>`, :meth:`Addresses.rows
<derivgraph.addresses.Addresses.rows>`) instead of a second exact compare and read. Asserted:
the words taken are the ones its own check reads (the same places, the same values), they
catch a re-pointed tensor, and each refusal (other tensor at the same address, other address,
no proven words, other ``hold``, other count) leaves the check to read its own; where the
table's words are refused at ``prepare``, the startup check still takes its own."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph import compile_plan
from derivgraph.addresses import Addresses, AtAddresses, addresses
from derivgraph.runtime.storage import BoundTensors
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

pytestmark = pytest.mark.skipif(not addresses_module.AVAILABLE,
                                reason="the storage words are not proven on this torch build")


def _places(words: Addresses) -> tuple[Any, ...]:
    """The memory each word is read from, the expected values, and the tensors held."""
    return (words._expected, (words._impls.ctypes.data + 8 * words._impl_index).tolist(),
            (words._stores.ctypes.data + 8 * words._store_index).tolist(),
            list(map(id, words.tensors)))


def test_prepare_takes_the_startup_words_from_the_holders_check(monkeypatch):
    read: list[int] = []
    real = addresses_module.addresses
    monkeypatch.setattr(addresses_module, "addresses",
                        lambda tensors, hold=True, shared=False: read.append(len(tensors))
                        or real(tensors, hold, shared))
    model = scaling_model(8)
    plan = compile_plan(model, [scaling_spec()])
    startup, table = plan.tensors.startup_addresses(), plan.holders.table.addresses()
    sources = plan.holders._source_checks[2]
    assert 0 < len(startup) < len(table)
    # the sources', their joint check with the startup tensors' (Holders._at_addresses), the
    # table's: no read of the startup tensors' own
    assert read == [len(sources), len(sources) + len(startup), len(table)]
    assert startup.words is not None and startup.words is not table.words
    assert _places(startup.words) == _places(real(startup.tensors, hold=False))
    assert plan.tensors.restore_storage() == []
    moved = startup.tensors[3]
    moved.data = moved.detach().clone()  # re-pointed, the same values
    assert not startup.words.kept() and not startup.intact()
    assert len(plan.tensors.restore_storage()) == 1
    assert startup.intact()


def test_prepare_falls_back_to_the_startup_check_where_the_words_are_refused(monkeypatch):
    monkeypatch.setattr(BoundTensors, "take_startup_words", lambda self, proven, entries: False)
    plan = compile_plan(scaling_model(8), [scaling_spec()])
    startup = plan.tensors.startup_addresses()
    assert startup.words is not None  # its own full check took them
    assert _places(startup.words) == _places(addresses(startup.tensors, hold=False))


def _proven(hold: bool = False) -> tuple[list[torch.Tensor], AtAddresses]:
    base = torch.arange(8.0)
    tensors = [base, base[:], torch.zeros(3, 2).t(), torch.ones(5)]  # base[:]: base's address
    proven = AtAddresses(tensors, [t.data_ptr() for t in tensors], hold=hold)
    assert proven.intact() and proven.words is not None
    return tensors, proven


def test_the_marked_tensors_take_the_proven_words():
    tensors, proven = _proven()
    a, _, c, _ = tensors
    check = AtAddresses([a, c], [a.data_ptr(), c.data_ptr()])
    assert check.take_words(proven, b"\x01\x00\x01\x00")
    assert _places(check.words) == _places(addresses([a, c], hold=False))
    assert check.intact()
    c.data = torch.zeros(3, 2).t()  # re-pointed: the taken words see it
    assert not check.words.kept() and not check.intact()


@pytest.mark.parametrize("case", ["other-tensor-same-address", "other-address", "unproven",
                                  "other-hold", "more-marked", "short-mask", "taken"])
def test_canary_take_words_refuses(case):
    tensors, proven = _proven()
    a, _, c, _ = tensors
    mask, ptrs = b"\x01\x00\x01\x00", [a.data_ptr(), c.data_ptr()]
    hold = False
    if case == "other-tensor-same-address":
        mask = b"\x00\x01\x01\x00"  # base[:] at base's address: not the same tensor
    elif case == "other-address":
        ptrs = [a.data_ptr(), c.data_ptr() + 4]
    elif case == "unproven":
        proven = AtAddresses(tensors, [t.data_ptr() for t in tensors])  # no words yet
    elif case == "other-hold":
        hold = True
    elif case == "more-marked":
        mask = b"\x01\x00\x01\x01"
    elif case == "short-mask":
        mask = b"\x01\x00\x01"
    check = AtAddresses([a, c], ptrs, hold=hold)
    if case == "taken":
        assert check.intact()  # its own words, taken once
    words = check.words
    assert not check.take_words(proven, mask)
    assert check.words is words  # nothing changed
    # its own check decides, and takes its own words where it passes
    assert check.intact() is (case != "other-address")
    assert (check.words is not None) is (case != "other-address")

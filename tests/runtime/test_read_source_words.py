"""The sources' addresses read once, from their words, and those words handed on
(``addresses.read_addresses``, ``AtAddresses.offer``).

The compile's startup record reads every source's storage words (one gather) and computes each
source's ``data_ptr()`` from them (``Addresses.ptrs``); the holders' source check takes those
very words (``AtAddresses.offer``: its very tensors, in order; its first compare takes them
where unchanged and at its addresses)
instead of reading them again at ``prepare``. The addresses are the ones ``data_ptr()`` gives
(views at an offset, empty tensors, parameters), the check still fails on a source moved
after the compile, and anything ``offer`` cannot prove is refused. Canaries (each turned a test
here red): ``offer`` without its identity sweep, ``Addresses.ptrs`` without the offset term or
without the empty-tensor rule, ``Holders.bind`` not offering.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import derivgraph.addresses as addresses_module
from derivgraph import compile_plan
from derivgraph.addresses import AVAILABLE, AtAddresses, data_ptrs, read_addresses
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

pytestmark = pytest.mark.skipif(not AVAILABLE or addresses_module._NUMEL is None,
                                reason="storage words not proven on this build")


def _mixed() -> list[Any]:
    base = torch.arange(40.0)
    return [torch.ones(3), base[7:], base[3:9], torch.zeros(2, 5).t(),
            torch.nn.Parameter(torch.ones(4)), torch.empty(0), base[40:],
            torch.zeros(6, dtype=torch.float16)[1:], torch.zeros(3, dtype=torch.int64)[2:]]


def test_the_addresses_are_data_ptr_and_the_words_come_back() -> None:
    values = _mixed()
    ptrs, words = read_addresses(values)
    assert ptrs == [t.data_ptr() for t in values] == data_ptrs(values)
    assert ptrs[5] == 0 and ptrs[6] == 0  # no element: data_ptr() is 0
    assert ptrs[1] == values[1].untyped_storage().data_ptr() + 7 * 4
    assert words is not None and words.tensors == values and words.storages == []
    assert words.kept() and words.at(ptrs)


def test_meta_or_a_class_of_its_own_is_read_as_data_ptrs() -> None:
    class Own(torch.Tensor):
        pass

    for values in ([torch.ones(2), torch.empty(3, device="meta")],
                   [torch.ones(2), torch.ones(3).as_subclass(Own)]):
        ptrs, words = read_addresses(values)
        assert words is None
        assert ptrs == data_ptrs(values)
    # the caller's proof that a value is off the meta device is taken (its is_meta not read)
    ptrs, words = read_addresses([torch.ones(2)], bytes(1))
    assert words is not None and ptrs == [words.tensors[0].data_ptr()]


def test_offer_takes_the_words_of_its_very_tensors() -> None:
    values = _mixed()
    ptrs, words = read_addresses(values)
    at = AtAddresses(values, ptrs)
    assert at.offer(words) and at.words is None  # nothing read, nothing taken yet
    assert at.intact() and at.words is words  # the first compare took them (one gather)
    assert at.proven()
    assert not at.offer(words)  # taken once
    with torch.no_grad():
        values[0].set_(torch.ones(3))  # moved: the words say "look", the compare says moved
    assert not at.proven() and not at.intact()


def test_offer_takes_the_rows_of_the_first_tensors() -> None:
    values = _mixed()
    ptrs, words = read_addresses(values)
    at = AtAddresses(values[:4], ptrs[:4])
    assert at.offer(words) and at.intact()
    assert at.words is not words and at.words.tensors == values[:4]
    assert at.proven()
    values[2].data = torch.zeros(6)  # another storage
    assert not at.proven() and not at.intact()


@pytest.mark.parametrize("case", ["other tensor", "same address", "other ptr", "held", "order",
                                  "moved since"])
def test_offer_refuses_what_it_cannot_prove(case: str) -> None:
    values = _mixed()
    ptrs, words = read_addresses(values)
    tensors, want = list(values), list(ptrs)
    hold = False
    if case == "other tensor":
        tensors[3] = tensors[3].clone()  # another object (at another address)
        want[3] = tensors[3].data_ptr()
    elif case == "same address":  # another object at the very address (its words its own)
        tensors[0] = tensors[0].view(3)
        assert tensors[0].data_ptr() == want[0]
    elif case == "other ptr":
        want[0] += 4
    elif case == "held":
        hold = True  # words holding no storage for a check that must hold them
    elif case == "order":
        tensors[0], tensors[2] = tensors[2], tensors[0]
        want[0], want[2] = want[2], want[0]
    else:  # moved after the words were read: the words give the old address, not this one
        with torch.no_grad():
            tensors[0].set_(torch.ones(3))
        want[0] = tensors[0].data_ptr()
    at = AtAddresses(tensors, want, hold=hold)
    if case in ("other ptr", "moved since"):  # offered, but the first compare refuses them
        assert at.offer(words)
        assert at.intact() is (case == "moved since")  # the exact compare decides
        assert at.words is not words  # (words read afresh after an exact pass)
        return
    assert not at.offer(words)
    assert at.words is None and not at.proven()


def _plan(layers: int = 6, stamp: bool = True) -> Any:
    torch.manual_seed(0)
    with stamping(stamp):
        return compile_plan(scaling_model(layers), [scaling_spec()])


@pytest.mark.parametrize("stamp", [True, False])
def test_the_compile_reads_the_sources_words_once(stamp: bool, monkeypatch: Any) -> None:
    made: list[int] = []
    real = addresses_module.addresses

    def counted(tensors: Any, hold: bool = True, shared: bool = False) -> Any:
        made.append(len(tensors))
        return real(tensors, hold, shared)

    monkeypatch.setattr(addresses_module, "addresses", counted)
    plan = _plan(stamp=stamp)
    sources = list(plan.tensors.sources.values())
    at = plan.holders._source_checks[2]
    assert at.tensors == sources and at.ptrs == [t.data_ptr() for t in sources]
    assert at.proven()  # its words: taken at the compile, proven at prepare
    assert made.count(len(sources)) == 1  # read once (the record), offered to the check
    assert plan.moved() == []


@pytest.mark.parametrize("how", ["set_", "data", "storage resized"])
def test_a_source_moved_after_the_compile_fails_the_check(how: str) -> None:
    plan = _plan()
    path, tensor = next(iter(plan.tensors.sources.items()))
    assert plan.holders.sources_intact()
    with torch.no_grad():
        if how == "set_":
            tensor.set_(torch.zeros_like(tensor))
        elif how == "data":
            tensor.data = torch.zeros_like(tensor)
        else:
            tensor.untyped_storage().resize_(tensor.untyped_storage().nbytes() + 4096)
    assert not plan.holders.sources_intact()
    assert path in plan.moved()


def test_offered_words_of_a_tensor_moved_since_are_not_taken() -> None:
    values = _mixed()
    ptrs, words = read_addresses(values)
    at = AtAddresses(values, ptrs)
    assert at.offer(words)
    with torch.no_grad():
        values[1].set_(torch.zeros(33))  # moved after the words were read, before the check
    assert not at.intact()  # the offered words give the old address: not taken, compared
    assert at.words is None

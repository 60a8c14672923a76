"""Endurance: 100 consecutive reloads with alternating weights keep every address and memory
flat and every replay bit-exact with a cold start (CPU here; CUDA with ``-m gpu``)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest
import torch

from derivgraph import compile_plan, load_specs
from derivgraph.tools.forward_capture import capture
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)

CFG = RefConfig()
RELOADS = 100


def _live_tensors() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if issubclass(type(o), torch.Tensor))


def _rss() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def _endure(device: str) -> dict[str, list[int]]:
    weights = [make_weights(CFG, 10), make_weights(CFG, 20)]
    x = torch.randn(5, CFG.hidden, generator=torch.Generator().manual_seed(1)).to(device)
    cold = [capture(build_reference_model(w, device), x).replay().clone() for w in weights]
    assert not torch.equal(cold[0], cold[1])
    model = build_reference_model(weights[0], device)
    plan = compile_plan(model, load_specs([reference_spec_path()]), require_match=True)
    startup = {k: (id(e.storage), e.startup_ptr) for k, e in plan.entries.items()}
    params = {n: (id(t), t.data_ptr()) for n, t in model.named_parameters()}
    graph = capture(model, x.clone())
    trace: dict[str, list[int]] = {"tensors": [], "rss": [], "cuda": []}
    for i in range(RELOADS):
        which = (i + 1) % 2
        model.load_weights(weights[which])
        if i % 2 == 0:  # alternate: engine post-load + refill, and the recompute pass alone
            model.process_weights_after_loading()
            report = plan.refill(verify=True)
        else:
            report = plan.run(verify=True)
        assert report.moved == [], (i, report.moved)
        out = graph.replay()
        assert torch.equal(out, cold[which]), i
        del out
        assert {k: (id(e.storage), e.startup_ptr) for k, e in plan.entries.items()} == startup
        assert {n: (id(t), t.data_ptr()) for n, t in model.named_parameters()} == params
        if i % 10 == 9:
            trace["tensors"].append(_live_tensors())
            trace["rss"].append(_rss())
            if device == "cuda":
                torch.cuda.synchronize()
                trace["cuda"].append(torch.cuda.memory_allocated())
    return trace


def test_hundred_reloads_keep_addresses_and_memory_flat_cpu():
    trace = _endure("cpu")
    # after the first 10 reloads (warm-up) the number of live tensors never changes ...
    assert len(set(trace["tensors"][1:])) == 1, trace["tensors"]
    # ... and the process does not grow by more than allocator noise
    assert trace["rss"][-1] - trace["rss"][1] < 32 * 2 ** 20, trace["rss"]


@pytest.mark.gpu
def test_hundred_reloads_keep_addresses_and_memory_flat_cuda():
    trace = _endure("cuda")
    # torch.cuda.memory_allocated() after reloads 20, 30, ..., 100: identical
    assert len(set(trace["cuda"][1:])) == 1, trace["cuda"]
    assert len(set(trace["tensors"][1:])) == 1, trace["tensors"]

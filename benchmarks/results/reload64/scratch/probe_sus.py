"""Dropped idea: which items the guard's raw-word proof suspects per reload (reloads 28-39
after start-up): the same list every reload once the tables settled, so the last answer is reused.

    PYTHONPATH=. python3 benchmarks/results/reload64/scratch/probe_sus.py
"""

import logging
import os
import tempfile
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
import torch
from vllm.model_executor.model_loader.reload import inplace

from derivgraph import dict_slots as ds
from derivgraph.guard import sweep as sw

logging.basicConfig(level=logging.WARNING)
orig = ds.DictSlots.suspects
log = []


def spy(self):
    last = self._last
    r = orig(self)
    log.append((None if r is None else tuple(r), last is not None and self._last is last))
    return r


ds.DictSlots.suspects = spy
od = sw._Gather.differing


def spy2(self):
    c0 = self.columns[0]
    r = od(self)
    log.append(("columns rebuilt", self.columns[0] is not c0, "hits", len(r)))
    return r


sw._Gather.differing = spy2
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(40):
        log.clear()
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        for x in log if i >= 28 else []:
            print(i, x if len(str(x)) < 300 else (len(x[0]) if x[0] else x[0], x[1], hash(x[0])))

"""Which watched dict items the guard finds changed after one vLLM reload of the tiny Llama. Usage: PYTHONPATH=$PWD python3 benchmarks/results/s45/guard_hits.py"""
import os, sys, tempfile, time, logging
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
logging.basicConfig(level=logging.WARNING)
import torch
torch.set_num_threads(1)
from vllm.model_executor.model_loader.reload import inplace
from vllm_integration import session
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    plan = session.plan_for(model)
    guard = session.state_for(model).guard
    sweep = guard.watch.sweep
    print("watched containers", len(sweep.live), "accessors", len(sweep.acc_values),
          "tags", sweep.tags is not None, "lists", len(sweep.lists))
    orig = type(sweep)._compare
    def spy(self, dicts):
        r = orig(self, dicts)
        g = self._gather(tuple(sorted(dicts)))
        print("compare dicts", len(dicts), "items", len(g.acc), "resized", len(r[0]), "wrong", len(r[1]))
        return r
    type(sweep)._compare = spy
    for i in range(3):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    # what kinds of dicts moved
    import collections
    kinds = collections.Counter(type(sweep.live[i]).__name__ for i in range(len(sweep.live)))
    print(kinds)
    print("modules", sum(1 for _ in model.modules()), "params", sum(1 for _ in model.parameters()))
    type(sweep)._compare = orig
    got = {}
    def spy3(self, dicts):
        r = orig(self, dicts)
        got['w'] = [self.acc_keys[j] for j in r[1]]
        return r
    type(sweep)._compare = spy3
    with torch.no_grad():
        inplace.reload_weights(vc, model, iter(weights[0].items()), None, True)
    print("hit keys", got['w'])

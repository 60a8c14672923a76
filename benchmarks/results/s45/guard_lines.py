"""The guard survey of the tiny Llama, timed line by line inside 200 real vLLM reloads (cold caches: each reload streams the weights first). Usage: PYTHONPATH=$PWD python3 benchmarks/results/s45/guard_lines.py"""
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
    import time, statistics
    from itertools import repeat
    from derivgraph.guard import sweep as SW
    T = {}
    def tick(name, t0):
        T.setdefault(name, []).append(time.perf_counter_ns() - t0)
    def _compare(self, dicts):
        t0 = time.perf_counter_ns()
        order = tuple(sorted(dicts))
        gather = self._gather(order)
        tick("c.sort+gather", t0); t0 = time.perf_counter_ns()
        lens = list(map(len, gather.dicts))
        resized = [] if lens == gather.lengths else [
            i for i, n, was in zip(order, lens, gather.lengths) if n != was]
        tick("c.lens", t0); t0 = time.perf_counter_ns()
        acc, ds, keys = gather.acc, gather.acc_dicts, gather.acc_keys
        flags = list(map(SW._is, map(SW._get, ds, keys, repeat(SW.MISSING, len(acc))), gather.acc_values))
        tick("c.sweep", t0); t0 = time.perf_counter_ns()
        hits = SW._mismatches(flags)
        tick("c.mism", t0); t0 = time.perf_counter_ns()
        if not hits:
            return resized, [], []
        r = resized, [acc[j] for j in hits], [ds[j].get(keys[j], SW.MISSING) for j in hits]
        tick("c.hits", t0)
        return r
    def _dirty_tagged(self, tags):
        t0 = time.perf_counter_ns()
        ch = tags.changed()
        tick("d.tags", t0); t0 = time.perf_counter_ns()
        moved = self.recheck.union(map(self.tagged.__getitem__, ch))
        self.read, self.differ = moved, set()
        dirty = set(); resized = []
        tick("d.union", t0)
        if moved:
            t0 = time.perf_counter_ns()
            resized, wrong, now = self._compare(moved)
            tick("d.compare", t0); t0 = time.perf_counter_ns()
            templates, owners = self.acc_templates, self.acc_container
            dirty = {owners[b] for b, v in zip(wrong, now)
                     if templates[b] is None or not SW.harmless(templates[b], v)}
            self.differ = {*resized, *map(owners.__getitem__, wrong)}
            tick("d.harmless", t0)
        t0 = time.perf_counter_ns()
        live, lens, position = self.live, self.lens, self.position
        if self.lists:
            self._lists(dirty, [i for i in self.lists if len(live[i]) != lens[position[i]]])
        r = dirty, [i for i in resized if i not in dirty] if resized else resized
        tick("d.rest", t0)
        return r
    type(sweep)._compare = _compare
    type(sweep)._dirty_tagged = _dirty_tagged
    W = type(guard.watch)
    osurvey = W.survey
    def survey(self):
        t0 = time.perf_counter_ns(); r = osurvey(self); tick("survey", t0); return r
    W.survey = survey
    G = type(guard)
    orestore = G.restore
    def restore(self, *a, **k):
        t0 = time.perf_counter_ns(); r = orestore(self, *a, **k); tick("restore", t0); return r
    G.restore = restore
    for i in range(200):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for k, v in T.items():
        print(f"{k:16s} n={len(v):4d} median {statistics.median(v)/1e3:8.1f} us  q10 {sorted(v)[len(v)//10]/1e3:8.1f}")

"""In one process: per reload, the base (eb637cd) or this branch's implementation of the changed
functions, alternating; thread CPU time of the plugin's pieces."""
import os, sys, gc, tempfile, logging, statistics, time, json
from pathlib import Path
from itertools import chain, repeat
ROOT = Path(os.getcwd())
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
logging.basicConfig(level=logging.WARNING)
sys.path.insert(0, str(ROOT))
import numpy as np
import torch
torch.set_num_threads(1)
from vllm.model_executor.model_loader.reload import inplace
from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm
from vllm_integration import session
from derivgraph.guard import sweep as swm, addresses as adm
from derivgraph.guard.holders import MISSING
from derivgraph import dict_versions as dvm
from derivgraph.runtime import holders as hm

def _all_same(dicts, keys, values):
    if list(map(len, dicts)) != list(map(len, values)):
        return False
    return all(map(swm._is, chain.from_iterable(map(dict.values, dicts)), chain.from_iterable(values))) and all(
        map(swm._is, chain.from_iterable(dicts), chain.from_iterable(keys)))

def old_compare(self, dicts):
    live, keys, values = self.live, self.keys, self.values
    order = sorted(dicts)
    if _all_same(list(map(live.__getitem__, order)), list(map(keys.__getitem__, order)), list(map(values.__getitem__, order))):
        return [], [], []
    order = [i for i in order if not swm._same(live[i], keys[i], values[i])]
    resized = [i for i, n, was in zip(order, map(len, map(self.live.__getitem__, order)), map(self.length.__getitem__, order)) if n != was]
    acc = list(chain.from_iterable(map(self.acc_of.__getitem__, order)))
    now = list(map(swm._get, map(self.acc_dicts.__getitem__, acc), map(self.acc_keys.__getitem__, acc), repeat(MISSING, len(acc))))
    flags = list(map(swm._is, now, map(self.acc_values.__getitem__, acc)))
    hits = swm._mismatches(flags)
    return resized, [acc[j] for j in hits], [now[j] for j in hits]

def old_changed(self):
    if self._tags is None: return []
    self._last = now = self._read()
    return np.flatnonzero(now != self._tags).tolist()

def old_kept(self):
    impls, stores = self._expected
    return bool(np.array_equal(self._impls[self._impl_index], impls)) and bool(np.array_equal(self._stores[self._store_index], stores))

def old_addr(tensors, ptrs):
    return list(map(torch.Tensor.data_ptr, tensors)) == ptrs

new = dict(c=swm.Sweep._compare, ch=dvm.DictVersions.changed, k=adm.Addresses.kept, a=hm._addresses_equal)
def use(which):
    o = which == "base"
    swm.Sweep._compare = old_compare if o else new["c"]
    dvm.DictVersions.changed = old_changed if o else new["ch"]
    adm.Addresses.kept = old_kept if o else new["k"]
    hm._addresses_equal = old_addr if o else new["a"]

now = time.thread_time_ns
T = {}
cur = ["base"]
def wrap(owner, name, label):
    fn = getattr(owner, name)
    def w(*a, **k):
        s = now()
        try: return fn(*a, **k)
        finally: T.setdefault((cur[0], label), []).append((now() - s) / 1e3)
    setattr(owner, name, w)
N = int(sys.argv[1])
times = {"off": [], "base": [], "branch": []}
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    st = session.state_for(model)
    wrap(session, "complete", "complete")
    wrap(st.guard, "restore", "guard.restore")
    wrap(st.guard.watch, "survey", "guard.survey")
    wrap(st.plan.holders, "sources_intact", "sources_intact")
    wrap(type(st.plan), "refill", "plan.refill")
    def reload(i, v):
        cur[0] = v
        if v != "off": use(v)
        os.environ["DERIVGRAPH_VLLM_MODE"] = "off" if v == "off" else "refill"
        s = now()
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        return (now() - s) / 1e6
    for v in times: reload(1, v)
    T.clear(); gc.collect(); gc.freeze()
    variants = list(times)
    for i in range(N):
        for v in (variants if i % 2 == 0 else variants[::-1]):
            times[v].append(reload(i, v))
    use("branch"); reload(0, "branch"); moved = st.plan.moved()
out = {"repeat": N, "moved_after": len(moved), "reload_ms": {}, "pieces_us": {}}
for v, t in times.items():
    out["reload_ms"][v] = {"median": round(statistics.median(t), 3), "min": round(min(t), 3)}
for v in ("base", "branch"):
    out["reload_ms"][v]["paired_cost_median_us"] = round(statistics.median([(a - b) * 1e3 for a, b in zip(times[v], times["off"])]), 1)
    out["reload_ms"][v]["ratio_median"] = round(statistics.median(times[v]) / statistics.median(times["off"]), 3)
for (v, k), t in sorted(T.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    if v == "off": continue
    out["pieces_us"][f"{k} [{v}]"] = {"median": round(statistics.median(t), 1), "q10": round(statistics.quantiles(t, n=10)[0], 1), "min": round(min(t), 1)}
out["runs_ms"] = {k: [round(x, 3) for x in v] for k, v in times.items()}
Path(sys.argv[2]).write_text(json.dumps(out, indent=2) + "\n")
print(json.dumps({k: v for k, v in out.items() if k != "runs_ms"}, indent=1))

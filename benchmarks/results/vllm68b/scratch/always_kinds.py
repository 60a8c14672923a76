"""Scratch: the guard's `_always` items on the tiny Llama, per reload: is the dict's table
replaced (ma_keys), its layout the same, each item at the same entry index, and at the entry
its key's index slot (first probe) names? (what a relative / index-slot word rule would prove)"""
import os, tempfile, collections
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch
torch.set_num_threads(1)
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
from derivgraph import dict_slots as ds

def table(d):
    t = ds._Table(d)
    return t.keys, t.values, t.layout, dict(t.index)

with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    from vllm_integration import session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    guard = session.state_for(model).guard
    def reload(i):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for i in range(30):
        reload(i)
    g = guard.watch.sweep.gathers[guard.watch.sweep.whole]
    s = g.slots
    al = set(s._always)
    tabs = [t for t, items in enumerate(s._items) if any(j in al for j in items)]
    print("always", len(al), "in tables", len(tabs), "types", collections.Counter(type(s._dicts[t]).__name__ for t in tabs))
    c = collections.Counter()
    for i in range(30, 42):
        before = {t: table(s._dicts[t]) for t in tabs}
        reload(i)
        for t in tabs:
            b, a = before[t], table(s._dicts[t])
            for j in s._items[t]:
                if j not in al:
                    continue
                k = id(s._keys[j])
                c[("replaced" if b[0] != a[0] else "same table", "layout same" if b[2] == a[2] else "layout differs",
                   "split" if a[1] else "combined",
                   "same entry" if b[3].get(k) == a[3].get(k) else "moved entry",
                   "value same" if s._dicts[t].get(s._keys[j]) is not None and id(s._dicts[t].get(s._keys[j])) == s._value_ids[j] else "value differs")] += 1
    for k, v in c.most_common():
        print(v, k)

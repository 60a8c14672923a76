"""Scratch: the guard's `_always` items on the tiny Llama: their dicts, keys, and how each dict's
table changes across reloads (heads, entry index of the key, nentries, usable)."""
import os, sys, tempfile, ctypes
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
    n = ds._word(t.keys + ds._NENTRIES)
    usable = ds._word(t.keys + 16)
    return t.keys, t.values, t.layout, n, usable, dict(t.index)

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
    sweep = guard.watch.sweep; g = sweep.gathers[sweep.whole]
    s = g.slots
    print("items", len(s._keys), "dicts", len(s._dicts), "always", len(s._always), "proves", s._proves)
    al = set(s._always)
    byd = {}
    for t, items in enumerate(s._items):
        a = [j for j in items if j in al]
        if a:
            byd[t] = a
    for t, a in byd.items():
        d = s._dicts[t]
        print(f"dict {t} len {len(d)} proves {s._proves[t]} items {len(s._items[t])} always {len(a)} keys {[s._keys[j] for j in a][:6]} owner-ish {type(d).__name__}")
    # track tables across reloads
    ts = list(byd)
    for i in range(30, 36):
        before = {t: table(s._dicts[t]) for t in ts}
        reload(i)
        for t in ts[:4]:
            b, a = before[t], table(s._dicts[t])
            d = s._dicts[t]
            keyidx = [(s._keys[j], b[5].get(id(s._keys[j])), a[5].get(id(s._keys[j])), s._value_ids[j] == id(d.get(s._keys[j]))) for j in byd[t]][:3]
            print(i, t, "keys same", b[0] == a[0], "values", b[1] == a[1], "n", b[3], a[3], "usable", b[4], a[4], keyidx)

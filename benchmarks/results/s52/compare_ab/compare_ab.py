"""In situ A/B of the guard's moved-dict compare (``Sweep._compare``) on the tiny vLLM Llama.

Reloads alternate between the library's compare (every swept item read by ``dict.get``) and an
alternative (the moved dicts' keys and values read in two sequential sweeps, the swept items
picked by position, where the keys are those of the first such read; else ``dict.get``). Each
call is timed with the thread's CPU clock right after vLLM's reload, as the plugin calls it;
after the alternative's timing the library's compare runs too and the answers must be equal.

    PYTHONPATH=$PWD python3 benchmarks/results/s52/compare_ab/compare_ab.py 301
"""

import gc
import logging
import operator
import os
import statistics
import sys
import tempfile
import time
from itertools import chain, repeat
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from derivgraph.guard.holders import MISSING  # noqa: E402
from derivgraph.guard.sweep import Sweep, _mismatches  # noqa: E402

_is, _get = operator.is_, dict.get
original = Sweep._compare
layouts: dict[int, tuple[list, list[int]]] = {}  # per gather: flat keys, each accessor's position


def alternative(self, dicts):
    order = tuple(sorted(dicts))
    gather = self._gather(order)
    lens = list(map(len, gather.dicts))
    resized = [] if lens == gather.lengths else [
        i for i, n, was in zip(order, lens, gather.lengths) if n != was]
    acc, ds, keys = gather.acc, gather.acc_dicts, gather.acc_keys
    layout = layouts.get(id(gather))
    flat = list(chain.from_iterable(gather.dicts))
    if layout is None:
        where = {}
        offset = 0
        for d in gather.dicts:
            for k_i, k in enumerate(d):
                where[(id(d), k)] = offset + k_i
            offset += len(d)
        layout = layouts[id(gather)] = (flat, [where.get((id(d), k), -1) for d, k in zip(ds, keys)])
    if flat == layout[0] and -1 not in layout[1]:
        values = list(chain.from_iterable(map(dict.values, gather.dicts)))
        hits = _mismatches(list(map(_is, map(values.__getitem__, layout[1]), gather.acc_values)))
    else:
        hits = _mismatches(list(map(_is, map(_get, ds, keys, repeat(MISSING, len(acc))),
                                    gather.acc_values)))
    if not hits:
        return resized, [], []
    return resized, [acc[j] for j in hits], [ds[j].get(keys[j], MISSING) for j in hits]


times = {"library": [], "alternative": []}
calls = [0]


def timed(self, dicts):
    arm = "library" if calls[0] % 2 == 0 else "alternative"
    calls[0] += 1
    start = time.thread_time_ns()
    got = (original if arm == "library" else alternative)(self, dicts)
    times[arm].append((time.thread_time_ns() - start) / 1e3)
    if arm == "alternative":
        want = original(self, dicts)
        assert got == want, (got, want)
    return got


Sweep._compare = timed
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
reloads = int(sys.argv[1]) if len(sys.argv) > 1 else 301
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    gc.collect()
    gc.freeze()
    for i in range(reloads):
        calls[0] = i  # one arm per reload (settle's compare, if any, takes the same arm)
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
for arm, values in times.items():
    values = values[10:]
    print(f"{arm:12s} calls {len(values)}  median {statistics.median(values):7.1f} us  "
          f"q10 {sorted(values)[len(values) // 10]:7.1f}  min {min(values):7.1f}")
print("layouts", {k: (len(v[0]), len(v[1])) for k, v in layouts.items()})

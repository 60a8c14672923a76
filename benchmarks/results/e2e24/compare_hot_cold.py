"""The guard's moved-dict read (``Sweep._compare``) in situ, cold against hot: each call right
after a plugin reload is timed (thread CPU), then the same call is repeated at once (hot), on
the tiny vLLM Llama; also which dicts vLLM's reload moves and how many items are read (e2e24).

    PYTHONPATH=. python3 benchmarks/results/e2e24/compare_hot_cold.py [RELOADS] [OUT.json]
"""
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(os.getcwd())
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
logging.basicConfig(level=logging.ERROR)
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402

torch.set_num_threads(1)
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from derivgraph.guard.sweep import Sweep  # noqa: E402
from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm  # noqa: E402
from vllm_integration import session  # noqa: E402

T = time.thread_time_ns
N = int(sys.argv[1]) if len(sys.argv) > 1 else 120
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    plan = session.plan_for(model)
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    guard = session.state_for(model).guard
    sweep = guard.watch.sweep
    orig = Sweep._compare
    rec = []

    def timed(self, dicts):
        t0 = T()
        out = orig(self, dicts)
        t1 = T()
        orig(self, dicts)
        rec.append(((t1 - t0) / 1e3, (T() - t1) / 1e3, len(dicts),
                    len(self._gather(tuple(sorted(dicts))).acc)))
        return out

    Sweep._compare = timed
    for i in range(N):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    rec = rec[10:]
    kinds = Counter()
    for i in sorted(sweep.read):
        node = guard.watch.owner[i]
        which = "__dict__" if sweep.live[i] is getattr(node.obj, "__dict__", None) else "registry"
        kinds[f"{type(node.obj).__name__} {which}: {len(sweep.acc_of[i])} items"] += 1
    out = {"reloads": len(rec), "clock": "thread CPU",
           "cold_us_median": statistics.median(r[0] for r in rec),
           "hot_us_median": statistics.median(r[1] for r in rec),
           "moved_dicts": rec[-1][2], "items_read": rec[-1][3],
           "tagged_dicts": len(sweep.tagged), "swept_items_total": len(sweep.acc_dicts),
           "moved_by_kind": dict(kinds), "moved_after": plan.moved(),
           "load_after": os.getloadavg(), "runs_us": rec}
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "runs_us"}, indent=1))  # noqa: T201

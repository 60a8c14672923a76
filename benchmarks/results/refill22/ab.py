"""In-process A/B of the completion: alternate variant A (old) and B (new) per reload, paired
thread-CPU deltas of session._complete (refill22 helper). usage: ab.py VARIANTS_MODULE N [JSON]
(AB_WHOLE=1, e2e28: time the whole reload_weights call instead, for variants that act inside
vLLM's reload, outside the completion.)"""
import os, sys, time, gc, tempfile, logging, statistics, importlib.util, random
from pathlib import Path
ROOT = Path(os.getcwd())
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
logging.basicConfig(level=logging.ERROR)
sys.path.insert(0, str(ROOT))
import torch
torch.set_num_threads(1)
from vllm.model_executor.model_loader.reload import inplace
from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm
from vllm_integration import session
spec = importlib.util.spec_from_file_location("variants", sys.argv[1]); V = importlib.util.module_from_spec(spec); spec.loader.exec_module(V)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    plan = session.plan_for(model)
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    orig = session._complete
    cur = []
    def timed(*a, **k):
        s = time.thread_time_ns(); out = orig(*a, **k); cur.append((time.thread_time_ns() - s) / 1e3); return out
    session._complete = timed
    whole = os.environ.get("AB_WHOLE") == "1"

    def reload(i):
        it = iter(weights[i % 2].items())
        s = time.thread_time_ns()
        with torch.no_grad():
            inplace.reload_weights(vc, model, it, None, True)
        if whole:
            cur[:] = [(time.thread_time_ns() - s) / 1e3]
    res = {"A": [], "B": []}
    for i in range(4):
        V.use("A" if i % 2 else "B", plan, model); reload(i)
    gc.collect(); gc.freeze()
    for i in range(N):
        order = ("A", "B") if i % 2 == 0 else ("B", "A")
        for arm in order:
            V.use(arm, plan, model); cur.clear(); reload(i); res[arm].append(cur[0])
    d = sorted(b - a for a, b in zip(res["A"], res["B"]))
    rng = random.Random(0)
    boots = sorted(statistics.median(rng.choices(d, k=len(d))) for _ in range(2000))
    print(f"A med {statistics.median(res['A']):.1f}  B med {statistics.median(res['B']):.1f}  paired B-A med {statistics.median(d):.1f} us  CI [{boots[50]:.1f}, {boots[1950]:.1f}]  load {os.getloadavg()[0]:.1f}")
    print("moved", plan.moved())
    if len(sys.argv) > 3:
        import json
        Path(sys.argv[3]).write_text(json.dumps({"variants": sys.argv[1], "rounds": N, "clock": "thread CPU", "A_us": res["A"], "B_us": res["B"], "paired_B_minus_A_median_us": statistics.median(d), "ci95": [boots[50], boots[1950]], "load_after": os.getloadavg(), "moved_after": plan.moved()}, indent=1) + "\n")

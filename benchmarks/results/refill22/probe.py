"""Inclusive thread-CPU medians of many pieces of the completion (refill22 helper)."""
import os, sys, time, gc, tempfile, logging, statistics
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
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
times = {}
def wrap(owner, name, label=None):
    label = label or f"{getattr(owner,'__name__',owner)}.{name}"
    isd = isinstance(owner, dict)
    fn = owner[name] if isd else getattr(owner, name)
    lst = times.setdefault(label, [])
    def t(*a, **k):
        s = time.thread_time_ns()
        try: return fn(*a, **k)
        finally: lst.append((time.thread_time_ns() - s) / 1e3)
    if isd: owner[name] = t
    else: setattr(owner, name, t)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    plan = session.plan_for(model)
    state = session.state_for(model)
    g = state.guard
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    def reload(i):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    import derivgraph.runtime.holders as H, derivgraph.runtime.accessors as A, derivgraph.runtime.plan as P
    import derivgraph.runtime.engine as E, derivgraph.runtime.storage as S, derivgraph.guard.guard as G
    import derivgraph.guard.watch as W, derivgraph.guard.sweep as SW, derivgraph.addresses as AD
    import derivgraph.runtime.watch as RW, derivgraph.runtime.programs as PR
    from vllm_integration import completion as C
    wrap(session, "_complete", "complete")
    for owner, names in [(P.Plan, ["refill", "_take_batched", "rebind", "_set_scalars"]),
                         (H.Holders, ["sources_intact", "owners_current", "_sources_held", "moved", "rebind", "owners_current_for", "note_read", "_rebind_stale"]),
                         (A.HopTable, ["refresh", "intact"]), (A.HolderTable, ["current", "intact", "at_startup_addresses", "stale", "rebind", "settle"]),
                         (E.RefillTable, ["take"]), (E.Taken, ["copy"]),
                         (S.BoundTensors, ["restore_storage", "staged"]),
                         (PR.Programs, ["execute"]),
                         (G.Guard, ["restore", "_plan_watched", "_moved_storage", "_report", "_apply"]),
                         (W.Watch, ["survey", "_dirty"]), (SW.Sweep, ["dirty", "_compare", "settle", "_lists"]),
                         (AD.AtAddresses, ["intact"]), (RW.ItemWatch, ["suspects", "settle"]),
                         (C, ["check_folds", "verify_spec_values", "restore_guard"])]:
        for n in names:
            wrap(owner, n)
    plan.programs.helpers  # bound methods captured already in bindings; wrap bindings too
    for h in ("take_engine_values", "execute", "set_scalars", "rebind", "restore_storage", "pass_for"):
        wrap(plan.bindings, h, "bind." + h)
    for i in range(3): reload(i)
    for v in times.values(): v.clear()
    gc.collect(); gc.freeze()
    for i in range(N): reload(i)
    for k, v in times.items():
        if v:
            n = len(v) / N
            print(f"{k:45s} x{n:4.1f}  med {statistics.median(v):7.1f}  q10 {statistics.quantiles(v, n=10)[0]:7.1f} us")
    print("moved", plan.moved(), "load", os.getloadavg())

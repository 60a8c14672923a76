"""In-process A/B of the plugin's session glue on the tiny vLLM Llama (refill after refill,
thread CPU): A = the base tree's ``vllm_integration.session``, ``completion``, ``config`` and
``hook_state`` (loaded from BASE, default ``/tmp/base69``), B = this tree's. The hooks reach
the session module through ``reload_wrappers._session()`` and ask ``reload_wrappers.active``:
each reload points both at one arm's modules (A B B A ...). Per
reload: the whole reload, and the glue (the time inside the session's entry points ``begin``,
``end``, ``note_names``, ``recording``, ``witness_note``, less ``Plan.refill`` and
``Guard.restore`` inside them; the same probes in both arms). Medians, q25, and in how many
pairs B was below A.

    PYTHONPATH=. python3 benchmarks/results/glue69/session_ab.py [PAIRS] [BASE]
"""
import gc
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch  # noqa: E402

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
base = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/base69")
now = time.thread_time_ns
torch.set_num_threads(1)


def load(name: str, path: Path, deps: dict) -> object:
    """``path`` as module ``name``, its ``vllm_integration.*`` imports resolved to ``deps``."""
    saved = {k: sys.modules.get(k) for k in deps}
    sys.modules.update(deps)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            sys.modules[k] = v
    return module


inside = [0]  # ns spent in the arm's entry points, less the two steady entries
depth = [0]


def probe(module, name: str) -> None:
    fn = getattr(module, name)

    def timed(*a, **k):
        depth[0] += 1
        start = now()
        try:
            return fn(*a, **k)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                inside[0] += now() - start
    setattr(module, name, timed)


def subtract(owner, name: str) -> None:
    fn = getattr(owner, name)

    def timed(*a, **k):
        start = now()
        try:
            return fn(*a, **k)
        finally:
            inside[0] -= now() - start
    setattr(owner, name, timed)


with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace

    from derivgraph.guard import Guard
    from derivgraph.runtime.plan import Plan
    from vllm_integration import hook_state, reload_wrappers, session
    home = base / "vllm_integration"
    b_config = load("base69_config", home / "config.py", {})
    deps = {"vllm_integration.config": b_config}
    b_hook_state = load("base69_hook_state", home / "hook_state.py", deps)
    b_hook_state.set_installed(True)
    b_completion = load("base69_completion", home / "completion.py", deps)
    b_session = load("base69_session", home / "session.py",
                     {**deps, "vllm_integration.completion": b_completion})
    arms = {"A": b_session, "B": session}
    actives = {"A": b_hook_state.active, "B": hook_state.active}
    for m in arms.values():
        for name in ("begin", "end", "note_names", "recording", "witness_note"):
            probe(m, name)
    subtract(Plan, "refill")
    subtract(Guard, "restore")
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    counters = session.state_for(model).counters

    def reload(i: int, arm: str) -> tuple[float, float]:
        module = arms[arm]
        reload_wrappers._session = lambda: module
        reload_wrappers.active = actives[arm]
        inside[0] = 0
        before = counters.reloads
        start = now()
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        whole = now() - start
        assert counters.reloads == before + 1 and counters.moved_last == 0
        return whole / 1e3, inside[0] / 1e3

    for i in range(40):
        reload(i, "AB"[i % 2])
    gc.collect()
    gc.freeze()
    rows = {"A": [], "B": []}
    i = 0
    for p in range(pairs):
        for arm in ("A", "B") if p % 2 == 0 else ("B", "A"):
            rows[arm].append(reload(i, arm))
            i += 1
    load_avg = os.getloadavg()
    print(f"load {load_avg[0]:.2f} {load_avg[1]:.2f}; {pairs} pairs, refill after refill, "
          f"thread CPU us (A = {base}, B = this tree)")
    for k, label in ((1, "glue"), (0, "whole reload")):
        a = [r[k] for r in rows["A"]]
        b = [r[k] for r in rows["B"]]
        won = sum(y < x for x, y in zip(a, b))
        print(f"  {label:13s} A median {statistics.median(a):9.1f} (q25 "
              f"{statistics.quantiles(a, n=4)[0]:9.1f})  B median {statistics.median(b):9.1f} "
              f"(q25 {statistics.quantiles(b, n=4)[0]:9.1f})  B below A in {won} of {pairs}")

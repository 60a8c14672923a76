"""The steady refill entry against the slow path on the tiny vLLM Llama: alternating weights,
each reload by the steady entry and then the same weights by the slow path
(``steady.ENABLED = False``), compared after each: every derived tensor and scalar
bit-identical, the reports equal (but ``seconds``), the session's counters equal, and the holder
state the run leaves equal; and how many reloads the steady entry ran without falling back.

    PYTHONPATH=. python3 benchmarks/results/refill66/steady_check.py [RELOADS]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")


def state(plan: Any, report: Any) -> dict[str, Any]:
    """What the run leaves that later readers use, relative to its report."""
    h = plan.holders

    def rel(x: Any) -> Any:
        if x is None:
            return None
        if x is report:
            return "report"
        if isinstance(x, tuple):
            return tuple(rel(v) for v in x)
        return type(x).__name__
    return {"rebound": rel(h._rebound), "sources_checked": rel(h._sources_checked),
            "startup_checked": rel(h.startup_checked), "after_checked": rel(h.after_checked),
            "owners_checked": rel(h._owners_checked), "read": rel(h._read),
            "at_startup": plan.tensors.at_startup,
            "constants_from_engine": plan._constants_from_engine,
            "last_take": (rel(plan._last_take[0]), plan._last_take[1])}


def _timeless(value: Any) -> Any:
    """``value`` with every ``seconds`` field left out (the only field that may differ)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if not k.startswith("seconds")}
    return value


def main(reloads: int) -> None:
    import torch

    from derivgraph.runtime import steady
    from derivgraph.runtime.plan import Plan
    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    runs: list[int] = []
    run = Plan.run

    def counted(self: Any, *a: Any, **k: Any) -> Any:
        runs.append(1)
        return run(self, *a, **k)

    Plan.run = counted  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace

        from vllm_integration import session
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        st = session.state_for(model)
        plan = st.plan
        reports: list[Any] = []
        refill = Plan.refill

        def kept(self: Any, **k: Any) -> Any:
            reports.append(refill(self, **k))
            return reports[-1]

        Plan.refill = kept  # type: ignore[method-assign]

        def reload(i: int) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any]:
            reports.clear()
            before = _timeless(dict(vars(st.counters), _last=None))
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
            (report,) = reports
            out = {}
            for key, e in plan.entries.by_id.items():
                s = e.storage
                out[key] = s.detach().clone() if isinstance(s, torch.Tensor) else s
            fields = report.as_dict()
            fields.pop("seconds")
            after = _timeless(dict(vars(st.counters), _last=st.counters.last))
            # the counters this reload added (totals as deltas), the others as they are
            counters = {k: v - before[k] if type(v) is int and not k.endswith("_last") else v
                        for k, v in after.items()}
            return out, fields, state(plan, report), counters

        for i in range(4):
            reload(i)
        checked = fast_runs = 0
        for i in range(4, 4 + reloads):
            runs.clear()
            fast = reload(i)
            fast_runs += not runs
            steady.ENABLED = False
            try:
                slow = reload(i)  # the same weights by the slow path
            finally:
                steady.ENABLED = True
            for key, v in slow[0].items():
                w = fast[0][key]
                same = torch.equal(v.view(-1).view(torch.uint8), w.view(-1).view(torch.uint8)) \
                    if isinstance(v, torch.Tensor) else v == w
                assert same, key
                checked += 1
            assert fast[1] == slow[1], (fast[1], slow[1])
            assert fast[2] == slow[2], (fast[2], slow[2])
            assert fast[3] == slow[3], (fast[3], slow[3])
            assert st.counters.moved_last == 0
        print(f"identical: {checked} values over {reloads} steady reloads; reports, holder "
              f"state and counters equal; steady entry ran without fallback in {fast_runs} of "
              f"{reloads}; report {fast[1]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)

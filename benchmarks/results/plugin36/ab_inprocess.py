"""In one process, per reload: vLLM alone (``off``), the plugin with the base tree's code of
every function plugin36 changed (``base``), and the plugin with this tree's (``new``).

    python3 benchmarks/results/plugin36/ab_inprocess.py BASE_DIR [ROUNDS] [--json OUT]

The bench's model and clock (``bench_vllm_reload.py --clock cpu``: the thread's CPU time, torch
on one thread, ``gc.freeze()`` before timing); each round times the three arms back to back in a
rotating order. The ``base`` arm swaps in the functions as the base tree defines them (loaded
from its files under other module names, so they read the base tree's helpers), the ``new`` arm
this tree's; everything else is the same objects. Paired per round: ``base - off``,
``new - off`` and ``new - base`` (us), medians with 95 % bootstrap intervals. On a shared,
loaded machine this is the comparison that moments do not skew: both codes run at the same
moments, on the same model, in the same process.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny_llama import setup, tiny_llama  # noqa: E402

setup()  # the bench's environment, before anything imports vLLM
from derivgraph import dict_versions  # noqa: E402
from derivgraph.guard import guard, sweep, template, watch  # noqa: E402
from derivgraph.runtime import accessors, plan  # noqa: E402

#: (this tree's module, its file under the tree, class or None, attribute names)
CHANGED = [
    (dict_versions, "derivgraph/dict_versions.py", "DictVersions", ["changed", "rebase", "adopt"]),
    (template, "derivgraph/guard/template.py", None, ["harmless"]),
    (sweep, "derivgraph/guard/sweep.py", "Sweep", ["_compare", "_dirty_tagged"]),
    (watch, "derivgraph/guard/watch.py", "Watch", ["survey"]),
    (guard, "derivgraph/guard/guard.py", "Guard", ["_plan_watched"]),
    (accessors, "derivgraph/runtime/accessors.py", "HopTable", ["_stale", "intact"]),
    (plan, "derivgraph/runtime/plan.py", "Plan", ["_entry", "run"]),
]


def _load(base: Path, rel: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, base / rel)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _arms(base: Path) -> dict[str, list[tuple[Any, str, Any]]]:
    """Per arm, the (owner, attribute, value) stores that install its code."""
    loaded = {rel: _load(base, rel, "base_" + rel.replace("/", "_")[:-3])
              for _m, rel, _c, _n in CHANGED}
    base_template = loaded["derivgraph/guard/template.py"]
    for rel in ("derivgraph/guard/sweep.py", "derivgraph/guard/watch.py"):
        loaded[rel].harmless = base_template.harmless  # the base code calls the base harmless
    arms: dict[str, list[tuple[Any, str, Any]]] = {"base": [], "new": []}
    for module, rel, cls, names in CHANGED:
        for name in names:
            owner = module if cls is None else getattr(module, cls)
            theirs = loaded[rel] if cls is None else getattr(loaded[rel], cls)
            arms["new"].append((owner, name, owner.__dict__[name] if cls else getattr(owner, name)))
            arms["base"].append((owner, name, theirs.__dict__[name] if cls
                                 else getattr(theirs, name)))
    return arms


def _boot(values: list[float], boot: int = 2000) -> list[float]:
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(boot))
    return [round(meds[int(0.025 * boot)], 1), round(meds[int(0.975 * boot)], 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("base", type=Path)
    parser.add_argument("rounds", type=int, nargs="?", default=101)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    arms = _arms(args.base)
    now = time.thread_time
    times: dict[str, list[float]] = {"off": [], "base": [], "new": []}
    with tiny_llama(warm=0) as (model, reload_weights):
        from vllm_integration import session
        tags = session.state_for(model).guard.watch.sweep.tags
        if tags is not None:
            tags._last = tags._tags  # the base code's attribute (this tree's is ``_moved``)
            tags._moved = None
        installed = ["new"]
        completes: dict[str, list[float]] = {"base": [], "new": []}
        inner = session._complete
        current = [""]

        def timed_complete(*a: Any, **k: Any) -> Any:  # the plugin's completion alone
            start = now()
            try:
                return inner(*a, **k)
            finally:
                if current[0] in completes:
                    completes[current[0]].append((now() - start) * 1e6)

        session._complete = timed_complete

        def reload(i: int, arm: str) -> float:
            os.environ["DERIVGRAPH_VLLM_MODE"] = "off" if arm == "off" else "refill"
            if arm != "off" and installed[0] != arm:  # a type store resets its caches: only
                for owner, name, value in arms[arm]:  # when the code changes
                    setattr(owner, name, value)
                installed[0] = arm
            current[0] = arm
            start = now()
            reload_weights(i)
            return (now() - start) * 1e6

        for i, arm in enumerate(["off", "base", "new"] * 2):
            reload(i, arm)
        for values in completes.values():
            values.clear()
        gc.collect()
        gc.freeze()
        for i in range(args.rounds):
            order = list(times)
            order = order[i % 3:] + order[:i % 3]
            if (i // 3) % 2:
                order.reverse()
            for arm in order:
                times[arm].append(reload(i, arm))
        moved = session.plan_for(model).moved()
    paired = {}
    for a, b in (("base", "off"), ("new", "off"), ("new", "base")):
        d = [x - y for x, y in zip(times[a], times[b])]
        paired[f"{a} - {b}"] = {"median_us": round(statistics.median(d), 1), "ci95": _boot(d)}
    d = [x - y for x, y in zip(completes["new"], completes["base"])]
    paired["complete: new - base"] = {"median_us": round(statistics.median(d), 1),
                                      "ci95": _boot(d)}
    for a in ("base", "new"):
        paired[f"complete: {a}"] = {"median_us": round(statistics.median(completes[a]), 1),
                                    "q10_us": round(statistics.quantiles(completes[a], n=10)[0], 1)}
    ratio = {a: round(statistics.median([x / y for x, y in zip(times[a], times["off"])]), 4)
             for a in ("base", "new")}
    result = {"rounds": args.rounds, "off_median_us": round(statistics.median(times["off"]), 1),
              "paired_us": paired, "ratio_over_off_median": ratio,
              "load_after": [round(x, 2) for x in os.getloadavg()],
              "moved_after": len(moved), "runs_us": {k: [round(v, 1) for v in t]
                                                      for k, t in times.items()}}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs_us"}))  # noqa: T201


if __name__ == "__main__":
    main()

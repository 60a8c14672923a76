"""In-situ A/B of one function's variants inside the plugin's completion, on the bench's tiny
Llama: per reload the arm alternates (rotating order), the completion (``session._complete``)
is timed with the thread's CPU clock, and the named function is timed too.

    python3 benchmarks/results/plugin37/insitu_ab.py EXPERIMENT [ROUNDS]

``EXPERIMENT`` names a function of ``experiments`` below that returns the arms:
``{arm: [(owner, attribute, value), ...]}`` (the stores that install its code).
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _shared() -> Any:
    """plugin36's ``_tiny_llama`` (the bench's model and reload), loaded from its file."""
    path = Path(__file__).resolve().parents[1] / "plugin36" / "_tiny_llama.py"
    spec = importlib.util.spec_from_file_location("plugin36_tiny_llama", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_tiny = _shared()
_tiny.setup()
import insitu_variants  # noqa: E402


def _boot(values: list[float], boot: int = 2000) -> list[float]:
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(boot))
    return [round(meds[int(0.025 * boot)], 1), round(meds[int(0.975 * boot)], 1)]


def install(arms: dict[str, list[tuple[Any, str, Any]]], arm: str, installed: list[str]) \
        -> None:
    """Make ``arm``'s stores (owner, attribute, value) unless it is the one in already
    (``installed[0]``, updated)."""
    if installed[0] != arm:
        for owner, attr, value in arms[arm]:
            setattr(owner, attr, value)
        installed[0] = arm


def alternate(names: list[str], rounds: int, reload: Callable[[int, str], None],
              clear: Callable[[], None]) -> None:
    """Three warm-up reloads per arm (``clear`` then drops what they recorded), a
    ``gc.freeze()``, then ``rounds`` rounds of every arm, the order rotating and reversing."""
    for i, arm in enumerate(names * 3):
        reload(i, arm)
    clear()
    gc.collect()
    gc.freeze()
    for i in range(rounds):
        order = names[i % len(names):] + names[:i % len(names)]
        if (i // len(names)) % 2:
            order.reverse()
        for arm in order:
            reload(i, arm)


def main() -> None:
    name = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 201
    now = time.thread_time
    with _tiny.tiny_llama(warm=0) as (model, reload_weights):
        from vllm_integration import session
        arms = getattr(insitu_variants, name)(model)
        names = list(arms)
        completes: dict[str, list[float]] = {a: [] for a in names}
        totals: dict[str, list[float]] = {a: [] for a in names}
        inner = session._complete
        current = [""]

        def timed(*a: Any, **k: Any) -> Any:
            start = now()
            try:
                return inner(*a, **k)
            finally:
                if current[0]:
                    completes[current[0]].append((now() - start) * 1e6)

        session._complete = timed
        installed = [""]

        def reload(i: int, arm: str) -> None:
            install(arms, arm, installed)
            current[0] = arm
            start = now()
            reload_weights(i)
            totals[arm].append((now() - start) * 1e6)

        def clear() -> None:
            for v in (*completes.values(), *totals.values()):
                v.clear()

        alternate(names, rounds, reload, clear)
        moved = session.plan_for(model).moved()
    out: dict[str, Any] = {"experiment": name, "rounds": rounds, "moved_after": len(moved),
                           "load_after": [round(x, 2) for x in os.getloadavg()]}
    for arm in names:
        out[f"complete {arm}"] = {"median_us": round(statistics.median(completes[arm]), 1),
                                  "q10_us": round(statistics.quantiles(completes[arm], n=10)[0], 1)}
    a = names[0]
    for b in names[1:]:
        d = [x - y for x, y in zip(completes[b], completes[a])]
        out[f"complete {b} - {a}"] = {"median_us": round(statistics.median(d), 1),
                                      "ci95": _boot(d)}
        d = [x - y for x, y in zip(totals[b], totals[a])]
        out[f"reload {b} - {a}"] = {"median_us": round(statistics.median(d), 1), "ci95": _boot(d)}
    print(json.dumps(out))  # noqa: T201


if __name__ == "__main__":
    main()

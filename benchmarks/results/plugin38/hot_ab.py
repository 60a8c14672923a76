"""In-situ A/B of "do the completion's work while it is hot" on the bench's tiny Llama.

    python3 benchmarks/results/plugin38/hot_ab.py EXPERIMENT [ROUNDS]

``EXPERIMENT`` names a function of ``hot_variants`` returning the arms (``{arm: [(owner,
attribute, value), ...]}``, the first the reference). Per reload the arm alternates (rotating,
reversing order); with the thread's CPU clock it times the completion (``session._complete``),
the per-layer work the arm adds (``hot_variants.EXTRA``) and the whole ``reload_weights``.
Paired per round against the first arm: ``complete+extra`` (what the plugin's work costs in
total) and the whole reload; medians with 95 % bootstrap intervals. Prints one JSON line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _plugin37() -> Any:
    """plugin37's ``insitu_ab`` (plugin36's model and reload as ``_tiny``, the bootstrap as
    ``_boot``), loaded from its file."""
    path = Path(__file__).resolve().parents[1] / "plugin37" / "insitu_ab.py"
    spec = importlib.util.spec_from_file_location("plugin37_insitu_ab", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_insitu = _plugin37()  # sets the bench's environment up (before vLLM is imported)
_tiny, _boot = _insitu._tiny, _insitu._boot
import hot_variants  # noqa: E402


def _stat(values: list[float]) -> dict[str, float]:
    return {"median_us": round(statistics.median(values), 1),
            "q10_us": round(statistics.quantiles(values, n=10)[0], 1)}


def main() -> None:
    name = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 201
    now = time.thread_time
    extra = hot_variants.EXTRA
    with _tiny.tiny_llama(warm=0) as (model, reload_weights):
        from vllm_integration import session
        arms = getattr(hot_variants, name)(model)
        names = list(arms)
        series = {k: {a: [] for a in names} for k in ("complete", "extra", "total")}
        inner = session._complete
        spent = [0.0]

        def timed(*a: Any, **k: Any) -> Any:
            start = now()
            try:
                return inner(*a, **k)
            finally:
                spent[0] += now() - start

        session._complete = timed
        installed = [""]

        def reload(i: int, arm: str) -> None:
            _insitu.install(arms, arm, installed)
            extra[0] = spent[0] = 0.0
            start = now()
            reload_weights(i)
            series["total"][arm].append((now() - start) * 1e6)
            series["complete"][arm].append(spent[0] * 1e6)
            series["extra"][arm].append(extra[0] * 1e6)

        def clear() -> None:
            for by_arm in series.values():
                for v in by_arm.values():
                    v.clear()

        _insitu.alternate(names, rounds, reload, clear)
        moved = session.plan_for(model).moved()
        stats = getattr(getattr(hot_variants, "LAST", None), "stats", None)
    out: dict[str, Any] = {"experiment": name, "rounds": rounds, "moved_after": len(moved),
                           "load_after": [round(x, 2) for x in os.getloadavg()]}
    if stats:
        out["stats"] = stats
    work = {a: [c + e for c, e in zip(series["complete"][a], series["extra"][a])]
            for a in names}
    for arm in names:
        out[arm] = {"complete": _stat(series["complete"][arm]),
                    "extra": _stat(series["extra"][arm]), "work": _stat(work[arm]),
                    "total": _stat(series["total"][arm])}
    a = names[0]
    for b in names[1:]:
        for label, values in (("work", work), ("total", series["total"])):
            d = [x - y for x, y in zip(values[b], values[a])]
            out[f"{label} {b} - {a}"] = {"median_us": round(statistics.median(d), 1),
                                         "ci95": _boot(d)}
    print(json.dumps(out))  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()

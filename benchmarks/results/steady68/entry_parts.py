"""The steady entry's pieces, each timed alone after a real reload (thread CPU time, deepseek
workload, CPU): the hop and source checks by the direct sweep and by the watch's tags, the joint
address check, the holders' read, the every-holder check, the layout guard, the copies, the
store sweep, the three settles; then the whole ``refill()`` by the entry and by the slow path.
Medians in microseconds over 41 rounds.

    PYTHONPATH=. python3 benchmarks/results/steady68/entry_parts.py
"""

from __future__ import annotations

import gc
import json
import operator
import os
import statistics
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.runtime import steady
from derivgraph.tools.bench import _workload


def main() -> None:
    model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    for i in range(3):
        reload(i)
        post_load()
        plan.refill()
    g = plan._steady.fn.__globals__
    is_, get = operator.is_, dict.get
    times: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.thread_time_ns()
        out = fn()
        times.setdefault(name, []).append((time.thread_time_ns() - t0) / 1e3)
        return out

    def copies(theirs: list[Any]) -> None:
        for a, b, run in g["flat"]:
            run.copy(theirs[a:b])

    def foreach(theirs: list[Any]) -> None:
        for a, b in g["refill_table"].rest_spans:
            torch._foreach_copy_(g["ours"][a:b], theirs[a:b])

    gc.freeze()
    with torch.no_grad():
        for r in range(41):
            reload(r)
            post_load()
            timed("hops_sweep", lambda: all(map(is_, map(get, g["hop_dicts"], g["hop_keys"]),
                                                g["hop_expected"])))
            timed("hops_tags", g["hop_watch"].unchanged)
            timed("sources_sweep", lambda: all(map(is_, map(get, g["source_dicts"],
                                                            g["source_keys"]),
                                                   g["source_tensors"])))
            timed("sources_tags", g["source_watch"].unchanged)
            timed("joint", g["joint"].intact)
            current = timed("read", lambda: list(map(get, g["table_dicts"], g["table_keys"])))
            timed("every_rebuilt", lambda c=current: any(map(is_, c, g["table_storages"])))
            theirs = current if g["pick"] is None else g["pick"](current)
            timed("guard", lambda t=theirs: g["layout_guard"].check(*t))
            timed("flat_copies", lambda t=theirs: copies(t))
            timed("foreach_copies", lambda t=theirs: foreach(t))
            timed("stores", lambda: deque(map(operator.setitem, g["table_dicts"],
                                              g["table_keys"], g["table_storages"]), 0))
            timed("settle_table", g["table"].settle)
            timed("settle_hops", g["hops"].settle)
            timed("settle_sources", g["source_watch"].settle)
            reload(r)
            post_load()
            timed("refill_steady", plan.refill)
            reload(r)
            post_load()
            steady.ENABLED = False
            timed("refill_slow", plan.refill)
            steady.ENABLED = True
    print(json.dumps({  # noqa: T201 - a benchmark script reports on stdout
        "load": os.getloadavg(), "watched_dicts": {
            "hops": len(g["hop_watch"].versions), "table": len(g["table"].watch.versions),
            "sources": len(g["source_watch"].versions)},
        "flat_runs": len(g["flat"]), "median_us": {
            k: round(statistics.median(v), 1) for k, v in times.items()}}))


if __name__ == "__main__":
    main()

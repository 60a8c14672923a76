"""What the in-process piece timers under ``benchmarks/results/`` share: one stamped scaling plan
compiled with the holders' bind (and prepare) watched, and the timing loop over named pieces.

A script beside it imports it after putting this folder on ``sys.path``::

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from stamped_plan import held_plan, time_pieces
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def held_plan(size: int, stamped: bool = True) -> tuple[Any, list[Any], dict[str, Any]]:
    """A plan of the scaling workload at ``size`` derived tensors (after a small warm-up
    compile; the cyclic collector left off), the entry columns its ``Holders.bind`` was given,
    and what the watch saw (``columns``; ``book``: the layout book ``Plan.prepare`` read)."""
    seen: dict[str, Any] = {}
    bind, prepare = Holders.bind, Plan.prepare

    def spy_bind(self: Any, sources: Any, columns: Any = ()) -> Any:
        seen["columns"] = columns = list(columns)
        return bind(self, sources, columns)

    def spy_prepare(self: Any) -> Any:
        seen["book"] = self.tensors.layouts
        return prepare(self)

    Holders.bind, Plan.prepare = spy_bind, spy_prepare
    try:
        spec = scaling_spec()
        compile_plan(scaling_model(250), [spec])  # warm-up
        gc.disable()
        with stamping(stamped):
            plan = compile_plan(scaling_model(size // 4), [spec])
    finally:
        Holders.bind, Plan.prepare = bind, prepare
    return plan, seen.get("columns", []), seen


def time_pieces(pieces: dict[str, Callable[[], Any]], reps: int, width: int = 24,
                label: str = "") -> dict[str, list[float]]:
    """Each piece run ``reps`` times, the pieces interleaved (process seconds); prints each
    one's median and runs, and returns the runs."""
    out: dict[str, list[float]] = {k: [] for k in pieces}
    for _ in range(reps):
        for name, fn in pieces.items():
            start = time.process_time()
            fn()
            out[name].append(time.process_time() - start)
    for name, xs in out.items():
        print(f"{name:{width}s} {label}{statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
    return out


def evaluation_inputs(size: int) -> tuple[Any, dict[str, Any]]:
    """The graph and sources ``planner._evaluate_all`` is given when the scaling workload at
    ``size`` derived tensors is prepared, stamping on (its own call left to run as usual)."""
    import derivgraph.planner as planner

    seen: dict[str, Any] = {}
    orig = planner._evaluate_all

    def grab(graph: Any, sources: Any = None, book: Any = None) -> Any:
        seen["graph"], seen["sources"] = graph, dict(sources or {})
        return orig(graph, sources, book)

    planner._evaluate_all = grab
    try:
        with stamping(True):
            planner._prepare(scaling_model(size // 4), [scaling_spec()], False, True)
    finally:
        planner._evaluate_all = orig
    return seen["graph"], seen["sources"]

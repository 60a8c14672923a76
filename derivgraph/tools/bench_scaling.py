"""``derivgraph bench --workload scaling``: compile time against model construction time.

A stack of small layers, each with four derived tensors (a reciprocal, a product, an int64
constant and an alias), at 1k, 10k and 100k derived tensors. For each size, in one process:
the time to construct the model (``Stack(n)``: the ``nn.Module`` tree and its parameters),
then ``compile_plan`` on it, twice on fresh models (``cold``: the first compile of the
process, with lazy imports and caches; ``warm``: the second). ``compile_over_construct`` is
warm compile / construction (goal: below 1); ``stamped_layers`` counts the layers compiled
from a template (:mod:`derivgraph.compiler.stamp`).

``compile_plan`` runs with the cyclic garbage collector off, so the containers it makes are
walked by the first young-generation collection after it returns (the caller's next
allocation starts it), not inside it: ``gc_young_objects`` counts them (after the warm
compile), ``gc_after_s`` times that collection (run right after the warm compile), and
``compile_with_gc_s`` / ``compile_with_gc_over_construct`` add it to the compile (model
construction runs with the collector on: its collections are in ``construct_s``).
"""

from __future__ import annotations

import gc
import time
from typing import Any

__all__ = ["SCALING_SIZES", "scaling_bench", "scaling_model", "scaling_spec"]

SCALING_SIZES = (1000, 10000, 100000)


def scaling_spec() -> Any:
    """The spec of every layer (four derived tensors)."""
    from derivgraph import DerivedTensor, Spec, Target

    return Spec(name="scaling", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"},
                derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale"),
                         DerivedTensor(name="prod", kind="attribute", formula="scale * weight"),
                         DerivedTensor(name="strides", kind="attribute",
                                       formula="full([E], 7, dtype=int64)"),
                         DerivedTensor(name="scale_alias", kind="alias", of="scale")])


def scaling_model(layers: int, device: str = "cpu") -> Any:
    """``layers`` small layers (two [8] fp32 parameters each) in one ``ModuleList``."""
    import torch
    from torch import nn

    class ScalingLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.rand(8, device=device) + 0.5, requires_grad=False)
            self.weight = nn.Parameter(torch.rand(8, device=device), requires_grad=False)

    class ScalingStack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(ScalingLayer() for _ in range(layers))

    return ScalingStack()


def scaling_bench(sizes: tuple[int, ...] = SCALING_SIZES, device: str = "cpu") -> dict[str, Any]:
    """Construction and compile times per size (seconds), with the ratios."""
    import torch

    from derivgraph.planner import compile_plan

    spec = scaling_spec()
    rows = []
    for size in sizes:
        construct, compiled = [], []
        plan = None
        young, debt = 0, 0.0
        for _ in range(2):  # cold, then warm
            del plan
            gc.collect()
            start = time.perf_counter()
            model = scaling_model(max(1, size // 4), device)
            construct.append(time.perf_counter() - start)
            gc.collect()
            gc.disable()  # as compile_plan runs; kept off until its debt is timed below
            try:
                start = time.perf_counter()
                plan = compile_plan(model, [spec])
                if device == "cuda":
                    torch.cuda.synchronize()
                compiled.append(time.perf_counter() - start)
                young = len(gc.get_objects(0))  # what the next young collection walks
                start = time.perf_counter()
                gc.collect(0)
                debt = time.perf_counter() - start
            finally:
                gc.enable()
        rows.append({
            "derived": len(plan.entries), "nodes": len(plan.graph.nodes),
            "construct_s": round(construct[1], 4), "compile_cold_s": round(compiled[0], 4),
            "compile_warm_s": round(compiled[1], 4),
            "us_per_derived": round(compiled[1] / max(1, len(plan.entries)) * 1e6, 1),
            "compile_over_construct": round(compiled[1] / construct[1], 2),
            "gc_young_objects": young, "gc_after_s": round(debt, 4),
            "compile_with_gc_s": round(compiled[1] + debt, 4),
            "compile_with_gc_over_construct": round((compiled[1] + debt) / construct[1], 2),
            "stamped_layers": plan.graph.stamped,
        })
    return {"device": device, "workload": "scaling", "sizes": rows}

"""The floor of the 100k scaling compile: the native work any implementation must do, timed
in one process interleaved with the real ``compile_plan`` (A: a compile, B: the pieces; the
order of A and B alternates per round), medians over ``--rounds``, load average reported.

The workload is ``derivgraph bench --workload scaling`` at ``--size`` derived tensors
(``size // 4`` layers of two [8] fp32 parameters; per layer ``inv = 1/scale`` and
``prod = scale*weight`` (fp32), ``strides = full([8], 7, int64)``, all three allocated, and
``scale_alias``, an alias bound to the source object). Each piece is timed with the garbage
collector off (as ``compile_plan`` runs) after a ``gc.collect()``, on a fresh model (B's own,
never compiled), except the startup pass, which is the last compiled plan's. Run from a tree
root:

    PATH=/work/venv/bin:$PATH PYTHONPATH=. python3 benchmarks/results/floor69/floor.py \
        --rounds 9 --json benchmarks/results/floor69/floor_100k.json
"""

from __future__ import annotations

import argparse
import gc
import json
import operator
import os
import statistics
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from itertools import repeat
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

#: (key, what it times, in the floor sum: "floor" (the brief's pieces), "extra" (unavoidable
#: work beyond the brief's list: summed separately) or "ref" (for comparison, never summed))
PIECES = [
    ("alloc", "each allocated derived tensor made once (3 per layer): torch.empty of the 2 "
              "fp32 [8] the pass fills, torch.full of the int64 constant (made filled: the "
              "pass never writes it); C-level map sweeps", "floor"),
    ("startup_pass", "the compiled plan's reload_pass run once (program.fn(), no_grad): "
                     "every formula evaluated into the startup storage", "floor"),
    ("data_ptr", "Tensor.data_ptr of every distinct tensor once: 2 sources + 3 allocated "
                 "per layer (C-level map)", "floor"),
    ("register", "one owner __dict__ store per derived tensor (4 per layer, the alias's "
                 "being the source object), as EntryColumn.bind does; __dict__ read once "
                 "per layer", "floor"),
    ("dict_per_id", "one Python-level dict store per derived id (a for loop over "
                    "zip(ids, storages))", "floor"),
    ("eager_check", "the compile's promise of a bit-for-bit check of the pass against eager "
                    "evaluation, at its cheapest: cat the sources, evaluate each fp32 formula "
                    "once over the column, torch.equal against the cat of the pass's storages",
     "extra"),
    ("walk", "model.named_modules() filtered by class name: the layers and their paths",
     "extra"),
    ("source_reads", "each source read once from its layer's _parameters dict (2 per "
                     "layer, list comprehension)", "extra"),
    ("id_strings", "each derived tensor's id made once (f'{path}.{name}', 4 per layer)",
     "extra"),
    ("ref_alloc_eval", "ref: alloc and startup_pass's fp32 work fused: torch._foreach_reciprocal "
                       "and torch._foreach_mul out of place over the sources (2 per layer, fresh "
                       "tensors holding their values); int64 constants not included", "ref"),
    ("ref_setattr", "ref: nn.Module.__setattr__ per derived tensor instead of the __dict__ "
                    "store (4 per layer, fresh names)", "ref"),
    ("ref_dict_zip", "ref: dict(zip(ids, storages)), the C-level form of dict_per_id", "ref"),
    ("ref_untyped_storage", "ref: Tensor.untyped_storage of each allocated tensor "
                            "(record_startup's per-row read)", "ref"),
    ("construct", "ref: constructing the model (scaling_model), the bench's denominator",
     "ref"),
]

_NAMES = ("inv", "prod", "strides", "scale_alias")


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds ``fn()`` takes with the collector off (after a collection), and its answer."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        gc.enable()


def _pieces(layers: int, plan: Any) -> dict[str, float]:
    """One round of every piece (seconds), on a fresh model of ``layers`` layers; the startup
    pass is ``plan``'s (a compiled plan of the same workload)."""
    out: dict[str, float] = {}
    out["construct"], model = _timed(lambda: scaling_model(layers))

    def walk() -> list[tuple[str, Any]]:
        return [(p, m) for p, m in model.named_modules() if type(m).__name__ == "ScalingLayer"]

    out["walk"], found = _timed(walk)
    paths, owners = [p for p, _ in found], [m for _, m in found]
    assert len(owners) == layers

    def source_reads() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        return ([o._parameters["scale"] for o in owners],
                [o._parameters["weight"] for o in owners])

    out["source_reads"], (scales, weights) = _timed(source_reads)

    def id_strings() -> list[str]:
        return [f"{p}.{n}" for n in _NAMES for p in paths]

    out["id_strings"], ids = _timed(id_strings)

    full_i64 = partial(torch.full, dtype=torch.int64)

    def alloc() -> list[torch.Tensor]:
        made = list(map(torch.empty, repeat(8, 2 * layers)))
        made += map(full_i64, repeat((8,), layers), repeat(7))
        return made

    out["alloc"], made = _timed(alloc)
    tensors = [*scales, *weights, *made]

    out["data_ptr"], ptrs = _timed(lambda: list(map(torch.Tensor.data_ptr, tensors)))
    assert len(set(ptrs)) == 5 * layers and 0 not in ptrs
    out["ref_untyped_storage"], _ = _timed(
        lambda: list(map(torch.Tensor.untyped_storage, made)))

    columns = [made[:layers], made[layers:2 * layers], made[2 * layers:], scales]

    def register() -> None:
        dicts = [o.__dict__ for o in owners]
        for name, column in zip(_NAMES, columns):
            deque(map(operator.setitem, dicts, repeat(name), column), 0)

    out["register"], _ = _timed(register)
    assert owners[-1].__dict__["strides"] is made[-1]

    def set_attrs() -> None:
        for name, column in zip(_NAMES, columns):
            fresh = f"{name}_s"
            for owner, tensor in zip(owners, column):
                setattr(owner, fresh, tensor)

    out["ref_setattr"], _ = _timed(set_attrs)
    assert owners[-1].inv_s is made[layers - 1]
    storages = [*made, *scales]  # in the ids' order of names: inv, prod, strides, alias

    def dict_per_id() -> dict[str, torch.Tensor]:
        by_id: dict[str, torch.Tensor] = {}
        for node_id, storage in zip(ids, storages):
            by_id[node_id] = storage
        return by_id

    out["dict_per_id"], by_id = _timed(dict_per_id)
    assert len(by_id) == 4 * layers
    out["ref_dict_zip"], _ = _timed(lambda: dict(zip(ids, storages)))

    def startup_pass() -> None:
        with torch.no_grad():
            plan.program.fn()

    out["startup_pass"], _ = _timed(startup_pass)
    held = [layer.__dict__ for layer in plan.model.layers]  # the compiled model's, untimed
    p_scales = [d["_parameters"]["scale"] for d in held]
    p_weights = [d["_parameters"]["weight"] for d in held]
    p_inv, p_prod = [d["inv"] for d in held], [d["prod"] for d in held]

    def eager_check() -> bool:
        scale, weight = torch.cat(p_scales), torch.cat(p_weights)
        return torch.equal(torch.cat(p_inv), torch.reciprocal(scale)) \
            and torch.equal(torch.cat(p_prod), torch.mul(scale, weight))

    def alloc_eval() -> list[torch.Tensor]:
        with torch.no_grad():
            return [*torch._foreach_reciprocal(scales), *torch._foreach_mul(scales, weights)]

    out["ref_alloc_eval"], fused = _timed(alloc_eval)
    assert torch.equal(fused[layers - 1], 1.0 / scales[-1])
    out["eager_check"], same = _timed(eager_check)
    assert same is True
    return out


def _compile(layers: int, spec: Any) -> tuple[float, Any]:
    """One warm ``compile_plan`` of a fresh model (seconds, the plan); construction untimed
    (the collector is left as the bench leaves it: ``compile_plan`` turns it off itself)."""
    model = scaling_model(layers)
    gc.collect()
    start = time.perf_counter()
    plan = compile_plan(model, [spec])
    return time.perf_counter() - start, plan


def _check_pass(plan: Any) -> None:
    """The startup pass wrote ``1/scale`` into the last layer's ``inv`` (what it times)."""
    layer = plan.model.layers[-1]
    layer.inv.zero_()
    with torch.no_grad():
        plan.program.fn()
    assert torch.equal(layer.inv, 1.0 / layer.scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", default=None, help="write the samples and medians here")
    args = parser.parse_args()
    layers, spec = max(1, args.size // 4), scaling_spec()
    load_start = os.getloadavg()
    _, plan = _compile(layers, spec)  # cold: imports and caches (not counted)
    _check_pass(plan)
    compiles: list[float] = []
    samples: dict[str, list[float]] = {key: [] for key, _, _ in PIECES}
    for round_ in range(args.rounds):
        for side in ("AB" if round_ % 2 == 0 else "BA"):
            if side == "A":
                del plan
                gc.collect()
                seconds, plan = _compile(layers, spec)
                compiles.append(seconds)
            else:
                for key, seconds in _pieces(layers, plan).items():
                    samples[key].append(seconds)
    load_end = os.getloadavg()
    compile_ms, compile_min = statistics.median(compiles) * 1e3, min(compiles) * 1e3
    medians = {key: statistics.median(values) * 1e3 for key, values in samples.items()}
    minima = {key: min(values) * 1e3 for key, values in samples.items()}
    groups = {"floor": ("floor",), "floor_extra": ("floor", "extra")}
    # each round's sums over its own samples, over the same round's compile (a pair)
    ratios = {name: [sum(samples[key][i] for key, _, group in PIECES if group in members)
                     / compiles[i] for i in range(args.rounds)]
              for name, members in groups.items()}
    print(f"size {args.size} ({layers} layers), {args.rounds} rounds interleaved, "
          f"load average {load_start[0]:.2f} -> {load_end[0]:.2f}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    print(f"{'piece':<22}{'median':>9}{'share':>8}{'min':>9}{'share':>8}  what "
          "(share: of the compile's median / min)")

    def row(key: str, ms: float, low: float, what: str) -> None:
        print(f"{key:<22}{ms:9.1f}{ms / compile_ms * 100:7.1f}%{low:9.1f}"
              f"{low / compile_min * 100:7.1f}%  {what}")

    row("compile_plan (warm)", compile_ms, compile_min, f"the real compile (max "
        f"{max(compiles) * 1e3:.1f})")
    sums = {"floor": [0.0, 0.0], "extra": [0.0, 0.0]}
    for key, what, group in PIECES:
        if group in sums:
            sums[group][0] += medians[key]
            sums[group][1] += minima[key]
        row(key, medians[key], minima[key], f"[{group}] {what}")
    floor, extra = sums["floor"], [a + b for a, b in zip(sums["floor"], sums["extra"])]
    row("floor (brief)", floor[0], floor[1], "sum of [floor]")
    row("floor + extra", extra[0], extra[1], "sum of [floor] and [extra]")
    row("library Python", compile_ms - extra[0], compile_min - extra[1],
        "compile - (floor + extra)")
    for name, values in ratios.items():
        print(f"per-round {name} / compile of the same round: median "
              f"{statistics.median(values) * 100:.1f}% (min {min(values) * 100:.1f}%, "
              f"max {max(values) * 100:.1f}%)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"size": args.size, "rounds": args.rounds,
                       "load": [load_start[0], load_end[0]],
                       "compile_s": compiles, "pieces_s": samples,
                       "median_ms": {"compile": compile_ms, **medians, "floor": floor[0],
                                     "floor_extra": extra[0]},
                       "min_ms": {"compile": compile_min, **minima, "floor": floor[1],
                                  "floor_extra": extra[1]},
                       "per_round_share": ratios}, fh, indent=1)


if __name__ == "__main__":
    main()

"""The floor of a template + instance-table compile of the scaling workload (a design spike).

What any compile that keeps one tensor object per derived tensor must do, measured piece by
piece on the scaling workload (:mod:`derivgraph.tools.bench_scaling`: per layer ``inv = 1.0 /
scale``, ``prod = scale * weight``, ``strides = full([8], 7, int64)``, ``scale_alias``) when
the layers are handled as one template plus a table of instances: find the layers, read their
sources, verify each layer's signature (shape, dtype, device, stride of every source, compared
as one tuple), allocate, evaluate each formula over a column of layers with one
``torch._foreach_*`` call, fill the constants, store the four attributes in each layer's
``__dict__`` (and, for comparison, through ``nn.Module.__setattr__``), read the addresses.
This is not derivgraph's compile: no graph, no checks, no generated code; it is the lower bound
the instance-table design could reach. ``--check`` compares its values with
``compile_plan`` on an identical model, bit for bit. Process seconds, one run.

    python3 benchmarks/bench_compile_floor.py --size 100000 --json out.json
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from _compile_cli import compile_parser, emit

from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _timed(times: dict[str, float], label: str, fn: Callable[[], Any]) -> Any:
    start = time.process_time()
    out = fn()
    times[label] = round(time.process_time() - start, 4)
    return out


def _signature(t: torch.Tensor) -> tuple[Any, ...]:
    return (t.shape, t.dtype, t.device, t.stride())


def floor_compile(model: Any, times: dict[str, float]) -> dict[str, list[torch.Tensor]]:
    """The instance-table work on ``model``; the derived columns by name."""
    layers = _timed(times, "match: named_modules + class test", lambda: [
        m for _, m in model.named_modules() if type(m).__name__ == "ScalingLayer"])
    srcs = _timed(times, "read sources (module._parameters)", lambda: [
        (m._parameters["scale"], m._parameters["weight"]) for m in layers])
    template = (_signature(srcs[0][0]), _signature(srcs[0][1]))
    same = _timed(times, "verify: one signature tuple per layer", lambda: all(
        (_signature(a), _signature(b)) == template for a, b in srcs))
    if not same:
        raise ValueError("a layer differs from the template: the spike handles identical ones")
    scales, weights = [a for a, _ in srcs], [b for _, b in srcs]
    inv, prod, strides = _timed(times, "allocate: 3 tensors per layer", lambda: (
        [torch.empty_like(a) for a in scales], [torch.empty_like(a) for a in scales],
        [torch.empty(a.shape, dtype=torch.int64) for a in scales]))

    def evaluate() -> None:  # 1.0 / scale is reciprocal (times 1.0); scale * weight
        torch._foreach_copy_(inv, scales)
        torch._foreach_reciprocal_(inv)
        torch._foreach_copy_(prod, scales)
        torch._foreach_mul_(prod, weights)

    with torch.no_grad():
        _timed(times, "evaluate: one foreach call per column op", evaluate)
        _timed(times, "fill the constant column (strides)", lambda: torch._foreach_copy_(
            strides, [torch.full((8,), 7, dtype=torch.int64)] * len(strides)))

    def bind() -> None:
        for m, a, b, c, s in zip(layers, inv, prod, strides, scales, strict=True):
            d = m.__dict__
            d["inv"], d["prod"], d["strides"], d["scale_alias"] = a, b, c, s

    _timed(times, "bind: 4 attributes per layer (__dict__ store)", bind)
    _timed(times, "record: data_ptr per derived tensor", lambda: [
        t.data_ptr() for t in inv + prod + strides])
    return {"inv": inv, "prod": prod, "strides": strides, "scale_alias": scales}


def _setattr_cost(model: Any, times: dict[str, float]) -> None:
    """The same binding through ``nn.Module.__setattr__`` (what a naive bind costs)."""
    layers = [m for _, m in model.named_modules() if type(m).__name__ == "ScalingLayer"]
    values = [(m.inv, m.prod, m.strides) for m in layers]
    _timed(times, "(for comparison) bind through nn.Module.__setattr__", lambda: [
        (setattr(m, "inv", a), setattr(m, "prod", b), setattr(m, "strides", c))
        for m, (a, b, c) in zip(layers, values, strict=True)])


def _check(layers: int) -> bool:
    """The spike's values equal ``compile_plan``'s on an identical model, bit for bit."""
    from derivgraph.compare import bits_equal
    from derivgraph.planner import compile_plan

    torch.manual_seed(0)
    mine = floor_compile(scaling_model(layers), {})
    torch.manual_seed(0)
    plan = compile_plan(scaling_model(layers), [scaling_spec()])
    return all(bits_equal(col[i], plan.entries[f"layers.{i}.{name}"].storage)
               for name, col in mine.items() for i in range(layers))


def main() -> None:
    parser = compile_parser(__doc__)
    parser.add_argument("--check", type=int, default=200, help="layers compared with compile_plan")
    args = parser.parse_args()
    layers = max(1, args.size // 4)
    times: dict[str, float] = {}
    start = time.process_time()
    model = scaling_model(layers)
    construct = time.process_time() - start
    floor_compile(model, times)  # warm-up (imports, allocator)
    model = scaling_model(layers)
    times.clear()
    floor_compile(model, times)
    total = round(sum(times.values()), 4)
    _setattr_cost(model, times)
    result = {"size": args.size, "construct_s": round(construct, 4), "floor_total_s": total,
              "floor_over_construct": round(total / construct, 3), "phases": times,
              "bit_exact_vs_compile_plan": _check(args.check) if args.check else None}
    emit(result, args.json)


if __name__ == "__main__":
    main()

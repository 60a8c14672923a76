"""In-process interleaved A/B of sweeps81's three changed functions at 100k derived
(25,000 layers), each on the compile's own inputs (captured from one warm compile):
``_all_layout`` (the column proof's layout check: TensorGuards vs the four field sweeps),
``_step_order`` (with the span chunks vs the filter), ``same_owners`` (paths by a list
comparison vs a sweep of ``==``). Base functions are the b258fc59 code, copied below.
usage: PYTHONPATH=$PWD python3 ab_sweeps.py [rounds]"""
import gc, operator, sys, time
from operator import is_
from derivgraph.compiler import lower, stamp_columns
from derivgraph.compiler.stamp_columns import _device, _dtype, _shape
from derivgraph.column_layout import tensor_method
from derivgraph.runtime import accessors, entry_columns
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def base_all_layout(got, shape, stride, dtype, device):
    n = len(got)
    strides = tensor_method(set(map(type, got)), "stride")
    return list(map(_shape, got)) == [shape] * n and list(map(strides, got)) == [stride] * n \
        and list(map(_dtype, got)) == [dtype] * n and list(map(_device, got)) == [device] * n


def base_same_owners(paths, owners, last):
    return len(paths) == len(last[0]) and all(map(operator.eq, paths, last[0])) \
        and all(map(is_, owners, last[1]))


cap = {"layout": [], "order": None, "owners": []}
real_all, real_order, real_same = stamp_columns._all_layout, lower._step_order, \
    accessors.same_owners


def spy_all(got, *a):
    cap["layout"].append((list(got), a))
    return real_all(got, *a)


def spy_order(order, chosen, layers, chunks=()):
    cap["order"] = (order, chosen, layers, list(chunks))
    return real_order(order, chosen, layers, chunks)


def spy_same(paths, owners, last):
    cap["owners"].append((paths, owners, last))
    return real_same(paths, owners, last)


stamp_columns._all_layout, lower._step_order = spy_all, spy_order
accessors.same_owners = entry_columns.same_owners = spy_same
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
for v in cap.values():
    if isinstance(v, list):
        v.clear()
model = scaling_model(25000)
plan = compile_plan(model, [spec])
stamp_columns._all_layout, lower._step_order = real_all, real_order
accessors.same_owners = entry_columns.same_owners = real_same
order, chosen, layers, chunks = cap["order"]
pairs = {
    "_all_layout": (lambda: [base_all_layout(g, *a) for g, a in cap["layout"]],
                    lambda: [real_all(g, *a) for g, a in cap["layout"]]),
    "_step_order": (lambda: real_order(order, chosen, layers),
                    lambda: real_order(order, chosen, layers, chunks)),
    "same_owners": (lambda: [base_same_owners(*c) for c in cap["owners"]],
                    lambda: [real_same(*c) for c in cap["owners"]]),
}
print(f"captured: {len(cap['layout'])} layout checks of {[len(g) for g, _ in cap['layout']]}, "
      f"order {len(order)} chunks {chunks}, {len(cap['owners'])} same_owners calls")
for name, (a, b) in pairs.items():
    assert a() == b(), name
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 21
gc.disable()
for name, (a, b) in pairs.items():
    ta, tb = [], []
    for r in range(rounds):
        for f, t in ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta)):
            s = time.perf_counter(); f(); t.append(time.perf_counter() - s)
    ta.sort(); tb.sort()
    wins = sum(y < x for x, y in zip(ta, tb))
    print(f"{name}: base median {ta[rounds // 2] * 1e3:.2f} ms min {ta[0] * 1e3:.2f}; "
          f"new median {tb[rounds // 2] * 1e3:.2f} ms min {tb[0] * 1e3:.2f}; "
          f"saved (median) {(ta[rounds // 2] - tb[rounds // 2]) * 1e3:.2f} ms")

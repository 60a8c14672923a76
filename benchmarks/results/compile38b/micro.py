"""In-process A/B of the functions this branch changed, on one 100k scaling model (stamped).

Each base function comes from the base tree's module file loaded by path (its imports come
from this tree, so only the changed module body differs); base and this tree alternate
``--rounds`` times on the same inputs; process seconds, medians. Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/compile38b/micro.py --base /tmp/base_compile38b
"""

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import time

from derivgraph import adoption
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import _prepare, compile_plan
from derivgraph.compiler import codegen
from derivgraph.runtime import accessors, engine, holders, storage
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


parser = argparse.ArgumentParser()
parser.add_argument("--base", required=True)
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
parser.add_argument("--only", default="")
args = parser.parse_args()
BASE_FILES = {"adoption": "adoption", "access": "runtime/accessors", "holders": "runtime/holders",
              "storage": "runtime/storage", "codegen": "compiler/codegen",
              "engine": "runtime/engine", "flat": "runtime/flat_copy"}
base_modules = {}
for short, rel in BASE_FILES.items():  # each base file by path, under a name of its own
    found = importlib.util.spec_from_file_location(f"base_{short}", f"{args.base}/derivgraph/{rel}.py")
    base_modules[short] = sys.modules[found.name] = importlib.util.module_from_spec(found)
    found.loader.exec_module(base_modules[short])
b_adoption, b_access, b_holders = (base_modules[k] for k in ("adoption", "access", "holders"))
b_storage, b_codegen, b_engine, b_flat = (base_modules[k]
                                          for k in ("storage", "codegen", "engine", "flat"))
for name in ("NO_DICT", "HolderTable", "HopTable", "holder_of"):  # the base's accessors
    setattr(b_holders, name, getattr(b_access, name))
b_engine.flat_runs = b_flat.flat_runs

spec = scaling_spec()
with stamping(True):
    model = scaling_model(args.size // 4)
    plan0, values, _, _ = _prepare(model, [spec], False, True)
    plan = compile_plan(scaling_model(args.size // 4), [spec])
sources = plan.tensors.sources
table = plan.holders.table
targets = plan._refill_targets()
constants, opaque = set(plan.constant_entries), set(plan._opaque())
held = list(table.entries)
bound = {**sources, **plan.tensors.constants}
bound.update((k, e.storage) for k, e in plan.entries.items() if hasattr(e.storage, "data_ptr"))



def base_where(entry):
    return b_access.holder_of(plan.holders.hops.objects, plan.model, entry)


def facts(planned):
    return [(e.id, id(e.storage), e.slot, e.adopted, type(x).__name__,
             x.data_ptr() if hasattr(x, "data_ptr") else repr(x)) for e, x in planned]


def refill_facts(t):
    return (t.ids, t.index, [id(s) for s in t.storages], t.spans, t.nbytes, t.rest_spans,
            [(a, b, c.starts.tolist()) for a, b, c in t.flat], t.is_constant, t.engine, t.whole,
            t.complete, t._numels)


cases = {
    "adopt_or_allocate": (
        lambda: b_adoption.adopt_or_allocate(plan0, values, PathReader(model)),
        lambda: adoption.adopt_or_allocate(plan0, values, PathReader(model)), facts),
    "holders.bind": (
        lambda: b_holders.Holders(plan.model, plan.entries).bind(sources),
        lambda: holders.Holders(plan.model, plan.entries).bind(sources), None),
    "HolderTable": (
        lambda: b_access.HolderTable(held, base_where),
        lambda: accessors.HolderTable(held, plan.holders._where), None),
    "BoundViews.views": (
        lambda: b_storage.BoundViews(plan.graph, bound).views(),
        lambda: storage.BoundViews(plan.graph, bound).views(), lambda v: sorted(v)),
    "build_program (install)": (
        lambda: b_codegen.build_program(plan.tensors, b_codegen.Bindings(), plan.steps, "p"),
        lambda: codegen.build_program(plan.tensors, codegen.Bindings(), plan.steps, "p"),
        lambda prog: prog.source),
    "RefillTable": (
        lambda: b_engine.RefillTable(table, targets, constants, opaque),
        lambda: engine.RefillTable(table, targets, constants, opaque), refill_facts),
}
if args.only:
    cases = {k: v for k, v in cases.items() if k in args.only.split(",")}
for name, (base, mine, same) in cases.items():
    if same is not None:
        assert same(base()) == same(mine()), name
if "HolderTable" in cases:  # the same accessors (the base's NO_DICT is its own object)
    a, b = cases["HolderTable"][0](), cases["HolderTable"][1]()
    assert [d is b_access.NO_DICT for d in a.dicts] == [d is accessors.NO_DICT for d in b.dicts]
    assert [id(d) for d in a.dicts if d is not b_access.NO_DICT] == \
        [id(d) for d in b.dicts if d is not accessors.NO_DICT]
    assert (a.keys, a.fast, a.ptrs, a.ids, a._by_owner, a._all_fast) == \
        (b.keys, b.fast, b.ptrs, b.ids, b._by_owner, b._all_fast)
    assert all(x is y for x, y in zip(a.storages, b.storages))


def seconds(fn):
    """Process seconds of one call (after a collection; its result dropped at once)."""
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


def alternate(base, mine, rounds):
    """Process seconds of ``base`` and ``mine``, alternating ``rounds`` times."""
    pairs = [(seconds(base), seconds(mine)) for _ in range(rounds)]
    return {"base": [a for a, _ in pairs], "mine": [b for _, b in pairs]}


gc.disable()
out = {}
for name, (base, mine, _) in cases.items():
    times = alternate(base, mine, args.rounds)
    row = out[name] = {tag: round(statistics.median(v), 4) for tag, v in times.items()}
    row["pairs"] = [(round(a, 4), round(b, 4)) for a, b in zip(times["base"], times["mine"])]
    print(f"{name:24} base {row['base']:.4f}  mine {row['mine']:.4f}")  # noqa: T201
print(json.dumps(out))  # noqa: T201

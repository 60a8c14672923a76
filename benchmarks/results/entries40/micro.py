"""In-process A/B of what entries40 changed, on one 100k scaling plan (stamped).

Each base function comes from the base tree's module file loaded by path (its imports come
from this tree, so only the changed module bodies differ); base and this tree alternate
``--rounds`` times on the same inputs; process seconds, medians. Run from the worktree root:

    PYTHONPATH=. python3 benchmarks/results/entries40/micro.py --base /tmp/base_entries40

Cases: ``Holders.bind`` (the holder and source accessors, the owner hops); ``HolderTable``
(the accessors alone); ``startup+bind`` (the compile's ``_record_startup`` then
``BoundTensors.bind`` and ``Holders.bind``: the base reads the sources again, this tree binds
the ones the startup record read; the entries' own startup records are left out of both, as
the compile records them a column at a time). Before timing, each case's results are
compared (the accessors' dicts by identity, keys, flags, hops, source rows, bound sources).
"""

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import time

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.runtime import accessors, holders, storage
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec



def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="in-process A/B, base tree against this one")
    parser.add_argument("--base", required=True, help="the base tree (git archive 94492ed)")
    parser.add_argument("--size", type=int, default=100000, help="derived tensors (4 a layer)")
    parser.add_argument("--rounds", type=int, default=7, help="alternating base/mine rounds")
    parser.add_argument("--only", default="", help="comma-separated case names")
    return parser.parse_args()


def _load_base(tree: str) -> dict:
    """The changed modules of the base tree, each loaded by path under a name of its own."""
    files = {"access": "runtime/accessors", "holders": "runtime/holders",
             "storage": "runtime/storage", "planner": "planner"}
    out = {}
    for short, rel in files.items():
        found = importlib.util.spec_from_file_location(f"base_{short}", f"{tree}/derivgraph/{rel}.py")
        out[short] = sys.modules[found.name] = importlib.util.module_from_spec(found)
        found.loader.exec_module(out[short])
    for name in ("NO_DICT", "HolderTable", "HopTable", "holder_of"):  # the base's accessors
        setattr(out["holders"], name, getattr(out["access"], name))
    return out


args = _args()
base = _load_base(args.base)
spec = scaling_spec()
with stamping(True):
    plan = compile_plan(scaling_model(args.size // 4), [spec])
model, entries, sources = plan.model, plan.entries, plan.tensors.sources
held = list(plan.holders.table.entries)
every = frozenset(entries)  # every entry recorded a column at a time by the compile


def base_where(entry):
    return base["access"].holder_of(plan.holders.hops.objects, model, entry)


def bound(module, read):
    tensors = module.BoundTensors(plan.graph, entries)
    tensors.constants = plan.tensors.constants
    if read is None:
        tensors.bind(model)
    else:
        tensors.bind(model, read)
    return tensors


def startup_bind_base():
    base["planner"]._record_startup(plan, (), every)
    tensors = bound(base["storage"], None)
    base["holders"].Holders(model, entries).bind(tensors.sources)
    return tensors


def startup_bind_mine():
    read = planner._record_startup(plan, (), every)
    tensors = bound(storage, read)
    holders.Holders(model, entries).bind(tensors.sources)
    return tensors


def holder_facts(h):
    t, hop = h.table, h.hops
    return ([id(d) for d in t.dicts if d is not base["access"].NO_DICT and d is not accessors.NO_DICT],
            t.keys, t.fast, t.ptrs, t.ids, t._all_fast, [id(s) for s in t.storages],
            [(s, None if w is None else (id(w[0]), w[1]), id(x), p) for s, w, x, p in h._sources],
            h._source_hops, hop.prefixes, hop.parents, hop.children, hop.slow,
            [id(d) for d in hop.dicts], [id(e) for e in hop.expected],
            [(k, id(v)) for k, v in hop.objects.items()])


def bound_facts(tensors):
    return ([(k, id(v)) for k, v in tensors.sources.items()],
            [(k, id(v)) for k, v in tensors.views.items()], dict(plan.source_ptrs))


def table_facts(t):
    return ([id(d) for d in t.dicts], t.keys, t.fast, t.ptrs, t.ids, t._all_fast)


cases = {
    "Holders.bind": (
        lambda: _bound_holders(base["holders"]), lambda: _bound_holders(holders), holder_facts),
    "HolderTable": (
        lambda: base["access"].HolderTable(held, base_where),
        lambda: accessors.HolderTable(held, plan.holders._where, accessors.holders_of(
            plan.holders.hops.objects, model, held)), table_facts),
    "startup+bind": (startup_bind_base, startup_bind_mine, bound_facts),
}


def _bound_holders(module):
    h = module.Holders(model, entries)
    h.bind(sources)
    return h


if args.only:
    cases = {k: v for k, v in cases.items() if k in args.only.split(",")}
for name, (b, m, same) in cases.items():
    assert same(b()) == same(m()), name


def seconds(fn):
    """Process seconds of one call (after a collection; its result dropped at once)."""
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


gc.disable()
out = {}
for name, (b, m, _) in cases.items():
    pairs = [(seconds(b), seconds(m)) for _ in range(args.rounds)]
    row = out[name] = {"base": round(statistics.median(a for a, _ in pairs), 4),
                       "mine": round(statistics.median(c for _, c in pairs), 4),
                       "mine_faster": sum(c < a for a, c in pairs),
                       "pairs": [(round(a, 4), round(c, 4)) for a, c in pairs]}
    print(f"{name:16} base {row['base']:.4f}  mine {row['mine']:.4f}  "  # noqa: T201
          f"faster {row['mine_faster']}/{args.rounds}")
print(json.dumps(out))  # noqa: T201

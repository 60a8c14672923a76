"""Dump what ``Plan.prepare`` left in a compiled plan, to diff two trees (the compile's dump,
``compile37/dump_plans.py``, does not cover it): each address check's state (words taken, how
many tensors, whether its words are those of the tensors now, whether they prove them), the
holders' and sources' watches, and the refill table (ids, positions, layouts, sizes, spans, flat
runs, masks, the guard built and whether it passes the targets), for the scaling workload
(stamped and not) and the bench's reference and deepseek workloads (CPU).

    PYTHONPATH=TREE python3 dump_prepared.py OUT_FILE [--size 100000]
"""

import argparse

from derivgraph.addresses import addresses
from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--size", type=int, default=100000)
args = parser.parse_args()
lines: list[str] = []


def at_state(name: str, at) -> None:
    if at is None:
        lines.append(f"  {name}: none")
        return
    words = at.words
    state = f"  {name}: n={len(at)} taken={at._taken} words={words is not None}"
    if words is not None:
        fresh = addresses(at.tensors, hold=at._hold)
        same = fresh is not None and fresh._expected == words._expected
        state += f" kept={words.kept()} same={same}"
        state += f" held={len(words.storages)}"
    lines.append(state)


def dump(name: str, plan) -> None:
    lines.append(f"== {name}")
    holders, tensors = plan.holders, plan.tensors
    checks = holders._source_checks
    at_state("sources", None if checks is None else checks[2])
    at_state("holders", holders.table._at)
    at_state("startup", tensors._startup)
    # which tensors each check holds, in order (as positions among the plan's entries)
    where = {id(e.storage): i for i, e in enumerate(plan.entries.values())}
    for name, at in (("startup", tensors._startup), ("holders", holders.table._at)):
        if at is not None:
            lines.append(f"  {name} tensors={[where.get(id(t)) for t in at.tensors]}")
            lines.append(f"  {name} ptrs are the data_ptr()s="
                         f"{at.ptrs == [t.data_ptr() for t in at.tensors]}")
    mask = tensors._startup_mask
    lines.append(f"  startup mask={None if mask is None else bytes(mask).hex()}")
    lines.append(f"  source watch={holders._source_watch is not None} "
                 f"table watch={holders.table.watch is not None}")
    table = plan._refill_table
    if table is None:
        lines.append("  refill table: none")
        return
    lines.append(f"  complete={table.complete} whole={table.whole} n={len(table.ids)}")
    lines.append(f"  ids={table.ids}")
    lines.append(f"  index={table.index}")
    lines.append(f"  shapes={[tuple(s) for s in table.shapes]}")
    lines.append(f"  dtypes={list(map(str, table.dtypes))}")
    lines.append(f"  nbytes={table.nbytes} spans={table.spans} rest={table.rest_spans}")
    flat = [(a, b, None if run.held is None else len(run.held)) for a, b, run in table.flat]
    lines.append(f"  flat={flat}")
    # what keeps each flat run's memory alive: each entry's startup record (or alias), by type,
    # and whether it is the entry's own startup data now
    entries = plan.holders.table.entries
    for a, b, run in table.flat:
        if run.held is None:
            continue
        own = [entries[i].startup_data for i in table.index[a:b]]
        lines.append(f"  flat held {a}:{b} types={sorted(set(type(h).__name__ for h in run.held))} "
                     f"own={all(map(lambda x, y: x is y, run.held, own))} "
                     f"n={len(run.starts)} span_low_is_first_ptr="
                     f"{int(run.starts.min()) == 0}")
    lines.append(f"  constant={table.is_constant} engine={table.engine}")
    lay = table._layouts
    lines.append(f"  guard={lay._guard is not None} guards={lay._guards} "
                 f"passes={lay._guard is not None and lay._guard.check(*table.storages)} "
                 f"swept={lay.swept(table.storages)}")
    taken = sorted((k is None, v is None, len(v or ())) for k, v in plan._taken_rest.items())
    lines.append(f"  rest_for={sorted(plan._taken_rest.get(None) or ())} taken_rest={taken}")


for on in (True, False):
    with stamping(on):
        dump(f"scaling_{args.size}_{'stamped' if on else 'plain'}",
             compile_plan(scaling_model(args.size // 4), [scaling_spec()]))
for workload in ("reference", "deepseek"):
    model, specs, *_ = _workload("cpu", workload, 61, None)
    dump(workload, compile_plan(model, specs))
with open(args.out, "w") as f:
    f.write("\n".join(lines) + "\n")

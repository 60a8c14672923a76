"""The plan's steady refill entry: ``refill()`` of the steady state as one generated function.

A reload engine that rebuilds the same holders every time (vLLM's reload rebuilds the same
derived tensors each reload) makes every refill after the first take the same path through
:meth:`~derivgraph.runtime.plan.Plan.run`: the hop, source and address checks pass, the
batched read finds the same targets rebuilt (one part mask), one ``_foreach_copy_`` takes them,
the partial pass computes the rest, the same holders are re-bound, :meth:`Holders.moved
<derivgraph.runtime.holders.Holders.moved>` proves them all by one joint address check. The
same native calls, half its time is Python frames between them. :func:`build` writes that path
as one function over the objects the plan holds now, bound as its globals:

- every object it reads (and the refill's ``after``) is checked first to be still the plan's
  (the key: each by identity);
- then every check the slow path makes before its first write (hops, sources held, the joint
  address check, the holders' read, the same holders rebuilt, the layout guard); any failing:
  ``return slow(verify, after)``, the plan's :meth:`~derivgraph.runtime.plan.Plan.run` refill
  from its start (nothing was written, so it decides as if this entry did not exist);
- then the writes in the slow path's order, with its report and the holder state it leaves
  (each line says which); a check after the writes that fails (a scalar holder, the address
  check after the rebind) calls the library's own rule, as the slow path does.

:meth:`~derivgraph.runtime.plan.Plan.source` (``"refill"``) prints this function, then the slow
entry it falls back to and the pass it calls: the text is exactly what runs.
"""

from __future__ import annotations

import operator
import time
from typing import Any

import torch

from derivgraph.addresses import AtAddresses
from derivgraph.compiler.codegen import Program
from derivgraph.compiler.generated import define
from derivgraph.runtime.programs import PassKind
from derivgraph.runtime.report import RunReport

__all__ = ["ENABLED", "build"]

#: whether :meth:`Plan.refill <derivgraph.runtime.plan.Plan.refill>` builds and runs the steady
#: entry (False: every refill takes the slow path, the reference)
ENABLED = True

NAME = "refill_steady"

#: the bound globals of the generated function, described in its printed header
_DESCRIBED = {
    "plan": "the plan", "holders": "plan.holders", "programs": "plan.programs",
    "tensors": "plan.tensors", "hops": "plan.holders.hops (the owner hop table)",
    "table": "plan.holders.table (the holder table)",
    "refill_table": "plan._refill_table (the refill targets in the table)",
    "mask": "the targets the engine rebuilt (the batched read's part mask)",
    "part": "refill_table._parts[mask]", "layout_guard": "part.layouts._guard",
    "rest": "what the partial pass computes", "rest_pass": "the partial pass (Program)",
    "program": "plan.programs.program (the full pass)",
    "refill_entry": "the slow refill entry (Program)", "refill_key": "its key in programs",
    "source_checks": "plan.holders._source_checks", "joint_key": "plan.holders._joint",
    "joint": "the joint address check of the sources and the startup tensors",
    "startup_at": "plan.tensors.startup_addresses()",
    "hop_dicts": "hops.dicts", "hop_keys": "hops.keys", "hop_expected": "hops.expected",
    "source_dicts": "the sources' holder dicts", "source_keys": "their keys",
    "source_tensors": "the bound sources",
    "table_dicts": "table.dicts", "table_keys": "table.keys", "table_storages": "table.storages",
    "rebuilt": "per holder of the table: whether the engine rebuilt it (the steady state's)",
    "taken_at": "the holders taken, in the order of ours", "ours": "part.ours",
    "stale": "the holders re-bound, ascending",
    "stage_table": "plan.tensors._stage_rows", "stage_rows": "the stage buffers' rows",
    "stage_names": "the derived scalars' ids", "scalars": "plan.holders._scalars",
    "scalar_reads": "plan.holders._scalar_reads",
    "after_at_build": "the refill's after (Plan.refill) when this was made",
    "after_key": "plan.holders._after_joint or table._at",
    "after_check": "the address check after the rebind (Holders._holders_at_startup)",
    "source_ptrs": "plan.source_ptrs", "slow": "Plan._refill_slow (the plan's run)",
    "set_scalars": "Plan._set_scalars",
}


def build(plan: Any, mask: tuple[bool, ...], after: AtAddresses | None = None) \
        -> Program | None:
    """The steady refill entry of ``plan`` (a :class:`~derivgraph.runtime.plan.Plan`), made
    right after a refill whose batched read took ``mask`` (not None: some targets rebuilt)
    and ``after`` (:meth:`Plan.refill <derivgraph.runtime.plan.Plan.refill>`'s); None where
    the plan's state is outside what the entry covers (the slow path stays)."""
    holders, programs, tensors = plan.holders, plan.programs, plan.tensors
    hops, table, refill_table = holders.hops, holders.table, plan._refill_table
    if hops is None or refill_table is None or refill_table.table is not table \
            or hops.slow or hops.watch is not None or hops.watchable \
            or table.watch is not None or table.watchable \
            or holders._source_watch is not None or holders._source_watchable \
            or holders._sources_stale or holders._source_checks is None \
            or plan.containers or plan.folds.entries or plan._captured \
            or not refill_table.complete or refill_table._generation != table.generation:
        return None
    joint_key = holders._joint
    startup_at = tensors._startup
    if joint_key is None or joint_key[2] is None or joint_key[2].words is None \
            or joint_key[0] is not holders._source_checks[2] or joint_key[1] is not startup_at:
        return None
    part = refill_table._parts.get(mask)
    if part is None or not isinstance(part, tuple) or part.layouts._guard is None:
        return None  # (a refused mask is not a _Part)
    rest = plan._taken_rest.get(mask, None)
    refill_key = (PassKind.REFILL, None, False)
    refill_entry = programs.built_entry(*refill_key)
    if refill_entry is None or rest is None or (rest and programs._partial.get(rest) is None):
        return None
    rest_pass = programs._partial[rest] if rest else None
    if rest_pass is not None and rest_pass.counts is None:
        return None
    taken_at = [i for i, m in zip(refill_table.index, mask) if m]
    stale = sorted(taken_at)
    if not all(table.fast[i] for i in stale):
        return None
    rebuilt = tuple(map(set(stale).__contains__, range(len(table))))
    stages = list(tensors.stages)
    stage_rows = tensors._stage_rows.get(tuple(stages), False) if stages else []
    if stage_rows is None or stage_rows is False:
        return None
    scalars, scalar_reads = holders._scalars, holders._scalar_reads
    if scalars and (scalar_reads is None or len(scalar_reads[0]) != len(scalars)):
        return None
    if after is None:
        after_key = table._at
        after_check = after_key
    else:
        after_key = holders._after_joint
        if after_key is None or after_key[0] is not table or after_key[1] is not after:
            return None
        after_check = after_key[2]
    if after_check is None:
        return None
    steps, written, nbytes = rest_pass.counts if rest_pass is not None else (0, 0, 0)
    n = len(part.ours)
    scope: dict[str, Any] = {
        "plan": plan, "holders": holders, "programs": programs, "tensors": tensors,
        "hops": hops, "table": table, "refill_table": refill_table, "mask": mask, "part": part,
        "layout_guard": part.layouts._guard, "rest": rest, "rest_pass": rest_pass,
        "program": programs.program, "refill_entry": refill_entry, "refill_key": refill_key,
        "source_checks": holders._source_checks, "joint_key": joint_key, "joint": joint_key[2],
        "startup_at": startup_at, "hop_dicts": hops.dicts, "hop_keys": hops.keys,
        "hop_expected": hops.expected, "source_dicts": holders._source_checks[0],
        "source_keys": holders._source_checks[1],
        "source_tensors": holders._source_checks[2].tensors, "table_dicts": table.dicts,
        "table_keys": table.keys, "table_storages": table.storages, "rebuilt": rebuilt,
        "taken_at": taken_at, "ours": part.ours, "stale": stale,
        "stage_table": tensors._stage_rows, "stage_rows": stage_rows, "stage_names": stages,
        "scalars": scalars, "scalar_reads": scalar_reads, "after_at_build": after,
        "after_key": after_key, "after_check": after_check, "source_ptrs": plan.source_ptrs,
        "slow": plan._refill_slow, "set_scalars": plan._set_scalars,
        "RunReport": RunReport, "torch": torch, "perf_counter": time.perf_counter,
        "is_": operator.is_, "is_not": operator.is_not, "eq": operator.eq,
        "dict_get": dict.get, "storage_of": operator.attrgetter("storage"),
    }
    lines = _body(n, part, rest_pass, stage_rows, scalars, after is not None,
                  (n + steps, n + written, part.nbytes + nbytes), len(stale))
    src = "\n".join([f"def {NAME}(verify, after):",
                     '    """plan.refill() in its steady state (the same holders rebuilt as '
                     'when this was made); else the slow entry."""',
                     *(f"    {line}" for line in lines)]) + "\n"
    if rest_pass is not None:
        scope[rest_pass.name] = rest_pass.fn
    fn = define(src, NAME, scope, NAME)
    header = ["# The steady refill entry (derivgraph.runtime.steady): what refill() runs while "
              "the engine rebuilds the same holders; it falls back to the slow entry below.",
              "# Bound when it was made (each checked by identity first):"]
    header += [f"#   {name} = {_DESCRIBED[name]}" for name in _DESCRIBED]
    if rest_pass is not None:
        header.append(f"#   {rest_pass.name} = the partial pass (printed below)")
    return Program(NAME, "\n".join(header) + "\n" + src, fn, {}, [],
                   calls=() if rest_pass is None else (rest_pass,))


def _body(n: int, part: Any, rest_pass: Program | None, stage_rows: list[Any],
          scalars: list[Any], joined: bool, counts: tuple[int, int, int],
          rebinds: int) -> list[str]:
    """The function's lines (its checks, then the writes in the slow path's order)."""
    lines = [
        "if torch.is_grad_enabled():  # as Plan.run: the writes under no_grad",
        "    with torch.no_grad():",
        f"        return {NAME}(verify, after)",
        "start = perf_counter()",
        "# the key: every object bound here is still the plan's",
        "if (holders.hops is not hops or holders.table is not table",
        "        or plan._refill_table is not refill_table or hops.slow",
        "        or holders._source_checks is not source_checks or holders._sources_stale",
        "        or holders._source_watch is not None or holders._joint is not joint_key",
        "        or tensors._startup is not startup_at",
        "        or refill_table._generation != table.generation",
        "        or refill_table._parts.get(mask) is not part",
        "        or part.layouts._guard is not layout_guard",
        "        or programs.program is not program",
        "        or programs.built_entry(*refill_key) is not refill_entry",
        "        or plan._taken_rest.get(mask) is not rest",
        "        or holders._scalars is not scalars or holders._scalar_reads is not scalar_reads",
        "        or tensors._stage_rows is not stage_table",
        "        or after is not after_at_build or plan.source_ptrs is not source_ptrs",
        "        or plan.containers or plan.folds.entries or plan._captured",
    ]
    if rest_pass is not None:
        lines.append("        or programs._partial.get(rest) is not rest_pass")
    lines.append("        or "
                 + ("holders._after_joint is not after_key):" if joined
                    else "table._at is not after_key):"))
    lines += [
        "    return slow(verify, after)",
        "# Holders.sources_intact: every owner hop, every source held, the sources and the",
        "# startup tensors at their addresses (one joint check)",
        "if not all(map(is_, map(dict_get, hop_dicts, hop_keys), hop_expected)):",
        "    return slow(verify, after)",
        "if not all(map(is_, map(dict_get, source_dicts, source_keys), source_tensors)):",
        "    return slow(verify, after)",
        "if not joint.intact():",
        "    return slow(verify, after)",
        "# RefillTable.take: the same holders rebuilt (so the same mask), their layouts",
        "current = list(map(dict_get, table_dicts, table_keys))",
        "if tuple(map(is_not, current, table_storages)) != rebuilt:",
        "    return slow(verify, after)",
        "theirs = list(map(current.__getitem__, taken_at))",
        "if not layout_guard.check(*theirs):",
        "    return slow(verify, after)",
        "# every check passed: nothing is written above this line",
        f"report = RunReport(mode='refill', steps={counts[0]}, written={counts[1]}, "
        f"bytes={counts[2]}, taken_from_engine={n})",
        "holders._owners_checked = holders._read = None  # set, then used up by the rebind",
        "holders.startup_checked = holders._sources_checked = report  # sources_intact",
        "plan._last_take = (report, mask)",
    ]
    lines += _copies(part.spans, n)
    if part.constants:
        lines.append("plan._constants_from_engine = True  # a constant took the engine's value")
    if rest_pass is not None:
        lines += [f"try:  # Programs.execute({rest_pass.name})",
                  f"    {rest_pass.name}()",
                  "except Exception as exc:  # re-raised as a PassFault that names the node",
                  "    raise programs.fault(rest_pass, exc) from exc"]
    if stage_rows:
        lines += ["for tolist, _group, entries in stage_rows:  # Plan._set_scalars",
                  "    if tolist() != list(map(storage_of, entries)):",
                  "        set_scalars(stage_names, report)",
                  "        break"]
    lines += ["for i in stale:  # HolderTable.rebind: one dict store each",
              "    table_dicts[i][table_keys[i]] = table_storages[i]",
              f"rebinds = {rebinds}"]
    if scalars:
        lines += ["if not all(map(eq, map(dict_get, *scalar_reads), map(storage_of, scalars))):",
                  "    rebinds += holders.rebind_entries(scalars, report, hops.objects)"]
    lines += ["report.rebinds = rebinds",
              "report.seconds = perf_counter() - start",
              "if not verify:",
              "    holders._rebound = (report, table)  # Holders._rebind_stale",
              "    return report",
              "# Holders.moved, its fast path: every holder proven by this run's rebind, the",
              "# table's storages (and the guard's tensors) at their addresses, nothing outside",
              "if after_check.intact() and not holders._unproven() \\",
              "        and not holders._startup_sources(source_ptrs)[1]:",
              "    holders._rebound = holders._sources_checked = None",
              f"    holders.after_checked = {'report' if joined else 'None'}",
              "    report.moved = []",
              "    return report",
              "holders._rebound = (report, table)  # as the slow path leaves it for moved",
              "report.moved = holders.moved(source_ptrs, report, after)",
              "return report"]
    return lines


def _copies(spans: list[tuple[int, int]], n: int) -> list[str]:
    """``foreach_copy(ours, theirs, spans)`` as lines (one ``_foreach_copy_`` per span)."""
    lines = []
    for start, end in spans:
        if end - start == n:
            lines.append("torch._foreach_copy_(ours, theirs)  # Taken.copy")
        elif end > start:
            lines.append(f"torch._foreach_copy_(ours[{start}:{end}], theirs[{start}:{end}])")
    return lines


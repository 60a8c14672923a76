"""In-process A/B of the planner glue this branch changed, at 100k, on the inputs one stamped
compile gives it (captured by spies, then replayed): the entry table's fill (the base's
per-entry loop against ``_fill_entries``, ``_materialize`` a no-op in both arms) and the
transaction's owner paths (``_owner_paths``, the base module loaded by path); and, as a record
of two changes measured and dropped, the planned views' filter as a C-level ``compress``
(``view_issues`` reading the generator, as ``_prepare`` hands it over) and the sources'
startup addresses (``map(address_of)`` against ``addresses.data_ptrs``). Each arm's answers
are checked equal first; collector off; process time.

    PYTHONPATH=. python benchmarks/results/adopt61/glue_ab.py --base /tmp/base_adopt61 --rounds 15
"""

from __future__ import annotations

import gc
import operator
import sys
from itertools import compress, repeat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.addresses import address_of, data_ptrs  # noqa: E402
from derivgraph.adoption import ViewOf  # noqa: E402
from derivgraph.compiler.checks import view_issues  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402

_SECOND = operator.itemgetter(1)


def _base_fill(plan: Any, ids: list[str], planned: list[Any], in_columns: set[str],
               fills: list[Any]) -> dict[str, Any]:
    """The base tree's loop in ``_compile`` (copied: it is inline there)."""
    entries = plan.entries.by_id
    generic: dict[str, Any] = {}
    for node_id, (entry, extra) in zip(ids, planned):
        if node_id not in in_columns:
            planner._materialize(plan, entry, extra, fills)
            generic[node_id] = entry
        entries[node_id] = entry
    return generic


def main() -> None:
    args = ab_args(__doc__, 15)
    base = base_module(args.base, "derivgraph/planner.py")
    captured: dict[str, Any] = {}
    fill, startup = planner._fill_entries, planner._record_startup

    def spy_fill(plan: Any, ids: Any, planned: Any, at_rest: Any, fills: Any) -> Any:
        captured.update(ids=list(ids), planned=list(planned), at_rest=list(at_rest))
        return fill(plan, ids, planned, at_rest, fills)

    def spy_startup(plan: Any, owners: Any = None) -> Any:
        read, reads = startup(plan, owners)
        captured.update(tensors=list(read.values()), columns=list(plan.entries.columns))
        return read, reads

    planner._fill_entries, planner._record_startup = spy_fill, spy_startup
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    planner._fill_entries, planner._record_startup = fill, startup
    ids, planned, at_rest = captured["ids"], captured["planned"], captured["at_rest"]
    tensors, columns = captured["tensors"], captured["columns"]
    rest = [planned[i] for i in at_rest]
    in_columns = {i for c in columns for i in c.ids}
    materialize = planner._materialize
    planner._materialize = lambda *a: None  # both arms: the 4 generic entries not allocated

    def fresh() -> Any:
        return SimpleNamespace(entries=SimpleNamespace(by_id={}))

    a, b = fresh(), fresh()
    assert _base_fill(a, ids, planned, in_columns, []) == fill(b, ids, planned, at_rest, [])
    assert list(a.entries.by_id.items()) == list(b.entries.by_id.items())
    assert base._owner_paths(rest, columns) == planner._owner_paths(rest, columns)
    assert list(map(address_of, tensors)) == data_ptrs(tensors)
    print(f"{len(ids)} entries ({len(at_rest)} generic), {len(columns)} columns, "
          f"{len(tensors)} sources")

    values: dict[str, Any] = {}  # no view planned: view_issues reads nothing

    def views_base() -> list[Any]:  # the base's generator, as _prepare hands it over
        return view_issues((e.node, values.get(e.id), values.get(x.base))
                           for e, x in planned if isinstance(x, ViewOf))

    def views_mine() -> list[Any]:
        views = compress(planned, map(isinstance, map(_SECOND, planned),
                                      repeat(ViewOf)))
        return view_issues((e.node, values.get(e.id), values.get(x.base)) for e, x in views)

    assert views_base() == views_mine()
    pieces = {
        "fill": (lambda: _base_fill(fresh(), ids, planned, in_columns, []),
                 lambda: fill(fresh(), ids, planned, at_rest, [])),
        "owner_paths": (lambda: base._owner_paths(rest, columns),
                        lambda: planner._owner_paths(rest, columns)),
        "views (dropped)": (views_base, views_mine),
        "source_ptrs (dropped)": (lambda: list(map(address_of, tensors)),
                                  lambda: data_ptrs(tensors)),
    }
    gc.collect()
    gc.disable()
    totals = {"base": [0.0] * args.rounds, "mine": [0.0] * args.rounds}
    for name, (mine_base, mine_new) in pieces.items():
        times = alternate(args.rounds, {"base": mine_base, "mine": mine_new})
        print(f"-- {name}")
        report(times)
        if "dropped" not in name:
            for arm in totals:
                totals[arm] = [t + x for t, x in zip(totals[arm], times[arm])]
    print("-- the two kept (fill, owner_paths)")
    report(totals)
    planner._materialize = materialize
    del plan


if __name__ == "__main__":
    main()

"""In-process A/B at 100k (stamped scaling compile) of the two pieces this branch changed: the
base tree's ``addresses.Addresses`` construction against this tree's (one array of TensorImpl
addresses, one gather of the startup words), on the tensor lists the compile handed to
``addresses()``; and the base ``watch._by_runs`` against this tree's (``islice``, no copies), on
the dict lists the compile handed to ``group_by_dict``. Both arms' results are checked equal
first (every startup word, index and grouping). Collector off.

    PYTHONPATH=. python benchmarks/results/prepare64/addresses_ab.py \
        --base /tmp/base_prepare64 --rounds 15
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from module_ab import ab_args, alternate, base_module, report  # noqa: E402

from derivgraph import addresses, planner  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.runtime import watch  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402


def main() -> None:
    args = ab_args(__doc__, 15)
    base_addr = base_module(args.base, "derivgraph/addresses.py")
    base_watch = base_module(args.base, "derivgraph/runtime/watch.py")
    lists: list[tuple[list[Any], bool]] = []
    tables: list[tuple[list[Any], Any]] = []
    made, grouped = addresses.addresses, watch.group_by_dict

    def spy_addresses(tensors: Any, hold: bool = True) -> Any:
        lists.append((list(tensors), hold))
        return made(tensors, hold)

    def spy_group(dicts: Any, outside: Any) -> Any:
        tables.append((list(dicts), outside))
        return grouped(dicts, outside)

    addresses.addresses = spy_addresses  # type: ignore[assignment]
    watch.group_by_dict = spy_group  # type: ignore[assignment]
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    addresses.addresses, watch.group_by_dict = made, grouped  # type: ignore[assignment]
    print("Addresses over", [(len(t), h) for t, h in lists],
          "; tables", [len(d) for d, _ in tables])
    layout = addresses._LAYOUT
    assert layout is not None and base_addr._LAYOUT == layout
    for tensors, hold in lists:
        a = base_addr.Addresses(tensors, layout, hold)
        b = addresses.Addresses(tensors, layout, hold)
        assert a._expected == b._expected and (a._impl_index == b._impl_index).all() \
            and (a._store_index == b._store_index).all() and b.kept()
    for dicts, outside in tables:
        a, b = base_watch._by_runs(dicts, outside), watch._by_runs(dicts, outside)
        assert a is not None and b is not None
        assert a[0] == b[0] and list(map(list, a[1])) == list(map(list, b[1])) and a[2] == b[2]
    print("equal: every startup word, index and grouping")
    gc.collect()
    gc.disable()
    for name, arms in [
        ("Addresses (all lists)", {
            "base": lambda: [base_addr.Addresses(t, layout, h) for t, h in lists],
            "mine": lambda: [addresses.Addresses(t, layout, h) for t, h in lists]}),
        ("_by_runs (all tables)", {
            "base": lambda: [base_watch._by_runs(d, o) for d, o in tables],
            "mine": lambda: [watch._by_runs(d, o) for d, o in tables]}),
    ]:
        print(f"== {name}")
        report(alternate(args.rounds, arms))
    del plan


if __name__ == "__main__":
    main()

"""In-process A/B of an entry column's allocation and fill at 100k, on the 3 allocated
columns' values one stamped compile hands ``EntryColumn.allocate`` (captured by a spy on
``filled_column``, every one proven row-major): base, ``allocate_column`` of each column then
one ``foreach_copy`` of all the pairs (grouped by reading every storage, as the base compile
does); mine, ``filled_column`` of each (``torch.clone``: nothing left to copy). Each arm's
storages are checked (facts and bits) equal first; collector off; process time.

    PYTHONPATH=. python benchmarks/results/adopt61/fill_ab.py --base /tmp/base_adopt61 --rounds 15
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from module_ab import ab_args, alternate, report  # noqa: E402

from derivgraph import planner  # noqa: E402
from derivgraph.adoption import allocate_column, filled_column  # noqa: E402
from derivgraph.compiler.stamp import stamping  # noqa: E402
from derivgraph.runtime.engine import foreach_copy  # noqa: E402
from derivgraph.spec.kinds import TensorKind  # noqa: E402
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec  # noqa: E402

_ATTRIBUTE = TensorKind.ATTRIBUTE


def _facts(t: torch.Tensor) -> tuple[Any, ...]:
    return (type(t), t.dtype, t.shape, t.stride(), t.storage_offset(), t.device,
            t.requires_grad)


def main() -> None:
    args = ab_args(__doc__, 15)
    columns: list[list[torch.Tensor]] = []

    def spy(values: Any, kind: Any, row_major: bool = False) -> Any:
        assert row_major and kind is _ATTRIBUTE
        columns.append(list(values))
        return filled_column(values, kind, row_major)

    planner.filled_column = spy
    with stamping(True):
        plan = planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    planner.filled_column = filled_column
    values = [v for column in columns for v in column]
    print(f"{len(columns)} columns, {len(values)} rows")

    def base() -> list[torch.Tensor]:
        ours = [s for column in columns for s in allocate_column(column, _ATTRIBUTE, True)]
        foreach_copy(ours, values)
        return ours

    def mine() -> list[torch.Tensor]:
        out: list[torch.Tensor] = []
        for column in columns:
            made = filled_column(column, _ATTRIBUTE, True)
            assert made is not None
            out += made
        return out

    a, b = base(), mine()
    assert list(map(_facts, a)) == list(map(_facts, b))
    assert all(map(torch.equal, a, b))
    del a, b
    gc.collect()
    gc.disable()
    report(alternate(args.rounds, {"base": base, "mine": mine}))
    del plan


if __name__ == "__main__":
    main()

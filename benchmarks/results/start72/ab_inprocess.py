"""In-process interleaved A/Bs (A, B, A, B ...) of this branch's three cuts on the 100k
scaling compile; A = the base's way, B = this branch's; medians, "B faster in N of M" and the
load. Run from the tree root: ``PYTHONPATH=. python3 benchmarks/results/start72/ab_inprocess.py
[PAIRS]``.

1. bit check (``planner._columns_equal`` over the compile's columns): A reads the values'
   places (``_joined``; the book's noted wholes hidden) and sweeps each column's ids against
   the written set; B takes the noted wholes and ``_pay``'s columns written whole.
2. ``columns._operands`` of a 25k source column none of whose paths is in the env: A the
   base tree's function (``/tmp/base72``, contains + getitem sweeps), B this tree's (one get).
3. the alias column's startup addresses (``AliasColumn.record_startup``): A reads each row's
   ``data_ptr()``, B takes them from the sources' addresses the startup record read.
4. the startup record's source addresses (``data_ptrs`` of the 50k sources, then
   ``note_read_addresses``, on the compile's book, its noted source addresses dropped after
   each call): A asks every source ``is_meta`` and finds the runs in ``note_read_addresses``,
   B finds the runs first (``source_runs``) and asks only the sources outside them.
5. ``ColumnLayouts.common`` of a column's very storages list (as ``_compile``,
   ``record_startup``, ``_columns_equal`` and the lowering ask it, 11 times a compile): A the
   base's identity sweep, B this tree's (the very recorded sequence: no sweep).
6. ``columns.fill_derived`` of the compile's 4 derived columns (over the compile's env, each
   call putting the same values again): A the base tree's, B this tree's (a shared input
   looked up once).
"""

import importlib.util
import operator
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from derivgraph import planner
from derivgraph.compiler import columns as mine
from derivgraph.runtime.entry_columns import AliasColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 31
BASE = "/tmp/base72/derivgraph/compiler/columns.py"


def ab(name: str, a: Callable[[], Any], b: Callable[[], Any]) -> None:
    ta, tb = [], []
    for _ in range(PAIRS):
        start = time.perf_counter()
        a()
        ta.append(time.perf_counter() - start)
        start = time.perf_counter()
        b()
        tb.append(time.perf_counter() - start)
    wins = sum(y < x for x, y in zip(ta, tb))
    print(f"{name}: A median {statistics.median(ta) * 1e3:.2f} ms, B median "
          f"{statistics.median(tb) * 1e3:.2f} ms, B faster in {wins} of {PAIRS} pairs, "
          f"load {os.getloadavg()[0]:.2f}")


real = planner._mismatches


def bit_check(plan: Any, values: Any, written: Any = None, whole: Any = ()) -> list[str]:
    book, columns, targets = plan.tensors.layouts, plan.entries.columns, plan.programs.written()
    noted = book._wholes
    answers = []

    def a() -> None:
        book._wholes = {}
        answers.append(planner._columns_equal(columns, values, targets, book, written))
        book._wholes = noted

    def b() -> None:
        answers.append(planner._columns_equal(columns, values, targets, book, written, whole))

    ab("bit check (_columns_equal, 2 columns of 25k)", a, b)
    storages = [c.storages for c in columns if type(c) is not AliasColumn]

    def base_common(tensors: Any) -> Any:  # the base's first branch of common()
        column = book._columns.get(id(tensors[0]))
        if column is not None and len(column[0]) == len(tensors) \
                and all(map(operator.is_, tensors, column[0])):
            return column[1]
        return None

    ab(f"ColumnLayouts.common of the very storages lists ({len(storages)} x 25k)",
       lambda: [base_common(x) for x in storages], lambda: [book.common(x) for x in storages])
    assert [base_common(x) for x in storages] == [book.common(x) for x in storages]
    assert whole and all(x == answers[0] for x in answers) and answers[0]
    return real(plan, values, written, whole)


real_startup = planner._record_startup


def startup(plan: Any, owners: Any = None) -> Any:
    book = plan.tensors.layouts
    tensors = [planner.get_path(plan.model, p) for p in [*plan.graph.sources(),
                                                         *plan.folds.entries]]
    answers = []

    def forget() -> None:
        for key in book._sources:
            book._addresses.pop(key, None)

    def a() -> None:
        ptrs = planner.data_ptrs(tensors)
        book.note_read_addresses(tensors, ptrs)
        answers.append((ptrs, dict(book._addresses)))
        forget()

    def b() -> None:
        runs = book.source_runs(tensors)
        ptrs = planner.data_ptrs(tensors, book.unproven_meta(len(tensors), runs))
        book.note_read_addresses(tensors, ptrs, runs)
        answers.append((ptrs, dict(book._addresses)))
        forget()

    ab(f"startup record's source addresses ({len(tensors)} sources)", a, b)
    assert all(x[0] == answers[0][0] for x in answers)
    assert all(x[1].keys() == answers[0][1].keys() and len(x[1]) == 2 for x in answers)
    return real_startup(plan, owners)


real_fill = planner.fill_derived
filled: list[Any] = []


def fill(rows: Any, env: Any) -> None:
    filled.append((rows, env))
    real_fill(rows, env)


planner._mismatches, planner._record_startup = bit_check, startup
planner.fill_derived = fill
plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
planner._mismatches, planner._record_startup = real, real_startup
planner.fill_derived = real_fill

spec = importlib.util.spec_from_file_location("base_columns", BASE)
base = importlib.util.module_from_spec(spec)
spec.loader.exec_module(base)
refs = [f"layers.{i}.scale" for i in range(1, 25000)]
sources = {r: planner.get_path(plan.model, r) for r in refs}


def operands(module: Any) -> Callable[[], Any]:
    def run() -> None:
        env: dict[str, Any] = {}
        assert module._operands(env, sources.__getitem__, refs, True, sources) is not None
    return run


ab("_operands (25k sources)", operands(base), operands(mine))
rows, env = filled[0]
ab(f"fill_derived ({len(rows)} derived columns)", lambda: base.fill_derived(rows, env),
   lambda: mine.fill_derived(rows, env))

column = next(c for c in plan.entries.columns if isinstance(c, AliasColumn))
paths = [*plan.graph.sources(), *plan.folds.entries]
tensors = [planner.get_path(plan.model, p) for p in paths]
ptrs = list(map(torch.Tensor.data_ptr, tensors))
ab("AliasColumn.record_startup (25k rows)", lambda: column.record_startup(None),
   lambda: column.record_startup(None, (tensors, ptrs)))

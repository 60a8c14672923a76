"""Process time per statement of named functions over 100k stamped compiles (for adopt62's
NOTES): each function ``module:name`` is re-made with a mark after every statement of its body
(loops' bodies too, ``if`` blocks whole) and rebound wherever a ``derivgraph`` module holds
it; a statement's time is the mean over the compiles (``--repeat``) of the time from the mark
before it to its own, summed over a loop's iterations. Statements under 1 ms are not printed.

    PYTHONPATH=TREE python3 benchmarks/results/adopt62/stmt_times.py derivgraph.planner:_compile ...
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
import textwrap
import time
from typing import Any

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

MARKS: list[tuple[tuple[str, int], float]] = []


def _mark_stmt(line: int) -> ast.stmt:
    return ast.parse(f"__mark({line})").body[0]


class _Marks(ast.NodeTransformer):
    """A mark after each statement of a function's body, of its loops' and ``with``/``try``
    bodies (an ``if`` is one statement)."""

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in body:
            st = self.visit(st)
            out.append(st)
            if not isinstance(st, ast.Return | ast.Raise | ast.Continue | ast.Break):
                out.append(_mark_stmt(st.lineno))
        return out

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.body = [_mark_stmt(0), *self._body(node.body)]
        return node

    def visit_Try(self, node: ast.Try) -> ast.Try:
        node.body, node.finalbody = self._body(node.body), self._body(node.finalbody)
        return node

    def visit_With(self, node: ast.With) -> ast.With:
        node.body = self._body(node.body)
        return node

    def visit_For(self, node: ast.For) -> ast.For:
        node.body = self._body(node.body)
        return node

    def visit_If(self, node: ast.If) -> ast.If:
        return node


def _instrument(targets: list[str]) -> None:
    rebind: list[tuple[Any, Any]] = []
    for target in targets:
        modname, _, name = target.partition(":")
        module = importlib.import_module(modname)
        fn = getattr(module, name)
        _, start = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        ast.increment_lineno(tree, start - 1)
        tree = ast.fix_missing_locations(_Marks().visit(tree))
        namespace = vars(module)
        path = fn.__code__.co_filename
        namespace["__mark"] = lambda line, path=path: MARKS.append(((path, line),
                                                                    time.process_time()))
        exec(compile(tree, path, "exec"), namespace)  # noqa: S102  # the function, re-made
        rebind.append((fn, namespace[name]))
    for module in [m for n, m in list(sys.modules.items()) if n.startswith("derivgraph")]:
        held = vars(module)
        for key, value in list(held.items()):
            for old, new in rebind:
                if value is old:
                    held[key] = new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("functions", nargs="+")
    args = parser.parse_args()
    _instrument(args.functions)
    spec = scaling_spec()
    with stamping(True):
        compile_plan(scaling_model(250), [spec])  # warm-up
    per: dict[tuple[str, int], float] = {}
    for _ in range(args.repeat):
        model = scaling_model(args.size // 4)
        MARKS.clear()
        with stamping(True):
            compile_plan(model, [spec])
        for (before, t0), (here, t1) in zip(MARKS, MARKS[1:]):
            if here[1] and before[0] == here[0]:
                per[here] = per.get(here, 0.0) + t1 - t0
        del model
    for (path, line), spent in sorted(per.items()):
        mean = spent / args.repeat
        if mean > 0.001:
            text = open(path).read().splitlines()[line - 1].strip()[:90]
            print(f"{path.rsplit('/', 1)[-1]}:{line:4d} {mean:.4f}  {text}")


if __name__ == "__main__":
    main()

"""Draw the outside review's held-out recall candidates from the installed vLLM's source.

    PYTHONPATH=. python3 tests/resources/static_recall_outside_draw.py > candidates.json

Three text-search rules over vLLM's own source (``ast`` only; the static audit is not used):

- ``pwal``: an attribute store (``obj.attr = expr``, tuple targets included) in a function named
  ``process_weights_after_loading`` or in a same-file function it calls (transitively, by name).
- ``lazy``: in any function other than ``__init__``, an ``if <obj>.attr is None:`` whose body
  stores ``<obj>.attr = expr`` (a cache built on first use).
- ``loader``: an attribute store in a function named ``load_weights`` / ``post_load_weights``,
  or in ``__init__`` of a class whose name contains ``Experts``, ``Kernel`` or ``Prepared``.

The stored expression must not be a literal (``None``, a number, a string, a bool) nor a bare
argument of the enclosing function passed through; everything else is a candidate, tensor or
not. The pool of
each list is sorted by (file, line, attr); ``random.Random(seed + k).sample`` picks ``n`` from
list k (0, 1, 2). Seed and n are read from static_recall_outside_seed.json, committed first.
Each candidate is then judged by reading the source (real derived-tensor site or not) in
static_recall_outside_vllm_0.33.json, before the audit is run on it.
"""

from __future__ import annotations

import ast
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LISTS = ("pwal", "lazy", "loader")


def _vllm_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent


def _targets(node: ast.stmt) -> list[ast.Attribute]:
    if isinstance(node, ast.Assign):
        out: list[ast.Attribute] = []
        for t in node.targets:
            elts = t.elts if isinstance(t, ast.Tuple) else [t]
            out += [e for e in elts if isinstance(e, ast.Attribute)]
        return out
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
        return [node.target]
    return []


def _literal(value: ast.expr | None) -> bool:
    if value is None or isinstance(value, ast.Constant):
        return True
    return isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant)


def _stores(fn: ast.AST) -> list[tuple[int, str]]:
    args = set()
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = fn.args
        args = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    out = []
    for node in ast.walk(fn):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or _literal(node.value):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in args:
            continue  # an argument passed through, not derived here
        out += [(t.lineno, t.attr) for t in _targets(node)]
    return out


def _called_names(fn: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                names.add(f.id)
            elif isinstance(f, ast.Attribute):
                names.add(f.attr)
    return names


def _scan(path: Path, rel: str) -> dict[str, set[tuple[str, int, str]]]:
    found: dict[str, set[tuple[str, int, str]]] = {k: set() for k in LISTS}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return found
    funcs: dict[str, list[ast.AST]] = {}
    owner: dict[ast.AST, str] = {}
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef):
            for item in cls.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owner[item] = cls.name
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs.setdefault(node.name, []).append(node)
    # pwal: PWAL bodies and same-file callees, transitively by name
    todo, seen = list(funcs.get("process_weights_after_loading", [])), set()
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        found["pwal"] |= {(rel, ln, a) for ln, a in _stores(fn)}
        for name in _called_names(fn):
            todo += [g for g in funcs.get(name, []) if name != "__init__"]
    # lazy: if <obj>.attr is None: ... <obj>.attr = expr
    for fns in funcs.values():
        for fn in fns:
            if fn.name == "__init__":
                continue
            for node in ast.walk(fn):
                if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
                    continue
                t = node.test
                right = t.comparators[0]
                if not (isinstance(t.left, ast.Attribute) and len(t.ops) == 1
                        and isinstance(t.ops[0], ast.Is) and isinstance(right, ast.Constant)
                        and right.value is None):
                    continue
                for stmt in node.body:
                    for ln, a in _stores(stmt):
                        if a == t.left.attr:
                            found["lazy"].add((rel, ln, a))
    # loader: load_weights / post_load_weights, and constructors of rebuilt objects
    for name in ("load_weights", "post_load_weights"):
        for fn in funcs.get(name, []):
            found["loader"] |= {(rel, ln, a) for ln, a in _stores(fn)}
    for fn in funcs.get("__init__", []):
        cls = owner.get(fn, "")
        if any(k in cls for k in ("Experts", "Kernel", "Prepared")):
            found["loader"] |= {(rel, ln, a) for ln, a in _stores(fn)}
    return found


def pools() -> dict[str, list[tuple[str, int, str]]]:
    root = _vllm_root()
    out: dict[str, set[tuple[str, int, str]]] = {k: set() for k in LISTS}
    for path in sorted(root.rglob("*.py")):
        rel = "vllm/" + path.relative_to(root).as_posix()
        for k, v in _scan(path, rel).items():
            out[k] |= v
    return {k: sorted(v) for k, v in out.items()}


def main() -> int:
    seed_file = json.loads((HERE / "static_recall_outside_seed.json").read_text(encoding="utf-8"))
    seed, n = seed_file["seed"], seed_file["n"]
    out = {"seed": seed, "n": n, "vllm": "0.33.0", "lists": {}}
    for k, (name, pool) in enumerate(pools().items()):
        picked = sorted(random.Random(seed + k).sample(pool, min(n, len(pool))))
        out["lists"][name] = {"population": len(pool),
                              "candidates": [{"file": f, "line": ln, "attr": a}
                                             for f, ln, a in picked]}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

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
static_recall_outside_v1_vllm_0.33.json, before the audit is run on it.

``--tensor-only`` (stage v2, seed in static_recall_outside_seed_v2.json, committed after v1
gave 1 and 2 real sites in the lazy and loader lists): keep only candidates in model code
(``model_executor/``, ``models/``, ``v1/attention/``, ``v1/spec_decode/``,
``v1/worker/gpu/spec_decode/``) whose stored expression builds a tensor (a ``torch.*`` or
``ops.*`` call, or a tensor method such as ``contiguous``/``to``/``t``/``view``/``stack``) or
whose target name reads like a tensor (weight, scale, bias, stride, workspace, lock, alpha,
cache, packed, norm).

``--seed-file`` names another committed seed file and ``--exclude`` drops the candidates of
earlier lists from the pools (stage v3, the second outside review).
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


SCOPES = ("vllm/model_executor/", "vllm/models/", "vllm/v1/attention/", "vllm/v1/spec_decode/",
          "vllm/v1/worker/gpu/spec_decode/")
TENSOR_METHODS = frozenset({
    "contiguous", "to", "t", "view", "reshape", "permute", "transpose", "float", "half",
    "bfloat16", "detach", "clone", "stack", "cat", "repeat", "repeat_interleave", "new_zeros",
    "new_ones", "new_full", "new_empty", "zeros", "ones", "full", "empty", "tensor", "item",
    "reciprocal", "squeeze", "unsqueeze", "flatten", "split", "chunk", "narrow", "expand"})
TENSOR_NAMES = ("weight", "scale", "bias", "stride", "workspace", "lock", "alpha", "cache",
                "packed", "norm")
TENSOR_ONLY = False


def _root_name(node: ast.expr) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _tensorish(value: ast.expr, targets: list[ast.Attribute]) -> bool:
    if any(any(k in t.attr.lower() for k in TENSOR_NAMES) for t in targets):
        return True
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            if _root_name(node.func) in ("torch", "ops"):
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS:
                return True
    return False


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
        targets = _targets(node)
        if TENSOR_ONLY and not _tensorish(node.value, targets):
            continue
        out += [(t.lineno, t.attr) for t in targets]
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
        if TENSOR_ONLY and not rel.startswith(SCOPES):
            continue
        for k, v in _scan(path, rel).items():
            out[k] |= v
    return {k: sorted(v) for k, v in out.items()}


def _keys(node: object) -> set[tuple[str, int, str]]:
    """Every (file, line, attr) named by a dict anywhere in a JSON document."""
    out: set[tuple[str, int, str]] = set()
    if isinstance(node, dict):
        if {"file", "line", "attr"} <= node.keys():
            out.add((node["file"], node["line"], node["attr"]))
        for v in node.values():
            out |= _keys(v)
    elif isinstance(node, list):
        for v in node:
            out |= _keys(v)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    global TENSOR_ONLY
    ap = argparse.ArgumentParser(description="Draw the outside review's held-out recall "
                                 "candidates (seed committed first).")
    ap.add_argument("--tensor-only", action="store_true",
                    help="stage v2 filter: model code, tensor-building stores")
    ap.add_argument("--seed-file", metavar="JSON",
                    help='seed file ({"seed": int, "n": int}) committed before the draw; '
                    "default static_recall_outside_seed[_v2].json")
    ap.add_argument("--exclude", nargs="*", default=[], metavar="JSON",
                    help="earlier candidate lists: their (file, line, attr) leave the pools "
                    "before the draw, so a new draw holds only fresh candidates")
    ns = ap.parse_args(sys.argv[1:] if argv is None else argv)
    TENSOR_ONLY = ns.tensor_only
    name = "static_recall_outside_seed" + ("_v2" if TENSOR_ONLY else "") + ".json"
    seed_path = Path(ns.seed_file) if ns.seed_file else HERE / name
    seed_file = json.loads(seed_path.read_text(encoding="utf-8"))
    seed, n = seed_file["seed"], seed_file["n"]
    excluded: set[tuple[str, int, str]] = set()
    for path in ns.exclude:
        excluded |= _keys(json.loads(Path(path).read_text(encoding="utf-8")))
    out = {"seed": seed, "n": n, "vllm": "0.33.0", "tensor_only": TENSOR_ONLY, "lists": {}}
    if ns.exclude:
        out["excluded"] = {"files": [Path(p).name for p in ns.exclude], "keys": len(excluded)}
    for k, (name, pool) in enumerate(pools().items()):
        pool = [c for c in pool if c not in excluded]
        picked = sorted(random.Random(seed + k).sample(pool, min(n, len(pool))))
        out["lists"][name] = {"population": len(pool),
                              "candidates": [{"file": f, "line": ln, "attr": a}
                                             for f, ln, a in picked]}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

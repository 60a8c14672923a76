"""The backends a selector's own compatibility test rejects for the storing class's config.

A selector module often tests each backend against the quantization config before it tries the
backend's experts classes (``def _backend_incompatibility_reason(backend, ..., quant_config)
-> str | None``): a test that returns a reason when the config is of a given class
(``allow_marlin = not isinstance(quant_config, MoeWNA16Config)`` ... ``if not allow_marlin and
backend in (Enum.MARLIN, Enum.EMULATION): return "..."``, or ``if backend == Enum.ZEN_CPU:``
... ``if isinstance(quant_config, MoeWNA16Config): return "..."``) means those backends never
serve a class whose ``__init__`` annotates that parameter with that config class
(``def __init__(self, quant_config: MoeWNA16Config, ...)``): their experts classes are not
reader candidates. The test is read from source with :mod:`ast` (vLLM is never imported).
"""

from __future__ import annotations

import ast

from derivgraph.audit.static.backend_branches import class_backends
from derivgraph.audit.static.source_tree import ReaderIndex, class_node, function_node, parsed
from derivgraph.audit.static.walk import walk

__all__ = ["rejected_classes"]


def rejected_classes(index: ReaderIndex, module: str, home: str, cls: str | None,
                     candidates: frozenset[str]) -> frozenset[str]:
    """The classes of ``candidates`` that selector ``module`` maps only to backends its
    compatibility test rejects for the config class ``cls`` of ``home`` is built with (module
    docstring); empty when none is rejected or the test or the annotation is not found."""
    if not cls or not module:
        return frozenset()
    members = index.memo(f"rejections {hash(module)}", lambda: _rejections(parsed(index, module)))
    if not members:
        return frozenset()
    init = index.memo(f"init annotations {hash(home)} {cls}",
                      lambda: _init_annotations(class_node(index, home, cls)))
    rejected = {m for (param, config), found in members.items()
                if init.get(param) == config for m in found}
    if not rejected:
        return frozenset()
    return frozenset(c for c in candidates if (owned := class_backends(index, module, c))
                     and owned <= rejected)


def _init_annotations(node: ast.ClassDef | None) -> dict[str, str]:
    """Parameter name -> annotated class name of class ``node``'s ``__init__``."""
    init = function_node(node, "__init__")
    if init is None:
        return {}
    return {a.arg: _name(a.annotation) for a in init.args.args + init.args.kwonlyargs
            if a.annotation is not None and _name(a.annotation)}


def _name(node: ast.expr | None) -> str:
    """The class an annotation names (``X``, ``mod.X``, ``"X"``), or ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.rsplit(".", 1)[-1].strip()
    return ""


def _rejections(tree: ast.Module | None) -> dict[tuple[str, str], frozenset[str]]:
    """(tested parameter, config class) -> the backend members rejected for it, read from
    every function of the selector module ``tree`` annotated to return ``str | None`` (a
    reason) that takes a ``backend`` parameter."""
    if tree is None:
        return {}
    out: dict[tuple[str, str], set[str]] = {}
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and _reason_test(fn)):
            continue
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        flags: dict[str, tuple[str, str]] = {}  # allow_x = not isinstance(p, X)
        for node in walk(fn):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.UnaryOp)
                    and isinstance(node.value.op, ast.Not)
                    and (test := _isinstance(node.value.operand, params))):
                flags[node.targets[0].id] = test
        _walk(fn.body, frozenset(), frozenset(), params, flags, out)
    return {k: frozenset(v) for k, v in out.items()}


def _reason_test(fn: ast.FunctionDef) -> bool:
    """Whether ``fn`` takes ``backend`` and is annotated ``-> str | None``."""
    names = {a.arg for a in fn.args.args}
    returns = ast.unparse(fn.returns) if fn.returns is not None else ""
    return "backend" in names and returns.replace(" ", "") in ("str|None", "Optional[str]")


def _isinstance(node: ast.expr, params: set[str]) -> tuple[str, str] | None:
    """``isinstance(p, X)`` with ``p`` a parameter: ``(p, X)``; else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance" and len(node.args) == 2
            and isinstance(node.args[0], ast.Name) and node.args[0].id in params
            and (config := _name(node.args[1]))):
        return node.args[0].id, config
    return None


def _members(node: ast.expr) -> frozenset[str]:
    """The backend members ``backend == E.M`` or ``backend in (E.A, E.B)`` names; else empty."""
    if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name)
            and node.left.id == "backend" and len(node.ops) == 1):
        return frozenset()
    right = node.comparators[0]
    if isinstance(node.ops[0], (ast.Eq, ast.Is)) and isinstance(right, ast.Attribute):
        return frozenset({right.attr})
    if isinstance(node.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        found = [e.attr for e in right.elts if isinstance(e, ast.Attribute)]
        return frozenset(found) if len(found) == len(right.elts) else frozenset()
    return frozenset()


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [c for v in test.values for c in _conjuncts(v)]
    return [test]


def _walk(body: list[ast.stmt], backends: frozenset[str], configs: frozenset[tuple[str, str]],
          params: set[str], flags: dict[str, tuple[str, str]],
          out: dict[tuple[str, str], set[str]]) -> None:
    """Record, for each ``return "<reason>"`` reached under a backend test and a config test
    only (every conjunct of each enclosing ``if`` is one of them; one config test in all), its
    backends for that config."""
    for stmt in body:
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Constant | ast.JoinedStr) \
                and backends and len(configs) == 1:
            if isinstance(stmt.value, ast.JoinedStr) or isinstance(stmt.value.value, str):
                for config in configs:
                    out.setdefault(config, set()).update(backends)
            return
        if not isinstance(stmt, ast.If):
            continue
        inner_b, inner_c, plain = backends, configs, True
        for part in _conjuncts(stmt.test):
            if found := _members(part):
                inner_b = found if not inner_b else inner_b & found
            elif test := _isinstance(part, params):
                inner_c = inner_c | {test}
            elif (isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not)
                  and isinstance(part.operand, ast.Name) and part.operand.id in flags):
                inner_c = inner_c | {flags[part.operand.id]}
            else:
                plain = False
        if plain:
            _walk(stmt.body, inner_b, inner_c, params, flags, out)

"""The first audit round (761 files, ``--jobs 1``) in one process, alternating the former
``walk.children`` (a new child list on every call) with scan30's (computed once per node, kept
on it), CPU time (``time.process_time``) per pass; the sites must be equal in every pass.

    PYTHONPATH=. python3 benchmarks/results/scan30/ab_children.py 3 \\
        > benchmarks/results/scan30/ab_children.txt
"""
import ast
import sys
import time
from contextlib import ExitStack
from unittest import mock

from ab_alternate import alternate

import derivgraph.audit.static.handoff as H
import derivgraph.audit.static.scan as S
import derivgraph.audit.static.scope as C
import derivgraph.audit.static.walk as W
from derivgraph.audit.static.sources import collect_files
from derivgraph.audit.static.tree_facts import tree_facts

print(f"# derivgraph from {W.__file__}")
files = collect_files([], "vllm")
texts = [(src, text) for src in files if (text := S._read(src)) is not None]
facts = tree_facts([(src.module, text) for src, text in texts], 1)
context = S._context(texts, facts)
candidates = [i for i, (_, text) in enumerate(texts) if S._is_candidate(text, facts[i], context)]


def former_children(node: ast.AST) -> list[ast.AST]:  # e138b65's walk.children
    out: list[ast.AST] = []
    kind = type(node)
    names = W._FIELDS.get(kind)
    for name in names if names is not None else W._fields(kind):
        value = getattr(node, name, None)
        if type(value) is list:
            out.extend([v for v in value if isinstance(v, ast.AST)])
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def one_pass(former: bool) -> tuple[float, list]:
    with ExitStack() as stack, S.young_collections_only():
        if former:
            for mod in (W, C, H):
                stack.enter_context(mock.patch.object(mod, "children", former_children))
        start = time.process_time()
        sites = [S._audit_one(*texts[i], context, i)[0] for i in candidates]
        return time.process_time() - start, sites


alternate(int(sys.argv[1]) if len(sys.argv) > 1 else 3, one_pass, f"{len(candidates)} files",
          lambda sites: sum(map(len, sites)))

"""Block parses (segments' ast.parse calls) per process over one in-process vLLM scan, and the
BlockParses hits: each process writes its counts to OUTDIR/counts.<pid> after every audit.
    cd /tmp && PYTHONPATH=TREE python3 parse_counts.py OUTDIR [--jobs N]"""
import ast
import os
import sys
import types

import derivgraph.audit.static.scan as S
import derivgraph.audit.static.segments as G

out = sys.argv[1]
jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else None
count = [0, 0]  # parses, audits
proxy = types.SimpleNamespace(**{k: getattr(ast, k) for k in dir(ast) if not k.startswith("__")})


def parse(*a, **k):
    count[0] += 1
    return ast.parse(*a, **k)


proxy.parse = parse
G.ast = proxy
audit = S._audit_one


def audit_one(*a, **k):
    try:
        return audit(*a, **k)
    finally:
        count[1] += 1
        with open(f"{out}/counts.{os.getpid()}", "w") as f:
            f.write(f"{os.getpid()} parses={count[0]} audits={count[1]}\n")


S._audit_one = audit_one
os.makedirs(out, exist_ok=True)
r = S.scan(package="vllm", jobs=jobs)
print("findings", len(r.findings))

"""One in-process ``scan(package="vllm", jobs=1)``: CPU seconds in all and per phase (JSON line).

Run with PYTHONPATH set to the tree to measure; alternate trees (see BENCHMARKS.md, scan21e)."""
import json
import sys
import time

import derivgraph.audit.static.scan as s

spent: dict[str, float] = {}


def timed(name, fn):
    def wrapper(*a, **k):
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - t
    return wrapper


s._context = timed("context_index", s._context)
s.apply_evidence = timed("evidence", s.apply_evidence)
s._mark_built_once = timed("built_once", s._mark_built_once)
s._run = timed("audits", s._run)
t = time.process_time()
s.scan(package="vllm", jobs=1)
spent["total"] = time.process_time() - t
print(json.dumps({"tree": sys.argv[1], **{k: round(v, 3) for k, v in spent.items()}}))

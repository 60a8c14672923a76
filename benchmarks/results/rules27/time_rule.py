"""The forwarded-rebuild rule's own wall time inside one in-process scan of vLLM (jobs=1):
its three functions wrapped with perf_counter accumulators (no profiler), against the scan."""
import json
import sys
import time

from derivgraph.audit.static import forwarded, rules, scan as scan_module

spent = {"forwarded_stores": 0.0, "resolve_forwarded": 0.0, "mirror_forwarded": 0.0}


def timed(name, fn, generator=False):
    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return list(fn(*args, **kwargs)) if generator else fn(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - start
    return run


rules.forwarded_stores = timed("forwarded_stores", forwarded.forwarded_stores, generator=True)
scan_module.resolve_forwarded = timed("resolve_forwarded", forwarded.resolve_forwarded)
scan_module.mirror_forwarded = timed("mirror_forwarded", forwarded.mirror_forwarded)
start = time.perf_counter()
report = scan_module.scan(package="vllm", jobs=1)
total = time.perf_counter() - start
json.dump({"findings": len(report.findings), "scan_s": round(total, 2),
           "rule_s": {k: round(v, 4) for k, v in spent.items()},
           "rule_total_s": round(sum(spent.values()), 4)}, sys.stdout, indent=1)
sys.stdout.write("\n")

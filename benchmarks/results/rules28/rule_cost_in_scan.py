"""The lazy-reset rule's own time inside a real scan of vLLM 0.33.0 (jobs=1), per call of
lazy_reset_sites, and the skip-set read. Run: python3 benchmarks/results/rules28/rule_cost_in_scan.py"""
import time

import derivgraph.audit.static.module as module
import derivgraph.audit.static.scan as scan_module
from derivgraph.audit.static.scan import scan

calls = []
real, real_skip = module.lazy_reset_sites, scan_module.skip_set


def timed(text, filename, reached, lineage):
    t = time.process_time()
    out = real(text, filename, reached, lineage)
    calls.append((filename, time.process_time() - t, len(out)))
    return out


def timed_skip(files):
    t = time.process_time()
    out = real_skip(files)
    calls.append(("<skip_set>", time.process_time() - t, 0))
    return out


module.lazy_reset_sites, scan_module.skip_set = timed, timed_skip
scan(package="vllm", jobs=1)
total = sum(c[1] for c in calls)
print(f"calls {len(calls)}, CPU {total:.3f} s, sites {sum(c[2] for c in calls)}")
for c in sorted(calls, key=lambda c: -c[1])[:5]:
    print(f"  {c[0]} {c[1]:.4f} s, {c[2]} sites")

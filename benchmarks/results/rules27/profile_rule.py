"""The forwarded-rebuild rule's own CPU time inside one in-process scan of vLLM (cProfile,
cumulative seconds of its three functions against the whole scan; profiling inflates both)."""
import cProfile
import json
import pstats
import sys

from derivgraph.audit.static.scan import scan

prof = cProfile.Profile()
prof.enable()
report = scan(package="vllm", jobs=1)
prof.disable()
stats = pstats.Stats(prof)
total = sum(v[2] for v in stats.stats.values())  # total internal time
own = {}
for (file, _, name), (_, _, _, cum, _) in stats.stats.items():
    if file.endswith("forwarded.py") and name in ("forwarded_stores", "resolve_forwarded",
                                                  "mirror_forwarded"):
        own[name] = round(own.get(name, 0.0) + cum, 3)
json.dump({"findings": len(report.findings), "profiled_total_s": round(total, 2),
           "rule_cumulative_s": own}, sys.stdout, indent=1)
sys.stdout.write("\n")

"""CPU the rules26 functions take inside one in-process scan of vLLM (cProfile, jobs=1): the
direct cost of the change, apart from the machine's noise.

    python3 benchmarks/results/rules26/profile_added.py
"""

from __future__ import annotations

import cProfile
import json
import pstats
import sys
import time

from derivgraph.audit.static.scan import scan
from derivgraph.spec.load import default_specs

ADDED = ("has_staging_copy", "staging_roots", "is_staging_method", "refreshed_per_step",
         "filled_local_source", "copied_from_module")
profile = cProfile.Profile()
t0 = time.process_time()
profile.enable()
scan(package="vllm", specs=default_specs(), jobs=1)
profile.disable()
total = time.process_time() - t0
stats = pstats.Stats(profile).stats
added = {}
for (path, _, name), (_, calls, _, cumulative, _) in stats.items():
    if name in ADDED and ("staging.py" in path or "scope.py" in path or "load_roots.py" in path):
        added[name] = {"calls": calls, "cum_s": round(cumulative, 3)}
sys.stdout.write(json.dumps({"scan_cpu_s_under_profile": round(total, 2), "added": added},
                            indent=1) + "\n")

"""CPU cost of the staging text test over every file of the installed vLLM (rules26): the
regex over whole files against the line-limited test that ships, next to the other text tests.

    python3 benchmarks/results/rules26/text_test_cost.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import vllm

from derivgraph.audit.static.scope import LAZY_GUARD_RE, ROOT_DEF_RE
from derivgraph.audit.static.staging import STAGING_COPY_RE, has_staging_copy

texts = [p.read_text(errors="ignore") for p in Path(vllm.__file__).parent.rglob("*.py")]
out = {"files": len(texts), "mb": round(sum(map(len, texts)) / 1e6, 1)}
for name, test in [("staging_whole_file_regex", STAGING_COPY_RE.search),
                   ("staging_has_staging_copy", has_staging_copy),
                   ("root_def_re", ROOT_DEF_RE.search), ("lazy_guard_re", LAZY_GUARD_RE.search)]:
    runs = []
    for _ in range(3):
        t0 = time.process_time()
        hits = sum(1 for t in texts if test(t))
        runs.append(round(time.process_time() - t0, 3))
    out[name] = {"hits": hits, "cpu_s_min": min(runs), "cpu_runs_s": runs}
sys.stdout.write(json.dumps(out, indent=1) + "\n")

"""Rebuild the "no case" rows of the committed outcome table from the scan (a class it lacks
gets one: rules26 adds the prefetch offloader's staging copy), keep every row with a case, and
regenerate the doc section. Runs no vLLM case.

    PYTHONPATH=. python3 benchmarks/results/rules26/add_class_rows.py
"""

from __future__ import annotations

import json
import sys

from derivgraph.audit.static.scan import scan
from derivgraph.spec.load import default_specs
from vllm_integration.class_table import (
    DOC,
    TABLE,
    build_table,
    render,
    splice,
    undeclared_error_classes,
)

classes = undeclared_error_classes(scan(package="vllm", specs=default_specs()).findings)
kept = {r["class"]: r for r in json.loads(TABLE.read_text())["classes"]}
gone = sorted(set(kept) - set(classes))
# classes without a case carry only their findings: rebuilt from the scan
new = {q: f for q, f in classes.items() if q not in kept or kept[q]["outcome"] == "no case"}
added = {r["class"]: r for r in build_table(new, {}, {"cases": {}, "rows": []}, {})}
rows = [added.get(q) or kept[q] for q in classes]
TABLE.write_text(json.dumps({"vllm": "0.33.0", "classes": rows}, indent=1) + "\n")
DOC.write_text(splice(DOC.read_text(), render(rows)))
sys.stdout.write(f"rebuilt {len(added)} rows without a case, new {sorted(set(added) - set(kept))}; "
                 f"classes gone from the scan: {gone}\n")

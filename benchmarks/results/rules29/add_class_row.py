"""Add the class table row rules29's new undeclared error needs (no executable case yet) and
regenerate the doc section from the committed table.

    python3 benchmarks/results/rules29/add_class_row.py benchmarks/results/rules29/after.json
"""
import json
import sys
from pathlib import Path

from vllm_integration.class_table import DOC, TABLE, render, splice

CLASS = "vllm.model_executor.layers.fused_moe.modular_kernel.FusedMoEExperts"


def main() -> None:
    audit = json.loads(Path(sys.argv[1]).read_text())
    found = [f for f in audit if f["qualname"] == CLASS and not f["declared"]
             and f["severity"] == "error"]
    data = json.loads(TABLE.read_text())
    rows = [r for r in data["classes"] if r["class"] != CLASS]
    rows.append({"class": CLASS, "file": found[0]["file"],
                 "findings": [{"line": f["line"], "attr": f["attr"], "store": f["store"]}
                              for f in found],
                 "case": None, "outcome": "no case", "verdicts": {}, "blocker": None,
                 "forward_stop": None, "platform_answers": None})
    order = [r["class"] for r in data["classes"]]
    print("table sorted by class:", order == sorted(order))
    if order == sorted(order):
        rows.sort(key=lambda r: r["class"])
    data["classes"] = rows
    TABLE.write_text(json.dumps(data, indent=1) + "\n")
    DOC.write_text(splice(DOC.read_text(), render(rows)))
    print(f"{len(rows)} rows; added {CLASS} with {len(found)} finding(s)")


if __name__ == "__main__":
    main()

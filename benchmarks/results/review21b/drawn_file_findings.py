"""Every audit finding (any severity) in the 15 v15 drawn files, after the judged list was committed.

    PYTHONPATH=. python3 benchmarks/results/review21b/drawn_file_findings.py > benchmarks/results/review21b/drawn_file_findings.out
"""
import json
from pathlib import Path

from derivgraph.audit.static.scan import scan

LIST = Path("tests/resources/static_recall_outside_v15b_vllm_0.33.json")


def main() -> None:
    data = json.loads(LIST.read_text())
    drawn = data["judged_files"]
    cands = data["lists"]["file_draw_v15_judge_b"]["candidates"]
    judged = {(c["file"], c["line"], c["attr"]): c["real"] for c in cands}
    findings = scan(package="vllm").findings
    for f in drawn:
        rows = sorted((x for x in findings if x.file == f), key=lambda x: x.line)
        print(f"== {f}: {len(rows)} findings")
        for x in rows:
            near = [k for k in judged if k[0] == f and k[2] == x.attr and abs(k[1] - x.line) <= 3]
            verdict = ("judged real" if any(judged[k] for k in near) else
                       "judged not real" if near else "not judged")
            print(f"  {x.line:5d} {x.attr:32s} {x.severity.value:8s}"
                  f"{' declared' if x.declared else '':9s} [{verdict}] {x.reason}")


if __name__ == "__main__":
    main()

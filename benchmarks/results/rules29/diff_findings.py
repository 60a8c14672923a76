"""List every finding that changed between two `audit static --format json --show-info` reports.

    python3 benchmarks/results/rules29/diff_findings.py before.json after.json
"""
import json
import sys

KEY = ("file", "line", "attr", "category")
SAME = ("severity", "declared", "spec", "reader", "derives_from", "evidence", "reason", "rule_round")


def main() -> None:
    before, after = (json.load(open(p)) for p in sys.argv[1:3])
    a = {tuple(f[k] for k in KEY): f for f in before}
    b = {tuple(f[k] for k in KEY): f for f in after}
    for key in sorted(set(a) | set(b), key=str):
        if key not in a:
            f = b[key]
            print(f"NEW {f['severity']}{' declared ' + f['spec'] if f['declared'] else ''} "
                  f"{f['file']}:{f['line']} {f['attr']} ({f['category']}, rule_round "
                  f"{f['rule_round']})\n  reason: {f['reason']}\n  reader: {f['reader']}\n"
                  f"  derives_from: {f['derives_from']}\n  evidence: {f['evidence']}")
        elif key not in b:
            print(f"GONE {a[key]['severity']} {key}")
        else:
            moved = [k for k in SAME if a[key].get(k) != b[key].get(k)]
            if moved:
                print(f"CHANGED {key}: {moved}")
    print(f"total {len(a)} -> {len(b)}")


if __name__ == "__main__":
    main()

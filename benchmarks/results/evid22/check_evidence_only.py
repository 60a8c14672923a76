"""Check that two `derivgraph audit static --package vllm --format json` reports differ only in
evidence fields (reader, reader_kind, derives_from, evidence): same findings (keyed by file, line,
attribute and expression), same severities and every other field equal; print each change.

Usage: python3 check_evidence_only.py BEFORE.json AFTER.json  (exit 1 on a non-evidence change)
"""

from __future__ import annotations

import json
import sys

EVIDENCE = ("reader", "reader_kind", "derives_from", "evidence")


def _key(f: dict) -> tuple:
    return (f["file"], f["line"], f["attr"], f["expr"])


def main(before_path: str, after_path: str) -> int:
    before = {_key(f): f for f in json.load(open(before_path))}
    after = {_key(f): f for f in json.load(open(after_path))}
    bad = 0
    if before.keys() != after.keys():
        print("findings added:", sorted(after.keys() - before.keys()))
        print("findings removed:", sorted(before.keys() - after.keys()))
        bad += 1
    changed = 0
    for k in sorted(before.keys() & after.keys()):
        b, a = before[k], after[k]
        other = sorted(n for n in set(a) | set(b) if n not in EVIDENCE and a.get(n) != b.get(n))
        if other:
            print(f"NON-EVIDENCE CHANGE {k[0]}:{k[1]} {k[2]}: {other}")
            bad += 1
        moved = [n for n in EVIDENCE if a.get(n) != b.get(n)]
        if moved:
            changed += 1
            print(f"{b['severity']} {k[0].removeprefix('vllm/')}:{k[1]} {k[2]}")
            for n in moved:
                print(f"  {n}: {b.get(n)!r}\n  {' ' * len(n)}-> {a.get(n)!r}")
    sev = {s: sum(f["severity"] == s for f in after.values()) for s in ("error", "warning", "info")}
    print(f"{len(after)} findings; {changed} with changed evidence; {bad} non-evidence changes; "
          f"severities after: {sev}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

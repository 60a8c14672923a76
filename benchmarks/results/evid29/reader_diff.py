"""Per-finding diff of two ``derivgraph audit static --format json --show-info`` reports.

Prints the sites only one report has, then each finding whose severity, reader, reader_kind,
derives_from or evidence changed (old and new reader and derives_from), then the counts.
Usage: python3 reader_diff.py BASE.json NEW.json
"""
import json
import sys


def key(x):
    return (x["file"], x["line"], x["attr"], x["category"])


def main(base, new):
    a = {key(x): x for x in json.load(open(base))}
    b = {key(x): x for x in json.load(open(new))}
    print(f"findings: {len(a)} -> {len(b)}; sites only in one: {sorted(set(a) ^ set(b))}")
    readers = evidence = severity = 0
    for k in sorted(a):
        x, y = a[k], b.get(k)
        if y is None:
            continue
        changed = [f for f in ("severity", "reader", "reader_kind", "derives_from", "evidence")
                   if x.get(f) != y.get(f)]
        if not changed:
            continue
        readers += "reader" in changed
        evidence += changed == ["evidence"]
        severity += "severity" in changed
        print(f"{k[0]}:{k[1]} {k[2]} [{x['severity']}->{y['severity']}] changed={changed}")
        for f in ("reader", "derives_from"):
            if x.get(f) != y.get(f):
                print(f"   OLD {f} {x.get(f)}\n   NEW {f} {y.get(f)}")
        if x.get("evidence") != y.get("evidence"):
            print(f"   NEW evidence {y.get('evidence')}")
    print(f"readers changed: {readers}; evidence only: {evidence}; severity changed: {severity}")


if __name__ == "__main__":
    main(*sys.argv[1:3])

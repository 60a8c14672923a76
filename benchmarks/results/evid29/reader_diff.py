"""Per-finding diff of two ``derivgraph audit static --format json --show-info`` reports.

Prints the sites only one report has, then each finding whose severity, reader, reader_kind,
derives_from or evidence changed (old and new reader and derives_from), then the counts. With
``--markdown OUT --judged JUDGED.json`` it also writes the changed readers as a table, with my
reading of each at its line in vLLM's installed source (JUDGED: {"file:line attr": [verdict,
note]}; a changed finding without a judgement is written "not judged").
Usage: python3 reader_diff.py BASE.json NEW.json [--markdown OUT --judged JUDGED.json]
"""
import argparse
import json


def key(x):
    return (x["file"], x["line"], x["attr"], x["category"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--markdown")
    p.add_argument("--judged")
    args = p.parse_args()
    a = {key(x): x for x in json.load(open(args.base))}
    b = {key(x): x for x in json.load(open(args.new))}
    judged = json.load(open(args.judged)) if args.judged else {}
    print(f"findings: {len(a)} -> {len(b)}; sites only in one: {sorted(set(a) ^ set(b))}")
    readers = evidence = severity = 0
    rows = []
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
        if "reader" in changed:
            verdict, note = judged.get(f"{k[0]}:{k[1]} {k[2]}", ["not judged", ""])
            rows.append(f"| `{k[0].removeprefix('vllm/')}:{k[1]}` `{k[2]}` | {x['severity']} -> "
                        f"{y['severity']} | {x.get('reader')} | {y.get('reader')} | "
                        f"**{verdict}** {note} |")
    print(f"readers changed: {readers}; evidence only: {evidence}; severity changed: {severity}")
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(f"# Changed readers, evid29 (`{args.base}` -> `{args.new}`)\n\n"
                      f"Made by `reader_diff.py` (this folder). Findings {len(a)} -> {len(b)}, "
                      f"sites only in one report: {len(set(a) ^ set(b))}; readers changed: "
                      f"{readers}; severity changed: {severity}.\n\n"
                      "| finding | severity | old reader | new reader | new one right? |\n"
                      "|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()

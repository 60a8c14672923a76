"""Print earlier-list candidates (file, line, attr, real) for the drawn files (held_out marking)."""
import glob, json, sys

def cands(d):
    out = []
    if isinstance(d, dict):
        if "file" in d and "attr" in d and "line" in d:
            out.append(d)
        for v in d.values():
            out += cands(v)
    elif isinstance(d, list):
        for v in d:
            out += cands(v)
    return out

draw = json.load(open("tests/resources/static_recall_file_v18_draw.json"))["drawn"]
rows = []
for p in sorted(glob.glob("tests/resources/static_recall_outside_v*_vllm_0.33.json")):
    if "_result_" in p:
        continue
    for c in cands(json.load(open(p))):
        rows.append((c["file"], c["line"], c["attr"], c.get("real"), p.split("outside_")[1].split("_vllm")[0]))
for f in draw:
    hits = sorted({r for r in rows if r[0] == f})
    print(f, len(hits))
    for r in hits:
        print("   ", r[1], r[2], "real" if r[3] else "notreal", r[4])

"""List earlier-list candidate keys (file, line, attr, real) touching the v16 drawn files."""
import glob, json, re, sys
draw = json.load(open("tests/resources/static_recall_file_v16_draw.json"))["drawn"]
rows = []
for p in sorted(glob.glob("tests/resources/static_recall_outside_v*_vllm_0.33.json")):
    if "result" in p or "v16" in p:
        continue
    d = json.load(open(p))
    for name, body in d["lists"].items():
        for c in body["candidates"]:
            if c["file"] in draw:
                rows.append((c["file"], c["line"], c["attr"], c["real"], p.split("outside_")[1].split("_vllm")[0]))
for r in sorted(rows):
    print(*r)

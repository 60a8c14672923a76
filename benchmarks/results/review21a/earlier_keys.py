"""Print the candidates of the earlier judged lists (static_recall_outside_v*_vllm_0.33.json) in given files."""
import glob, json, sys
from pathlib import Path

def earlier():
    out = []
    for p in sorted(glob.glob("tests/resources/static_recall_outside_v*_vllm_0.33.json")):
        if "v15" in p:
            continue
        d = json.load(open(p))
        for name, body in d["lists"].items():
            for c in body["candidates"]:
                out.append((Path(p).name, name, c["file"], c["line"], c["attr"], c["real"]))
    return out

if __name__ == "__main__":
    keys = earlier()
    for f in sys.argv[1:]:
        for k in keys:
            if k[2] == f:
                print(*k)

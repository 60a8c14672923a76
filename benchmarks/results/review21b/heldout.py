"""Earlier-list keys near (file, attr, line): heldout.py file attr line."""
import glob, json, sys
def earlier(root="tests/resources"):
    out = []
    for p in sorted(glob.glob(f"{root}/static_recall_outside_v*_vllm_0.33.json")):
        if "v15" in p:
            continue
        d = json.load(open(p))
        for name, body in d["lists"].items():
            for c in body["candidates"]:
                out.append((p.split("/")[-1], c["file"], c["attr"], c["line"], c.get("real")))
    return out
if __name__ == "__main__":
    E = earlier()
    f, a, l = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for e in E:
        if e[1] == f and e[2] == a and abs(e[3] - l) <= 3:
            print(e)

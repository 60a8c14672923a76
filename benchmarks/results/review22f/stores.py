"""List attribute stores in each drawn file and earlier-list keys for the same file (stdlib only)."""
import glob, json, os, re, sys
import vllm
SP = os.path.dirname(os.path.dirname(vllm.__file__))
STORE = re.compile(r"^\s*(self|layer|\w+)\.\w+(\[[^\]\n]*\])?\s*=(?!=)|\bsetattr\(|\bregister_buffer\(|\breplace_parameter\(")
def earlier():
    keys = []
    for p in sorted(glob.glob("tests/resources/static_recall_outside_v*_vllm_0.33.json")):
        if "v17" in p:
            continue
        d = json.load(open(p))
        lists = d.get("lists", d)
        for name, l in (lists.items() if isinstance(lists, dict) else []):
            if not isinstance(l, dict):
                continue
            for c in l.get("candidates", []):
                keys.append((c["file"], c["attr"], c["line"], c.get("real"), os.path.basename(p)))
    return keys
if __name__ == "__main__":
    draw = json.load(open("tests/resources/static_recall_file_v17_draw.json"))["drawn"]
    ek = earlier()
    idx = [int(a) for a in sys.argv[1:]] or range(len(draw))
    for i in idx:
        f = draw[i]
        print(f"=== {i+1} {f}")
        for n, line in enumerate(open(os.path.join(SP, f)), 1):
            if STORE.search(line) and not line.lstrip().startswith("#"):
                print(f"{n}: {line.rstrip()}")
        for k in ek:
            if k[0] == f:
                print("  earlier:", k)

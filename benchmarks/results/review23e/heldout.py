"""Print earlier-list candidates (v1..v17g) near a (file, attr, line): held_out is false when one lies within 3 lines."""
import json, re, sys
from pathlib import Path

RES = Path(__file__).resolve().parents[3] / "tests" / "resources"


def earlier():
    out = []
    for p in sorted(RES.glob("static_recall_outside_v*_vllm_0.33.json")):
        if "v18" in p.name:
            continue
        d = json.loads(p.read_text())
        for name, body in d.get("lists", {}).items():
            for c in body.get("candidates", []):
                out.append((p.name, name, c["file"], c["attr"], c["line"], c.get("real")))
    return out


def main():
    rows = earlier()
    for arg in sys.argv[1:]:
        f, attr, line = arg.rsplit(":", 2)
        hits = [r for r in rows if r[2].endswith(f) and r[3] == attr and abs(r[4] - int(line)) <= 3]
        near = [r for r in rows if r[2].endswith(f) and r[3] == attr and abs(r[4] - int(line)) > 3]
        print(arg, "HELD_OUT" if not hits else "NOT_HELD_OUT", hits[:4], "| same attr elsewhere:", near[:3])


if __name__ == "__main__":
    main()

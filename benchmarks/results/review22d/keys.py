"""Held-out check and exact quotes for the v16 judge-D list (standard library and vllm only).

    python3 benchmarks/results/review22d/keys.py held FILE:LINE:ATTR ...   # earlier-list candidates near the key
    python3 benchmarks/results/review22d/keys.py quote FILE:LINE ...       # "path:N text" from the installed file
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import vllm

SITE = Path(vllm.__file__).resolve().parent.parent
RES = Path(__file__).resolve().parents[3] / "tests" / "resources"
EARLIER = sorted(p for p in RES.glob("static_recall_outside_v*_vllm_0.33.json")
                 if "v16" not in p.name)


def earlier_keys() -> list[tuple[str, str, int, str]]:
    out = []
    for p in EARLIER:
        data = json.loads(p.read_text())
        for body in data["lists"].values():
            for c in body.get("candidates", []):
                out.append((c["file"], c["attr"], int(c["line"]), p.name))
    return out


def quote(file: str, line: int) -> str:
    text = (SITE / file).read_text().splitlines()[line - 1].strip()
    return f"{file}:{line} {text}"


def main(argv: list[str]) -> int:
    cmd, args = argv[0], argv[1:]
    if cmd == "held":
        keys = earlier_keys()
        for a in args:
            f, ln, attr = a.rsplit(":", 2)
            hits = [k for k in keys if k[0] == f and k[1] == attr and abs(k[2] - int(ln)) <= 3]
            print(a, "held_out" if not hits else f"NOT held out: {hits}")
    elif cmd == "attrs":  # every earlier key in a file
        keys = earlier_keys()
        for a in args:
            for k in sorted(set(k for k in keys if k[0] == a), key=lambda k: k[2]):
                print(k)
    elif cmd == "quote":
        for a in args:
            f, ln = a.rsplit(":", 1)
            print(quote(f, int(ln)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

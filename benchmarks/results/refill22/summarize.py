"""Markdown rows of a side-by-side tag (refill22): python3 summarize.py TAG"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
tag = sys.argv[1]
for f in sorted(HERE.glob(f"{tag}_*_r*.json")):
    d = json.loads(f.read_text())
    if "paired" in d:
        p, ng = d["paired"], d.get("paired_no_guard_vs_off", {})
        g, u = d.get("paired_plugin_vs_no_guard", {}), d.get("paired_off_vs_unhooked", {})
        print(f"| {f.stem} | {d['vllm_off_ms']} | **{p['ratio_median']:.3f}** {p['ratio_ci95']} "
              f"| {p['delta_us_median']:.0f} {p['delta_us_ci95']} | {ng.get('ratio_median', 0):.3f} "
              f"{ng.get('ratio_ci95')} | {g.get('delta_us_median', 0):.0f} {g.get('delta_us_ci95')} "
              f"| {u.get('ratio_median', 0):.3f} | {d['load_after'][0]} | {d['moved_after_plugin_reload']} |")
    else:
        print(f"| {f.stem} | {d['post_load_us']:.0f} | {d['refill_us']:.0f} {d['refill_ci95_us']} "
              f"| **{d['post_load_refill_over_post_load']:.3f}** {d['ci95']} | {d['over_alone']:.3f} "
              f"{d['over_alone_ci95']} | {d['load_after'][0]} |")
for f in sorted(HERE.glob(f"{tag}_*_pieces.json")):
    d = json.loads(f.read_text())["pieces_us"]
    print(f.stem, {k: v["median"] for k, v in d.items()})

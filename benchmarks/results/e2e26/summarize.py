"""The rows of the e2e26 side by side (a copy of e2e24's): per process, the paired ratios and deltas of the plugin,
hooks-only and no-guard arms against vLLM alone (off). usage: summarize.py TAG"""
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).parent
tag = sys.argv[1]
rows = {"branch": [], "base": []}
for path in sorted(HERE.glob(f"{tag}_*_r*.json")):
    tree, r = path.stem.split("_")[-2:]
    d = json.loads(path.read_text())
    p, h, g = d["paired"], d["paired_hooks_only_vs_off"], d["paired_no_guard_vs_off"]
    guard = d["paired_plugin_vs_no_guard"]
    rows[tree].append(p["ratio_median"])
    print(f"| {tree}, {r} | {d['vllm_off_ms']:.2f} | **{p['ratio_median']:.3f}** "
          f"[{p['ratio_ci95'][0]:.3f}, {p['ratio_ci95'][1]:.3f}] | {p['delta_us_median']:.0f} "
          f"[{p['delta_us_ci95'][0]:.0f}, {p['delta_us_ci95'][1]:.0f}] | "
          f"{h['delta_us_median']:.0f} [{h['delta_us_ci95'][0]:.0f}, {h['delta_us_ci95'][1]:.0f}] | "
          f"{g['ratio_median']:.3f} | {guard['delta_us_median']:.0f} "
          f"[{guard['delta_us_ci95'][0]:.0f}, {guard['delta_us_ci95'][1]:.0f}] | "
          f"{d['moved_after_plugin_reload']} | {d['load_after'][0]:.1f} |")
for tree, values in rows.items():
    if values:
        print(tree, "paired ratio median", statistics.median(values), "range", min(values),
              max(values))

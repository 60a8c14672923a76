"""Plant each bug once in a copy of this tree's library and run the guard tests on it.

    PYTHONPATH=. python3 benchmarks/results/guard57/canary.py \
        > benchmarks/results/guard57/canaries.txt
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SWEEP = "derivgraph/guard/sweep.py"
WHOLE = ("resized, wrong, now = self._compared(order)\n"
         "        return self._verdict(resized, wrong, now)")
GROW = "        self.grows[index] = self.grows.get(index, 0) + 1\n"

PLANTS = {
    "K0 control (nothing planted)": (SWEEP, "MAX_GROWS = 4\n", "MAX_GROWS = 4\n"),
    "K1 the whole sweep proves only the first half of the dicts": (
        SWEEP, WHOLE, WHOLE.replace("_compared(order)", "_compared(order[:len(order) // 2])")),
    "K2 the whole sweep's hits never make a dict dirty": (
        SWEEP, WHOLE, WHOLE.replace("(resized, wrong, now)", "(resized, [], [])")),
    "K3 the whole sweep ignores the dicts' lengths": (
        SWEEP, WHOLE, WHOLE.replace("(resized, wrong, now)", "([], wrong, now)")),
    "K4 the whole gather kept past a grow (its columns miss the grown item)": (
        SWEEP, GROW + "        self.gathers.clear()\n",
        GROW + "        self.gathers = {k: g for k, g in self.gathers.items()"
        " if k == self.whole}\n"),
    "K5 the words' suspects dropped for a gather of over 20 dicts (the whole one)": (
        SWEEP, "        suspects = None if slots is None else slots.suspects()\n",
        "        suspects = None if slots is None else slots.suspects()\n"
        "        suspects = [] if self.acc and len(self.dicts) > 20 else suspects\n"),
}


def main() -> None:
    for name, (path, old, new) in PLANTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "tree"
            shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", "results"))
            text = (tree / path).read_text()
            assert text.count(old) == 1, name
            (tree / path).write_text(text.replace(old, new))
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/guard",
                 "-x" if "--first" in sys.argv else "-q"],
                cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                capture_output=True, text=True)
            failed = [line for line in run.stdout.splitlines() if line.startswith("FAILED")]
            modes: dict[str, int] = {}
            for line in failed:
                mode = line.split("[")[1].split("-")[0].split("]")[0] if "[" in line else "-"
                modes[mode] = modes.get(mode, 0) + 1
            print(f"== {name}: rc {run.returncode}, {len(failed)} failed, by mode {modes}")
            for line in failed[:12]:
                print("   ", line.split(" - ")[0])
            out = run.stdout.strip()
            print("   ", out.splitlines()[-1] if out else run.stderr[-300:])
        sys.stdout.flush()


if __name__ == "__main__":
    main()

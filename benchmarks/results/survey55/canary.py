"""Plant each canary once in a copy of this tree, run the concept's tests, report which went red;
a plant the import self-test catches (the proofs then unavailable) is planted again with the
self-test bypassed (``AVAILABLE = True``), so that the sweep's own tests are seen to catch it.

    python3 benchmarks/results/survey55/canary.py /tmp/survey55_canary
"""

import shutil
import subprocess
import sys
from pathlib import Path

TREE = Path(__file__).resolve().parents[3]
PLANTS = {
    "C1 the value word expected as it is at the proof (not the snapshot value)": (
        "derivgraph/dict_slots.py", "expected += [id(keys[j]), ids[j]]",
        "expected += [id(keys[j]), _word(slot[1])]"),
    "C2 the heads not checked (a replaced table's old entries read)": (
        "derivgraph/dict_slots.py", "if now.tobytes() != self._heads_bytes:", "if False:"),
    "C3 a dict not read proves its items (its constant word expected)": (
        "derivgraph/dict_slots.py", "self._words[places], self._expected[places] = _CONSTANT, -1",
        "self._words[places], self._expected[places] = _CONSTANT, 0"),
    "C4 the item rule's hits named by their place among the suspects": (
        "derivgraph/guard/sweep.py",
        "return [suspects[j] for j in _differing(dicts, keys, values)]",
        "return _differing(dicts, keys, values)"),
    "C5 each word read mapped to the wrong item": (
        "derivgraph/dict_slots.py", "np.repeat(read, 2).tolist()",
        "np.repeat(read[::-1], 2).tolist()"),
    "C6 the last read's suspects returned without checking the other words": (
        "derivgraph/dict_slots.py", "                if now.tobytes() == self._read_bytes:\n"
        "                    return last[2]",
        "                if True:\n                    return last[2]"),
}


def main() -> None:
    out = Path(sys.argv[1])
    for name, (path, old, new), forced in [(n, p, f) for n, p in PLANTS.items()
                                           for f in (False, True)]:
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(TREE, out,
                        ignore=shutil.ignore_patterns(".git", "benchmarks", "__pycache__"))
        text = (out / path).read_text()
        assert text.count(old) == 1, name
        (out / path).write_text(text.replace(old, new))
        if forced:
            name += " [self-test bypassed]"
            slots = out / "derivgraph/dict_slots.py"
            text = slots.read_text()
            assert text.count("AVAILABLE: bool = _available()") == 1
            slots.write_text(text.replace("AVAILABLE: bool = _available()",
                                          "AVAILABLE: bool = True"))
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "tests/guard/test_dict_slots.py", "tests/guard/test_moved_dicts.py",
                              "tests/guard/test_version_tags.py"],
                             cwd=out, env={"PYTHONPATH": str(out), "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True)
        failed = sorted({line.split(" ")[1].split("::", 1)[1] for line in run.stdout.splitlines()
                         if line.startswith("FAILED ")})
        tail = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-300:]
        print(f"{name}\n  rc={run.returncode} {tail}\n  red: {failed}\n", flush=True)


if __name__ == "__main__":
    main()

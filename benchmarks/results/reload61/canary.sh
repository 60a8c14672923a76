#!/bin/bash
# Plant each bug once in a copy of the tree (git archive HEAD), run the tests of the new
# reporting, print which went red. Usage (from the repository root):
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/reload61/canary.sh > benchmarks/results/reload61/canaries.txt
set -u
tree=$PWD
run() {  # name, file, old text, new text (replaced once; asserted present)
  dir=$(mktemp -d /tmp/canary_r61_XXXX)
  git -C "$tree" archive HEAD | tar -x -C "$dir"
  (cd "$dir" && python3 - "$2" "$3" "$4" <<'PY'
import pathlib, sys
p, old, new = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
s = p.read_text()
assert old in s, old
p.write_text(s.replace(old, new, 1))
PY
  echo "== $1 ($2)"
  PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider tests/vllm/test_reload_transitions.py \
     tests/vllm/test_bench_vllm.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" | head -12)
  rm -rf "$dir"
}
f=vllm_integration/reload_bench.py
run K0-control $f "def _by_previous" "def _by_previous"
run K1-previous-never-advances $f "        previous = arm
" ""
run K2-steady-state-from-plugin-after-off $f 'on_on = medians.get(f"{mode} after {mode}")' \
  'on_on = medians.get(f"{mode} after off")'
run K3-timed-reloads-not-recorded $f "                sequence.append((mode, times[mode][-1]))" \
  "                pass"
run K4-first-reload-under-the-wrong-arm $f "        previous = mode  # the last" \
  '        previous = "off"  # the last'
run K5-carry-from-plugin-after-plugin $f 'off_off, off_on = medians.get("off after off"), medians.get(f"off after {mode}")' \
  'off_off, off_on = medians.get("off after off"), medians.get(f"{mode} after {mode}")'

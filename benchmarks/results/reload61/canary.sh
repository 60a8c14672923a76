#!/bin/bash
# Plant each bug once in a copy of the tree (git archive HEAD), run the tests of the new
# reporting, print which went red. Usage (from the repository root):
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/reload61/canary.sh > benchmarks/results/reload61/canaries.txt
set -u
tree=$PWD
run() {  # name, file, python replacement script
  dir=$(mktemp -d /tmp/canary_r61_XXXX)
  git -C "$tree" archive HEAD | tar -x -C "$dir"
  (cd "$dir" && python3 -c "$3" && echo "== $1 ($2)" && \
   PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider tests/vllm/test_reload_transitions.py \
     tests/vllm/test_bench_vllm.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" | head -12)
  rm -rf "$dir"
}
sub() {  # the python that replaces $2 by $3 once in $1 (asserting it was there)
  printf 'import pathlib\np=pathlib.Path(%q)\ns=p.read_text()\nassert %q in s\np.write_text(s.replace(%q, %q, 1))\n' "$1" "$2" "$2" "$3"
}
run K0-control vllm_integration/reload_bench.py "pass"
run K1-previous-never-advances vllm_integration/reload_bench.py \
  "$(sub vllm_integration/reload_bench.py '        previous = arm
' '')"
run K2-steady-state-from-plugin-after-off vllm_integration/reload_bench.py \
  "$(sub vllm_integration/reload_bench.py 'on_on = medians.get(f"{mode} after {mode}")' 'on_on = medians.get(f"{mode} after off")')"
run K3-timed-reloads-not-recorded vllm_integration/reload_bench.py \
  "$(sub vllm_integration/reload_bench.py '                sequence.append((mode, times[mode][-1]))' '                pass')"
run K4-first-reload-under-the-wrong-arm vllm_integration/reload_bench.py \
  "$(sub vllm_integration/reload_bench.py '        previous = mode  # the last' '        previous = "off"  # the last')"

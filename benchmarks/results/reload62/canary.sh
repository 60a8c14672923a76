#!/bin/bash
# Plant each bug once in a copy of the tree (git archive HEAD), run the new tests and the
# address-check tests beside them, print which went red. Usage (from the repository root):
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/reload62/canary.sh > benchmarks/results/reload62/canaries.txt
set -u
tree=$PWD
run() {  # name, file, old text, new text (replaced once; asserted present)
  dir=$(mktemp -d /tmp/canary_r62_XXXX)
  git -C "$tree" archive HEAD | tar -x -C "$dir"
  (cd "$dir" && python3 - "$2" "$3" "$4" <<'PY'
import pathlib, sys
p, old, new = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
s = p.read_text()
assert old in s, old
p.write_text(s.replace(old, new, 1))
PY
  echo "== $1 ($2)"
  PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider tests/runtime/test_after_address_check.py \
     tests/vllm/test_guard_storage_proof.py tests/runtime/test_joint_address_check.py \
     tests/guard/test_storage_words.py tests/vllm/test_guard_plugin.py \
     2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" | head -12)
  rm -rf "$dir"
}
h=derivgraph/runtime/holders.py
c=vllm_integration/completion.py
g=derivgraph/guard/guard.py
run K0-control $h "def _holders_at_startup" "def _holders_at_startup"
run K1-guard-told-kept-always $c "    kept = report is not None and holders is not None and holders.after_checked is report" \
  "    kept = True"
run K2-proven-before-the-check $h "        if joint[2] is not None and joint[2].intact():
            self.after_checked = report
            return True" "        self.after_checked = report
        if joint[2] is not None and joint[2].intact():
            return True"
run K3-a-failed-joint-fails-the-holders $h "            return True
        return table.at_startup_addresses()

    def _holders_proven" "            return True
        return False

    def _holders_proven"
run K4-proof-outlives-its-run $h "        self.after_checked = None
        fast =" "        fast ="
run K5-guard-skips-even-unasked $g "        if not kept:  # else proven by the caller" "        if False:  # else proven by the caller"
run K6-joint-without-the-holders $h "AtAddresses(table.storages + after.tensors, table.ptrs + after.ptrs)" \
  "AtAddresses(after.tensors, after.ptrs)"

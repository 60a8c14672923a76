#!/bin/bash
# Each bug planted once in a copy of this tree; the named tests run on it (red expected).
#   PATH=/work/venv/bin:$PATH bash benchmarks/results/guard60/canary.sh > benchmarks/results/guard60/canaries.txt
TREE=${TREE:-/work/wt/guard60}
TESTS="tests/guard/test_declared_read_lazily.py tests/vllm/test_hook_imports.py tests/guard/test_guard.py tests/guard/test_isolation.py tests/vllm/test_guard_plugin.py tests/vllm/test_completion.py"
plant() {  # name, file, python replacement (old -> new)
  dir=/tmp/canary_guard60_$1
  rm -rf "$dir" && mkdir -p "$dir" && git -C "$TREE" archive HEAD | tar -x -C "$dir"
  python3 - "$dir/$2" "$3" "$4" <<'PY'
import sys
path, old, new = sys.argv[1:]
s = open(path).read()
assert s.count(old) == 1, (path, old)
open(path, "w").write(s.replace(old, new))
PY
  echo "== $1: $5"
  (cd "$dir" && PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider $TESTS 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" | sed 's/ - .*//' | grep -E "test_guard_plugin|test_declared_read_lazily|test_guard.py|passed|failed" | head -14)
  rm -rf "$dir"
}
echo "== K0 control: nothing planted"
(cd "$TREE" && PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider $TESTS 2>&1 | tail -1)
plant K1 vllm_integration/reload_wrappers.py "@functools.cache
def _session" "def _session" "the hooks' session module not cached (a from-import per call)"
plant K2 derivgraph/guard/guard.py "declared = self._declared_ids(tensors) if changed else self.declared" "declared = self._declared_ids(tensors)" "the declared tensors read on every restore"
plant K3 derivgraph/guard/guard.py "tensors = declared() if callable(declared) else declared" "tensors = () if callable(declared) else declared" "a function of declared tensors never read"
plant K4 vllm_integration/guarding.py "declared=plan.declared_storages)" "declared=())" "the plugin hands the guard no declared tensors"
plant K5 derivgraph/guard/sweep.py "dirty = {owners[b] for b, v in zip(wrong, now)" "dirty = {owners[b] for b, v in zip(wrong[:0], now)" "the guard's sweep never finds a changed dict item (an undeclared rebuilt tensor missed)"

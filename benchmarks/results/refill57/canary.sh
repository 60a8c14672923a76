#!/bin/bash
# Plant each bug once in a copy of this tree, run the joint address check's tests (and the
# storage-words tests), print which went red. usage: bash canary.sh TREE
tree=${1:-/work/wt/refill57}
plant() {  # name (file old new)...: each old text replaced by its new one
  rm -rf /tmp/r57_canary && mkdir -p /tmp/r57_canary
  tar -C "$tree" --exclude=.git --exclude=benchmarks/results -cf - . | tar -x -C /tmp/r57_canary
  python3 - "${@:2}" <<'PY'
import sys
args = sys.argv[1:]
for path, old, new in zip(args[::3], args[1::3], args[2::3]):
    p = "/tmp/r57_canary/" + path
    s = open(p).read()
    assert s.count(old) == 1, (path, old)
    open(p, "w").write(s.replace(old, new))
PY
  echo "== $1"
  (cd /tmp/r57_canary && PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider \
     tests/runtime/test_joint_address_check.py tests/runtime/test_storage_words_checks.py \
     tests/runtime/test_first_refill.py 2>&1 | grep -E "^FAILED|passed|failed" | sed 's/ - .*//')
}
plant "C1 the joint check built over the sources only" derivgraph/runtime/holders.py \
  "at.tensors + startup.tensors, at.ptrs + startup.ptrs)" "at.tensors, at.ptrs)"
plant "C2 the startup proof taken before the joint check passes" derivgraph/runtime/holders.py \
  "            if joint.intact():
                self.startup_checked = report
                return True" "            self.startup_checked = report
            if joint.intact():
                return True"
plant "C3 restore_storage keeps the proof (not taken once)" derivgraph/runtime/storage.py \
  "proven, self.at_startup = self.at_startup, False" "proven = self.at_startup"
plant "C3b C3 and Plan.run's finally does not drop it either" derivgraph/runtime/storage.py \
  "proven, self.at_startup = self.at_startup, False" "proven = self.at_startup" \
  derivgraph/runtime/plan.py "        finally:
            self.tensors.at_startup = False" "        finally:
            pass"
plant "C4 Plan.run passes a proof whatever the source check proved" derivgraph/runtime/plan.py \
  "self.tensors.at_startup = self.holders.startup_checked is report" "self.tensors.at_startup = True"
plant "C5 the failed joint check not dropped: the sources' own check skipped" derivgraph/runtime/holders.py \
  "            self._drop_joint()
            return at.intact()" "            return False"

#!/bin/bash
# plant each bug once in a copy of this tree, run the tests that must see it, report red/green
# usage: bash canary.sh THIS_TREE
tree=$1
tests="tests/runtime/test_source_record_handoff.py tests/runtime/test_holder_bind_reads.py tests/runtime/test_recorded_source_addresses.py"
[ -n "$TESTS" ] && tests=$TESTS
plant() {  # name, file, python replacement (old, new)
  name=$1; file=$2; old=$3; new=$4
  work=$(mktemp -d /tmp/canary_startup64.XXXX)
  git -C "$tree" archive HEAD | tar -x -C "$work"  # the committed tree
  if [ -n "$file" ]; then
    OLD="$old" NEW="$new" python3 - "$work/$file" <<'PY' || { echo "$name: NOT PLANTED"; return; }
import os, sys
p = sys.argv[1]
s = open(p).read()
old, new = os.environ["OLD"], os.environ["NEW"]
assert s.count(old) == 1, "pattern not found once"
open(p, "w").write(s.replace(old, new))
PY
  fi
  out=$(cd "$work" && PYTHONPATH="$work" python3 -m pytest -q -p no:cacheprovider $tests 2>&1)
  echo "== $name: $(echo "$out" | tail -1)"
  echo "$out" | grep -E "^FAILED" | sed 's/ - .*//' | head -12
  rm -rf "$work"
}
[ -z "$ONLY_PICKER" ] && {
plant "K0 control" "" "" ""
plant "K1 _read_ptrs without the identity sweep" derivgraph/runtime/holders.py \
  "            or not all(map(_is, objects, reads.objects)):" "            or False:"
plant "K2 _read_ptrs takes the addresses one row off" derivgraph/runtime/holders.py \
  "    return reads.ptrs[:n]" "    return reads.ptrs[1:n + 1] if len(reads.ptrs) > n else reads.ptrs[:n]"
plant "K3 the check made even where a source is outside a dict" derivgraph/runtime/holders.py \
  "        if None not in where:  # the source check's columns" "        if True:  # the source check's columns"
plant "K4 the check's dicts and keys swapped" derivgraph/runtime/holders.py \
  "            self._source_checks = (list(map(_first, where)), list(map(_second, where))," \
  "            self._source_checks = (list(map(_second, where)), list(map(_first, where)),"
plant "K5 the record's addresses handed without the record (bind takes them with no recorded)" derivgraph/runtime/holders.py \
  "        ptrs = _read_ptrs(reads, tensors) if recorded else None" "        ptrs = _read_ptrs(reads, tensors)"
plant "K6 the startup record hands no addresses" derivgraph/planner.py \
  "    return read, reads._replace(ptrs=ptrs)" "    return read, reads"
}
# the refill table's pick (engine._picker): ONLY_PICKER=1 TESTS="tests/runtime/test_refill_picker.py tests/runtime/test_refill_batched.py"
if [ -n "$ONLY_PICKER" ]; then
plant "K0 control (picker)" "" "" ""
plant "K7 the whole list by length alone" derivgraph/runtime/engine.py \
  "    if len(index) == size and index == list(range(size)):" "    if len(index) == size:"
plant "K8 a part from the start taken as the whole list" derivgraph/runtime/engine.py \
  "    if len(index) == size and index == list(range(size)):" "    if index == list(range(len(index))):"
fi

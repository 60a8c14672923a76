#!/usr/bin/env bash
# Plants each bug once in a copy of this tree and runs the tests named below; prints which went
# red. Usage: PATH=/work/venv/bin:$PATH bash benchmarks/results/refill60/canary.sh > canaries.txt
set -u
TREE=$(cd "$(dirname "$0")/../../.." && pwd)
WORK=$(mktemp -d)
TESTS="tests/runtime/test_refused_watch.py tests/runtime/test_stage_host_read.py tests/runtime/test_dict_tags.py tests/runtime/test_scalar_stages.py tests/runtime/test_stage_compare.py tests/runtime/test_refill_batched.py tests/runtime/test_moved_holder_proof.py tests/runtime/test_first_refill.py tests/runtime/test_plan.py"
plant() {  # name file python-replace-old python-replace-new
  rm -rf "$WORK/t" && mkdir -p "$WORK/t" && (cd "$TREE" && git ls-files -z | xargs -0 cp --parents -t "$WORK/t")
  python3 - "$WORK/t/$2" "$3" "$4" <<'PY'
import sys, pathlib
p = pathlib.Path(sys.argv[1]); s = p.read_text()
assert s.count(sys.argv[2]) == 1, sys.argv[2]
p.write_text(s.replace(sys.argv[2], sys.argv[3]))
PY
  echo "== $1"
  (cd "$WORK/t" && PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider $TESTS 2>&1 | grep -E "^FAILED|passed|failed|rror" | sed "s/ - .*//" | head -12)
}
plant "C1 a holder table refused from the start (never watched)" derivgraph/runtime/accessors.py \
  "        # size is fixed, so it would refuse again; settle then asks no more
        self.watchable = True" \
  "        # size is fixed, so it would refuse again; settle then asks no more
        self.watchable = False"
plant "C2 a bind keeps the sources' refusal" derivgraph/runtime/holders.py \
  "        self._source_checks = self._source_watch = None
        self._source_watchable = True" \
  "        self._source_checks = self._source_watch = None"
plant "C3 the sources' refusal not remembered (asked on every full sweep)" derivgraph/runtime/holders.py \
  "            if self._source_watchable:" "            if True:"
plant "C4 a hop table's refusal not remembered (its settle asks every time)" derivgraph/runtime/accessors.py \
  "walked again): snapshot the tags of their dicts.\"\"\"
        if self.watch is not None:
            self.watch.settle()
        elif self.watchable:" \
  "walked again): snapshot the tags of their dicts.\"\"\"
        if self.watch is not None:
            self.watch.settle()
        else:"
plant "C5 staged_if_changed answers 'unchanged' without comparing" derivgraph/runtime/storage.py \
  "            same = same and values == list(map(_STORAGE, entries))" "            same = True"
plant "C6 _rebind_stale rebinds the first holders' values, not the stale ones'" derivgraph/runtime/holders.py \
  "list(map(current.__getitem__, stale))" "current[:len(stale)]"
plant "C7 _scalars_current compares against the scalars in reverse order" derivgraph/runtime/holders.py \
  "map(_storage, self._scalars)))" "map(_storage, reversed(self._scalars))))"
plant "C8 the stage buffer's NumPy read a snapshot taken once (not a view read each time)" derivgraph/runtime/storage.py \
  "        return buffer.numpy().tolist" \
  "        values = buffer.numpy().tolist()
        return lambda: values"
plant "C9 bfloat16 buffers read through NumPy (it has no bfloat16)" derivgraph/runtime/storage.py \
  "torch.int8, torch.uint8, torch.bool})" "torch.int8, torch.uint8, torch.bool, torch.bfloat16})"
plant "C10 a float16 buffer read through NumPy (is it the same numbers? torch's read kept)" derivgraph/runtime/storage.py \
  "torch.int8, torch.uint8, torch.bool})" "torch.int8, torch.uint8, torch.bool, torch.float16})"
rm -rf "$WORK"

#!/bin/bash
# Each mutation planted in the library, the tests below run, then reverted (git checkout).
cd "$(dirname "$0")/../../.."
TESTS="tests/runtime/test_shared_address_lists.py tests/runtime/test_holder_columns.py tests/runtime/test_refill_table_order.py tests/runtime/test_opaque_entries.py tests/guard/test_words_first_compare.py tests/guard/test_storage_words.py"
mut() {  # name file old new
  python3 - "$2" "$3" "$4" <<'PY'
import sys
p, a, b = sys.argv[1:]
s = open(p).read()
assert s.count(a) == 1, a
open(p, "w").write(s.replace(a, b))
PY
  if PATH=/work/venv/bin:$PATH PYTHONPATH=$PWD python3 -m pytest -q -x $TESTS >/tmp/refsA84_mut.log 2>&1; then
    echo "$1: GREEN (not caught)"
  else
    echo "$1: RED ($(grep -m1 -E '^FAILED' /tmp/refsA84_mut.log | cut -c1-110))"
  fi
  git checkout -q -- "$2"
}
A=derivgraph/addresses.py; H=derivgraph/runtime/accessors.py; E=derivgraph/runtime/engine.py
mut "AtAddresses copies its tensors again" $A "self.tensors = tensors if type(tensors) is list else list(tensors)" "self.tensors = list(tensors)"
mut "AtAddresses copies its ptrs again" $A "self.ptrs = ptrs if type(ptrs) is list else list(ptrs)" "self.ptrs = list(ptrs)"
mut "Addresses ignores shared (copies)" $A "self.tensors = tensors if shared and type(tensors) is list else list(tensors)" "self.tensors = list(tensors)"
mut "Addresses.rows copies" $A "        out.tensors = tensors
" "        out.tensors = list(tensors)
"
mut "indices made eagerly" $A "self._indices: list[int] | None = None" "self._indices: list[int] | None = list(range(len(self.ptrs)))"
mut "lazy indices wrong (reversed)" $A "indices = self._indices = list(range(len(self.ptrs)))" "indices = self._indices = list(range(len(self.ptrs)))[::-1]"
mut "fast: a column's rows 0" $H 'fast[rows] = b"\x01" * m' 'fast[rows] = bytes(m)'
mut "fast a list again" $H "    fast = bytearray(n)
" "    fast: Any = [False] * n
"
mut "engine: every target marked" $E "else bytes(len(self.ids))" 'else b"\x01" * len(self.ids)'
mut "nbytes: numel only" $E 'self.nbytes = array("q", chain.from_iterable(repeat(n * e, k)' 'self.nbytes = array("q", chain.from_iterable(repeat(n, k)'
mut "nbytes a list again" $E 'self.nbytes = array("q", chain.from_iterable(repeat(n * e, k) for k, n, e in sizes))' 'self.nbytes = list(chain.from_iterable(repeat(n * e, k) for k, n, e in sizes))'

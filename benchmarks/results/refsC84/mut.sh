#!/bin/bash
# each mutation planted in the library (one or two replacements in one file), the new and
# related tests run, then the file reverted (git checkout: run on a committed tree)
cd "$(dirname "$0")/../../.."
T="tests/compiler/test_compile_kept_lists.py tests/compiler/test_layer_proof_reads.py tests/runtime/test_kept_addresses.py tests/compiler/test_shared_column_lists.py"
mut() {  # name file old new [old2 new2]
  python3 - "${@:2}" <<'PY'
import sys
p, *pairs = sys.argv[1:]
s = open(p).read()
for old, new in zip(pairs[::2], pairs[1::2]):
    assert s.count(old) == 1, old
    s = s.replace(old, new)
open(p, "w").write(s)
PY
  out=$(PYTHONPATH=$PWD /work/venv/bin/python3 -m pytest -q $T 2>&1 | tail -1)
  git checkout -q -- "$2"
  case "$out" in *failed*) echo "RED   $1: $out";; *) echo "GREEN $1: $out";; esac
}
L=derivgraph/compiler/lower_layers.py
E=derivgraph/runtime/entry_columns.py
K='globals().setdefault("_KEPT", {})'
mut "memo addresses copied again" $L "got: list[int | None] | None = noted " "got: list[int | None] | None = list(noted) "
mut "alias storages copied again" $E "storages = record.storages if type" "storages = list(record.storages) if type"
mut "the old memo kept alive past the compile (by the layer's key)" $L \
  "memo[key] = values  # type" "$K[key] = memo; memo[key] = values  # type"
mut "kept values in a module dict, not the memo (no memo check)" $L \
  "memo[key] = values  # type" "$K[key] = values  # type" \
  "values = None if kept is None or memo is None else memo.get(kept)" "values = None if kept is None or memo is None else $K.get(kept)"
mut "kept values of another position" $L "return None if values is None else values.get(k)" "return None if values is None else values.get(k + 1)"
mut "alias storages reversed" $E "storages = record.storages if type" "storages = record.storages[::-1] if type"

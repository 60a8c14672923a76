#!/bin/bash
# plant one bug (python str.replace in FILE), run the tests, restore the file; prints the result
# usage: bash canary.sh NAME FILE OLD NEW TESTS...
name=$1; file=$2; old=$3; new=$4; shift 4
cp "$file" "/tmp/canary_adopt62.bak"
/work/venv/bin/python - "$file" "$old" "$new" <<'PY'
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
assert s.count(old) == 1, f"{old!r} found {s.count(old)} times"
open(p, "w").write(s.replace(old, new))
PY
out=$(PYTHONPATH=. /work/venv/bin/python -m pytest -q -p no:cacheprovider "$@" 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed")
cp "/tmp/canary_adopt62.bak" "$file"
echo "== $name: planted in $file: $old -> $new"
echo "$out"

#!/usr/bin/env bash
# Plant one bug by a literal text replacement in FILE, run the named tests, restore FILE.
#   bash benchmarks/results/tail61/canary.sh NAME FILE OLD NEW TEST...
set -u
name=$1 file=$2 old=$3 new=$4; shift 4
cp "$file" "/tmp/canary_tail61.bak"
/work/venv/bin/python - "$file" "$old" "$new" <<'PY'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
assert text.count(old) == 1, f"{old!r} found {text.count(old)} times"
open(path, "w").write(text.replace(old, new))
PY
echo "== $name: $file: '$old' -> '$new'"
PYTHONPATH=. /work/venv/bin/python -m pytest -q -p no:cacheprovider "$@" 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" | head -20
cp "/tmp/canary_tail61.bak" "$file"
git diff --quiet -- "$file" || { git diff --stat -- "$file"; }

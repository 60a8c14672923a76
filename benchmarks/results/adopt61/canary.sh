#!/bin/bash
# usage: canary.sh FILE OLD NEW TESTS... : plant (python str.replace once), run tests, revert
f=$1; old=$2; new=$3; shift 3
cp "$f" /tmp/adopt61_canary_backup
/work/venv/bin/python - "$f" "$old" "$new" <<'PY'
import sys
f, old, new = sys.argv[1:4]
s = open(f).read()
assert s.count(old) == 1, ("not unique", s.count(old))
open(f, "w").write(s.replace(old, new))
PY
PYTHONPATH=. timeout 900 /work/venv/bin/python -m pytest -q -p no:cacheprovider "$@" 2>&1 | grep -E "passed|failed|FAILED|error" | head -12
cp /tmp/adopt61_canary_backup "$f"
git diff --quiet -- "$f" 2>/dev/null; echo "reverted: $(git diff --stat -- "$f" | tail -1)"

#!/bin/bash
# Plant each bug once in a copy of this tree, run the tests that should go red, report.
# usage: PATH=/work/venv/bin:$PATH bash canary.sh TREE
set -u
TREE=${1:-/work/wt/survey56}
F=derivgraph/dict_versions.py
plant() {  # name, python replace (old, new), bypass the self-test (1) or not
    local name=$1 old=$2 new=$3 bypass=${4:-0} dir=/tmp/canary_survey56_$1_$4
    rm -rf "$dir"; mkdir -p "$dir"
    (cd "$TREE" && git ls-files -z | xargs -0 cp --parents -t "$dir") 2>/dev/null
    cp "$TREE/$F" "$dir/$F"
    OLD="$old" NEW="$new" python3 - "$dir/$F" <<'PY'
import os, sys
p = sys.argv[1]; s = open(p).read(); old, new = os.environ["OLD"], os.environ["NEW"]
assert s.count(old) == 1, old
open(p, "w").write(s.replace(old, new))
PY
    if [ "$bypass" = 1 ]; then
        sed -i 's/^AVAILABLE: bool = _available()$/AVAILABLE: bool = _available() or True/' "$dir/$F"
        grep -q "_available() or True" "$dir/$F" || echo "bypass not planted"
    fi
    echo "== $name (self-test bypassed: $bypass; AVAILABLE: $(cd "$dir" && python3 -c 'from derivgraph import dict_versions as d; print(d.AVAILABLE, d._self_test())'))"
    (cd "$dir" && PYTHONPATH=. python3 -m pytest -q -p no:cacheprovider tests/test_dict_versions.py \
        tests/guard/test_version_tags.py 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" | head -12)
}
plant C1_no_each_moved_check "return other.tobytes() == self._bytes and not any(" "return other.tobytes() == self._bytes or 0 and not any(" 0
plant C2_no_other_tags_check "return other.tobytes() == self._bytes and not any(" "return True or not any(" 0
plant C3_put_into_the_read "other = now.copy()" "other = now" 0
plant C4_adopt_keeps_stale_ints "            self._tags, self._bytes, self._list = moved" "            self._tags, self._bytes = moved[:2]" 0
plant C1_no_each_moved_check "return other.tobytes() == self._bytes and not any(" "return other.tobytes() == self._bytes or 0 and not any(" 1
plant C2_no_other_tags_check "return other.tobytes() == self._bytes and not any(" "return True or not any(" 1
plant C3_put_into_the_read "other = now.copy()" "other = now" 1
plant C4_adopt_keeps_stale_ints "            self._tags, self._bytes, self._list = moved" "            self._tags, self._bytes = moved[:2]" 1

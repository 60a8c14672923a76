#!/bin/bash
# dump the base tree's and this tree's plans (dump_plans.py) and compare them; md5 per tree
# usage: bash dump_compare.sh BASE_TREE THIS_TREE OUT_PREFIX
base=$1; mine=$2; out=$3
here=$(cd "$(dirname "$0")/../compile37" && pwd)  # compile37's dump_plans.py
[ -d "$out.base" ] || (cd /tmp && PYTHONPATH="$base" python3 "$here/dump_plans.py" "$out.base")
rm -rf "$out.mine"
(cd /tmp && PYTHONPATH="$mine" python3 "$here/dump_plans.py" "$out.mine")
(cd "$out.base" && md5sum *) > "$out.base.md5"
(cd "$out.mine" && md5sum *) > "$out.mine.md5"
diff -r "$out.base" "$out.mine" > /dev/null && echo "IDENTICAL" || echo "DIFFERENT"

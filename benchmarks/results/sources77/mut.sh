#!/bin/bash
# usage: s77_mut.sh FILE 'python-old' 'python-new' tests...
f=$1; old=$2; new=$3; shift 3
/work/venv/bin/python3 - "$f" "$old" "$new" <<'PY'
import sys
p,a,b=sys.argv[1:4]; s=open(p).read(); assert s.count(a)==1,(a,s.count(a)); open(p,'w').write(s.replace(a,b))
PY
PATH=/work/venv/bin:$PATH python3 -m pytest -q "$@" 2>&1 | tail -1
git checkout -q -- "$f"

#!/bin/bash
# usage: canary.sh FILE OLD NEW  -- plant, run the compact tests, restore
f=$1; cp $f /tmp/pass48_canary.bak
python3 -c "import sys;p,o,n=sys.argv[1:];s=open(p).read();assert o in s,o;open(p,'w').write(s.replace(o,n,1))" "$f" "$2" "$3"
PYTHONPATH=$PWD timeout 600 /work/venv/bin/python -m pytest tests/compiler/test_compact_lowering.py -q -p no:cacheprovider 2>&1 | tail -6 | grep -E "passed|failed|FAILED"
cp /tmp/pass48_canary.bak $f

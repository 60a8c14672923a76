#!/bin/bash
# alternating `derivgraph bench --workload scaling --format json`, base tree then this tree
# usage: bash scaling_pairs.sh PAIRS BASE_TREE THIS_TREE
n=$1; base=$2; mine=$3
for i in $(seq "$n"); do
  for t in base mine; do
    tree=$base; [ "$t" = mine ] && tree=$mine
    echo "== $t $i load $(cut -d' ' -f1 /proc/loadavg)"
    (cd /tmp && PYTHONPATH="$tree" /usr/bin/time -f "time %e %U %S" python3 -c \
      "import sys; from derivgraph.cli import main; sys.argv=['derivgraph','bench','--workload','scaling','--format','json']; sys.exit(main())" 2>&1)
  done
done

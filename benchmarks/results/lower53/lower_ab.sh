#!/bin/bash
# alternating processes: base tree then this tree, N pairs; one JSON line each
# usage: bash lower_ab.sh BASE MINE N > FILE
here=$(cd "$(dirname "$0")" && pwd)
for i in $(seq 1 "$3"); do
  for t in "$1:base" "$2:mine"; do
    tree=${t%:*}; tag=${t##*:}
    (cd /tmp && PYTHONPATH=$tree /work/venv/bin/python "$here/lower_ab.py" --tag "$tag" --rounds 7)
  done
done

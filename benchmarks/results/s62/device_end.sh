#!/bin/bash
# The thirty-first session's one device call: the final-tree goals (device_final.sh, N rounds)
# and the compile A/B against the session's base on the same machine's CPU (device_ab.sh).
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT N=2 PAIRS=2 BASE_REV=28dbdf99 bash benchmarks/results/s62/device_end.sh
set -u
OUT=${OUT:?}; here=$(dirname "$0")/..
mkdir -p "$OUT/final" "$OUT/ab"
OUT=$OUT/final N=${N:-2} bash "$here/s57/device_final.sh"
OUT=$OUT/ab BASE_REV=${BASE_REV:-28dbdf99} PAIRS=${PAIRS:-2} bash "$here/s61/device_ab.sh"

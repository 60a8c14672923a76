#!/bin/bash
# usage: bash make_base_pkg.sh BASE_TREE OUT_DIR  ->  OUT_DIR/derivgraph_base (imports renamed)
set -e
src=$1; out=$2
rm -rf "$out/derivgraph_base"; mkdir -p "$out"
cp -r "$src/derivgraph" "$out/derivgraph_base"
find "$out/derivgraph_base" -name '*.py' -print0 | xargs -0 sed -i -E \
  -e 's/\bfrom derivgraph([. ])/from derivgraph_base\1/g' \
  -e 's/\bimport derivgraph([. \n]|$)/import derivgraph_base\1/g' \
  -e 's/"derivgraph\./"derivgraph_base./g'

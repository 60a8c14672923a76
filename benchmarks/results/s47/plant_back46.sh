#!/usr/bin/env bash
# Plant each back46 rule's bug in turn and show tests/compiler/test_back46.py go red, then green
# again on the clean tree (run from the repository root on a clean working tree; restores it).
set -u
T=tests/compiler/test_back46.py
run() { PYTHONPATH=$PWD python3 -m pytest -q -p no:cacheprovider $T 2>&1 | tail -2; git checkout -q derivgraph; }
echo "== plant 1: _holds_none by equality (None in nodes)"
sed -i 's/    return any(map(_is, nodes, repeat(None)))/    return None in nodes/' derivgraph/adoption_columns.py; git diff --stat; run
echo "== plant 2: the transaction ignores the reader it is given"
sed -i 's/        if paths is None or paths.root is not model:/        if True:/' derivgraph/compiler/transaction.py; git diff --stat; run
echo "== plant 3: the transaction trusts another model's reader"
sed -i 's/        if paths is None or paths.root is not model:/        if paths is None:/' derivgraph/compiler/transaction.py; git diff --stat; run
echo "== plant 4: codegen's bound keys made as plain tuples"
sed -i 's/    return tuple(map(_TUPLE_NEW, repeat(Bound), zip(refs)))/    return tuple(zip(refs))/' derivgraph/compiler/codegen.py; git diff --stat; run
echo "== clean tree"
run

#!/bin/bash
# The stage-v13b draw script reproduces the committed v13 and v12 raw draws byte for byte.
set -e
R=tests/resources
EX=""
for v in 1 2 3 4 5 6 7 8 9 10 10b 11; do EX="$EX $R/static_recall_outside_v${v}_vllm_0.33.json"; done
PYTHONPATH=. python3 $R/static_recall_outside_draw.py --tensor-only --seed-file $R/static_recall_outside_seed_v13.json --lists undeclared_derived --exclude $EX $R/static_recall_outside_v12_vllm_0.33.json > /tmp/review17_v13_redraw.json
cmp /tmp/review17_v13_redraw.json $R/static_recall_outside_v13_draw.json && echo "v13 draw: identical"
PYTHONPATH=. python3 $R/static_recall_outside_draw.py --tensor-only --seed-file $R/static_recall_outside_seed_v12.json --lists setup_hooks --exclude $EX > /tmp/review17_v12_redraw.json
cmp /tmp/review17_v12_redraw.json $R/static_recall_outside_v12_draw.json && echo "v12 draw: identical"

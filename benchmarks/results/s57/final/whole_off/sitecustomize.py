"""On PYTHONPATH before this tree: the guard's sweep with its whole raw-word proof off
(``WHOLE_ITEMS = 0``: the version tags wherever proven, the path before guard57), to tell the
whole proof's share in the vLLM reload A/B (``s57/final/vllm_arms.sh``)."""

import derivgraph.guard.sweep as _sweep

_sweep.WHOLE_ITEMS = 0

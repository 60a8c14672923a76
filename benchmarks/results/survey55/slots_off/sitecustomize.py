"""Loaded at start-up from PYTHONPATH (ab_off runs): this tree with the raw-word proofs off."""
import derivgraph.dict_slots as _ds
_ds.AVAILABLE = False

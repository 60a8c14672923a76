"""The spec language: models, formulas, loading, checks and the JSON Schema (no torch)."""

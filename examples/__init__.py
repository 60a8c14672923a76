"""Examples and reference modules (shipped as derivgraph.examples)."""

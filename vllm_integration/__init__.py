"""derivgraph inside vLLM 0.33.0 reload paths."""

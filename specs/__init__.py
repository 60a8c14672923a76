"""Built-in derived-tensor specs, shipped in the wheel as derivgraph.spec_library."""

"""vLLM end to end on CPU: ``reload_weights`` on the tiny Llama with the plugin against without.

The measurement is :mod:`vllm_integration.reload_bench` (``derivgraph bench --workload vllm``
runs it with its defaults and the CPU clock); this script offers every option it has: the
diagnostic arms (``--unhooked``, ``--hooks-only``, ``--no-guard``), ``--pieces`` and ``--json``.
Its docstring (``--help``) says what each figure is.

    python3 benchmarks/bench_vllm_reload.py --repeat 41 \
        --json benchmarks/results/vllm_reload_cpu.json
    python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat 301
    python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat 301 --pieces
    python3 benchmarks/bench_vllm_reload.py --clock cpu --repeat 301 --unhooked
"""

from __future__ import annotations

from vllm_integration.reload_bench import main

if __name__ == "__main__":
    main()

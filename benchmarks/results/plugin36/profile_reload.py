"""cProfile of the plugin's completion (``session._complete``) over many refill reloads of the
bench's tiny Llama (cProfile's own cost inflates small calls: read it for the call structure,
``probe_reload.py`` for the times).

    python3 benchmarks/results/plugin36/profile_reload.py [N] [SORT] [OUT.txt]
"""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny_llama import tiny_llama  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    sort = sys.argv[2] if len(sys.argv) > 2 else "cumulative"
    prof = cProfile.Profile()
    with tiny_llama() as (_model, reload):
        from vllm_integration import session
        inner = session._complete

        def profiled(*a: Any, **k: Any) -> Any:
            prof.enable()
            try:
                return inner(*a, **k)
            finally:
                prof.disable()

        gc.collect()
        gc.freeze()
        session._complete = profiled
        for i in range(n):
            reload(i)
        session._complete = inner
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats(sort).print_stats(70)
    if len(sys.argv) > 3:
        Path(sys.argv[3]).write_text(out.getvalue())
    print(out.getvalue())  # noqa: T201


if __name__ == "__main__":
    main()

"""Quote installed vLLM 0.33.0 lines exactly: q.py path:line [path:line ...] (path relative to site-packages)."""
import os, sys, vllm
SP = os.path.dirname(os.path.dirname(vllm.__file__))
def quote(spec):
    path, line = spec.rsplit(":", 1)
    text = open(os.path.join(SP, path)).read().splitlines()[int(line) - 1]
    return f"{path}:{line} {text.strip()}"
if __name__ == "__main__":
    for a in sys.argv[1:]:
        print(quote(a))

"""The rows of the e2e29 side by side: e2e24's summarize.py, run over this folder (its files
``TAG_{branch,base}_r*.json``). usage: summarize.py TAG"""
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "e2e24" / "summarize.py"
exec(compile(SOURCE.read_text(), str(SOURCE), "exec"),  # noqa: S102 - the e2e24 script, unchanged
     {"__name__": "__main__", "__file__": str(HERE / "summarize.py")})

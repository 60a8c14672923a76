"""Every fenced example of README.md and docs/*.md runs, as ``tests/docblocks.py`` describes.

Commands run in a sandbox: a temporary folder holding a link to each top-level entry of the
repository, except ``examples/`` and ``docs/``, which are copied (commands write files
there: ``trace -o my.yaml``, ``vllm_coverage.py --write docs/coverage.md``), so nothing a
documented command writes lands in the checkout (``test_documented_writes_stay_in_the_sandbox``).
``derivgraph`` and ``python3`` on the PATH are this interpreter with this tree first on
``PYTHONPATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.docblocks import (
    ROOT,
    Block,
    MarkerError,
    command_lines,
    doc_files,
    parse_blocks,
)

BLOCKS = [b for path in doc_files() for b in parse_blocks(path.read_text(encoding="utf-8"),
                                                          str(path.relative_to(ROOT)))]
_COMMAND_TIMEOUT_S = 300
_COPIED = ("examples", "docs")  # copied into the sandbox; every other entry is a link


def _param(block: Block) -> object:
    marks = []
    if "gpu" in block.markers:
        marks.append(pytest.mark.gpu)
    if "slow" in block.markers:
        marks.append(pytest.mark.slow)
    return pytest.param(block, id=block.id, marks=marks)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    for entry in ROOT.iterdir():
        if entry.name in _COPIED or entry.name.startswith("."):
            continue
        (root / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for name in _COPIED:
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir = root / ".bin"
    bin_dir.mkdir()
    for name, target in (("derivgraph", "-m derivgraph.cli"), ("python3", "")):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" {target} "$@"\n')
        script.chmod(0o755)
    return root


def _env(sandbox: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{sandbox / '.bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("COLUMNS", None)
    return env


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=_COMMAND_TIMEOUT_S)


def _cwd(block: Block, sandbox: Path) -> Path:
    return sandbox / block.get("cwd", ".")


def _expected_exits(block: Block, n: int) -> list[int]:
    codes = [int(c) for c in block.get("exit", "0").split()]
    if len(codes) == 1:
        return codes * n
    assert len(codes) == n, f"{block.id}: exit marker gives {len(codes)} codes for {n} commands"
    return codes


def _contains_lines_in_order(expected: str, actual: str) -> str | None:
    """The first expected line missing from ``actual`` (in order), or ``None``."""
    lines = [line.rstrip() for line in actual.splitlines()]
    pos = 0
    for want in (w.rstrip() for w in expected.splitlines()):
        if not want.strip():
            continue
        try:
            pos = lines.index(want, pos) + 1
        except ValueError:
            return want
    return None


def _check_bash(block: Block, sandbox: Path) -> None:
    commands = command_lines(block.body)
    assert commands, f"{block.id}: a bash block with no command"
    stdout = []
    for command, code in zip(commands, _expected_exits(block, len(commands))):
        done = _run(command, _cwd(block, sandbox), _env(sandbox))
        assert done.returncode == code, (
            f"{block.id}: `{command}` exited {done.returncode}, expected {code}\n"
            f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
        assert "Traceback (most recent call last)" not in done.stderr, done.stderr[-3000:]
        stdout.append(done.stdout)
    for text in block.markers.get("expect", []):
        assert text in "".join(stdout), f"{block.id}: output lacks {text!r}"


def _check_yaml(block: Block, sandbox: Path) -> None:
    body = block.body
    if block.get("fragment") == "derived":
        body = ("version: 1\nspecs:\n  - name: doc-fragment\n    target: {module_class: Any}\n"
                "    derived:\n" + textwrap.indent(body, "      "))
    elif block.get("fragment") is not None:
        pytest.fail(f"{block.id}: unknown fragment {block.get('fragment')!r}")
    spec_file = _cwd(block, sandbox) / f"doc_{Path(block.file).stem}_{block.line}.yaml"
    spec_file.write_text(body, encoding="utf-8")
    done = _run(f"derivgraph validate {spec_file}", _cwd(block, sandbox), _env(sandbox))
    assert done.returncode == 0 and done.stdout.startswith("ok:"), (
        f"{block.id}: not a valid spec file:\n{done.stdout}{done.stderr}")
    model = block.get("model")
    if model:
        done = _run(f"derivgraph plan --model {model} --specs {spec_file} --require-match",
                    _cwd(block, sandbox), _env(sandbox))
        assert done.returncode == 0, f"{block.id}: does not compile against {model}:\n" \
            f"{done.stdout}{done.stderr}"
        assert "derived tensors" in done.stdout, done.stdout


def _check_python(block: Block, sandbox: Path) -> None:
    code = "\n".join([*block.markers.get("setup", []), block.body])
    done = subprocess.run([sys.executable, "-c", code], cwd=_cwd(block, sandbox),
                          env=_env(sandbox), capture_output=True, text=True,
                          timeout=_COMMAND_TIMEOUT_S)
    assert done.returncode == 0, f"{block.id}: python example failed:\n{done.stderr[-3000:]}"


def _check_output(block: Block, sandbox: Path) -> None:
    command = block.get("output")
    assert command, f"{block.id}: a {block.lang or 'plain'} block needs an output or skip marker"
    done = _run(command, _cwd(block, sandbox), _env(sandbox))
    assert done.returncode == int(block.get("exit", "0")), f"{command}: {done.stderr[-3000:]}"
    missing = _contains_lines_in_order(block.body, done.stdout)
    assert missing is None, (f"{block.id}: `{command}` no longer prints the documented line "
                             f"{missing!r}; it printed:\n{done.stdout[-3000:]}")


_CHECKS = {"bash": _check_bash, "sh": _check_bash, "yaml": _check_yaml,
           "python": _check_python}


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_doc_example(block: Block, sandbox: Path) -> None:
    reason = block.not_run_reason()
    if reason is not None:
        pytest.skip(f"{block.id}: {reason}")
    if "gpu" in block.markers:
        import torch

        if not torch.cuda.is_available():
            pytest.skip(f"{block.id}: gpu: {block.get('gpu')}")
    _CHECKS.get(block.lang, _check_output)(block, sandbox)


def test_every_block_is_run_or_says_why_not() -> None:
    """A block is skipped only with a reason, and no block of output floats unchecked."""
    assert len(BLOCKS) >= 20
    for block in BLOCKS:
        if block.lang not in _CHECKS:
            assert block.markers.keys() & {"output", "skip", "long"}, \
                f"{block.id}: a {block.lang or 'plain'} block needs an output or skip marker"
    not_run = [b for b in BLOCKS if b.not_run_reason()]
    assert len(not_run) <= len(BLOCKS) // 3, [b.id for b in not_run]



_WRITE_FLAGS = ("-o", "--output", "--write")


def written_paths(command: str) -> list[str]:
    """Paths a documented command writes: after ``-o``/``--output``/``--write``, ``>``/``>>``,
    or a benchmark's ``--json FILE``."""
    words = command.split("#", 1)[0].split()
    paths = [w for flag, w in zip(words, words[1:]) if flag in _WRITE_FLAGS + (">", ">>")
             or (flag == "--json" and w.endswith((".json", ".jsonl")))]
    return paths + [w.lstrip(">") for w in words if w.startswith(">") and w.lstrip(">")]


def linked_writes(block: Block, copied: tuple[str, ...] = _COPIED) -> list[str]:
    """Paths ``block`` writes through a sandbox link, i.e. into the checkout itself."""
    cwd = Path(block.get("cwd", "."))
    bad = []
    for command in command_lines(block.body):
        for path in written_paths(command):
            if path.startswith("/"):
                continue  # /dev/null, a temporary file
            top = (cwd / path).parts[0]
            if top not in copied and (ROOT / top).exists():
                bad.append(f"{command!r} writes {path} through the link {top}/")
    return bad


def test_documented_writes_stay_in_the_sandbox() -> None:
    """Every file a run bash block writes lands in a copied folder, never in the checkout."""
    run = [b for b in BLOCKS if b.lang in ("bash", "sh") and b.not_run_reason() is None]
    assert [p for b in run for p in linked_writes(b)] == []
    # canary: with only examples/ copied (the old sandbox), docs/coverage.md was rewritten
    # in place by the vllm-support.md block
    old = [p for b in run for p in linked_writes(b, ("examples",))]
    assert any("docs/coverage.md" in p for p in old), old
    assert written_paths("derivgraph trace -o my.yaml x > out.txt 2>err") == ["my.yaml", "out.txt"]
    assert written_paths("python3 b.py --json benchmarks/results/t.json") == \
        ["benchmarks/results/t.json"]
    assert written_paths("derivgraph audit vllm --json") == []

# ---- the parser itself: markers cannot be misspelt, misplaced or left without a reason --------

def test_markers_attach_to_the_next_fence() -> None:
    text = ("intro\n<!-- doctest cwd: examples -->\n<!-- doctest exit: 1 -->\n"
            "<!-- doctest expect: ok -->\n<!-- doctest expect: two -->\n```bash\nls \\\n  -l\n"
            "# a comment\necho hi  # trailing\n```\n```yaml\na: 1\n```\n")
    first, second = parse_blocks(text, "x.md")
    assert (first.line, first.lang) == (6, "bash")
    assert first.markers == {"cwd": ["examples"], "exit": ["1"], "expect": ["ok", "two"]}
    assert command_lines(first.body) == ["ls    -l", "echo hi  # trailing"]
    assert (second.lang, second.markers) == ("yaml", {})


def test_an_indented_fence_in_a_list_item_is_a_block() -> None:
    """A fence inside a list item is run (or skipped with a reason) like any other."""
    text = ("1. Run:\n   <!-- doctest exit: 1 -->\n   ```bash\n   false\n   ```\n"
            "    ```bash\n    code, not a fence\n")
    (block,) = parse_blocks(text, "x.md")
    assert (block.line, block.lang, block.body) == (3, "bash", "false\n")
    assert block.markers == {"exit": ["1"]}
    vllm_support = [b for b in BLOCKS if b.file == "docs/vllm-support.md"]
    assert any("tests/vllm/test_drift.py" in b.body for b in vllm_support)


@pytest.mark.parametrize("text, message", [
    ("<!-- doctest skipp: x -->\n```bash\nls\n```\n", "unknown doctest marker 'skipp'"),
    ("<!-- doctest skip -->\n```bash\nls\n```\n", "needs a value"),
    ("<!-- doctest cwd: a -->\n\n```bash\nls\n```\n", "not directly above"),
    ("<!-- doctest cwd: a -->\ntext\n", "not directly above"),
    ("<!-- doctest cwd: a -->\n<!-- doctest cwd: b -->\n```bash\nls\n```\n", "given twice"),
    ("<!-- doctest: skip -->\n```bash\nls\n```\n", "malformed"),
    ("```bash\nls\n", "unclosed"),
])
def test_bad_markers_are_refused(text: str, message: str) -> None:
    with pytest.raises(MarkerError, match=message):
        parse_blocks(text, "x.md")


def test_output_check_goes_red_on_a_changed_figure() -> None:
    printed = "header\nnaive reload A->B   27   5.89561\nderivgraph reload A->B   0   0\n"
    assert _contains_lines_in_order("naive reload A->B   27   5.89561\n", printed) is None
    assert _contains_lines_in_order("naive reload A->B   28   5.89561\n", printed) is not None
    assert _contains_lines_in_order("derivgraph reload A->B   0   0\nnaive reload A->B   27"
                                    "   5.89561\n", printed) is not None  # order matters


def test_spec_model_docstring_example_is_a_valid_spec_that_compiles() -> None:
    """The YAML example of ``derivgraph.spec.model``'s docstring loads, checks and binds."""
    from derivgraph.planner import compile_plan
    from derivgraph.spec import model as spec_model
    from derivgraph.spec.check import check_specs
    from derivgraph.spec.load import load_spec_text
    from examples.my_models import build_a

    doc = spec_model.__doc__ or ""
    example = textwrap.dedent(doc.split("Example (YAML)::", 1)[1])
    specs = load_spec_text(example, "derivgraph/spec/model.py")
    assert check_specs(specs) == []
    plan = compile_plan(build_a(), specs, require_match=True)
    assert len(plan.declared()) == 4  # ab_strides1 on each of the 4 layers

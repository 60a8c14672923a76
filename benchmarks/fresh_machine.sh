#!/usr/bin/env bash
# A new user's first minutes: clone this repository into a temporary folder, make a fresh
# virtual environment, and run the README's two set-up commands as written, timing each.
#   bash benchmarks/fresh_machine.sh [REPO]   (REPO: a path or URL to clone; default: this checkout)
# Prints one line per command (seconds, exit status) and exits non-zero if either fails.
set -uo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/derivgraph" || exit 1
cd "$work/derivgraph" || exit 1
python3 -m venv "$work/venv" || exit 1
# shellcheck disable=SC1091
source "$work/venv/bin/activate"
python3 -m pip install -q --upgrade pip >/dev/null

# The README's two commands, verbatim (section "Set up").
commands=(
  "python3 -m pip install -e . && derivgraph demo"
  "python3 -m pip install -e '.[vllm,test]' && python3 -m pytest"
)
status=0
results=()
for command in "${commands[@]}"; do
  start=$(date +%s.%N)
  bash -o pipefail -c "$command" >"$work/log.txt" 2>&1
  rc=$?
  seconds=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" \
            "$start" "$(date +%s.%N)")
  tail -n 3 "$work/log.txt"
  grep -E '^(FAILED|ERROR) ' "$work/log.txt"   # every failing test by name, not only the last ones
  results+=("$(printf '%6s s  exit %s  %s' "$seconds" "$rc" "$command")")
  [ "$rc" -eq 0 ] || status=1
done
echo "fresh clone, fresh venv ($(python3 --version), $(uname -m)):"
printf '%s\n' "${results[@]}"
exit "$status"

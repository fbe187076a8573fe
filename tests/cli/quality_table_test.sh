#!/usr/bin/env bash
# bench/quality_table.py end to end on two one-GPU rows: the Markdown table has both rows with a
# speedup and a prediction error, the summary lines are there, and the SVG plot has both systems.
set -euo pipefail
alpa="$1"
root="$2"
export PYTHONDONTWRITEBYTECODE=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$root/bench/quality_table.py" "$alpa" --models gpt-350m,moe-380m \
  --markdown "$tmp/q.md" --svg "$tmp/q.svg" > "$tmp/out.txt" 2> "$tmp/err.txt"
fail() { echo "quality_table_test: $*"; cat "$tmp/out.txt"; exit 1; }
cmp -s "$tmp/out.txt" "$tmp/q.md" || fail "stdout and --markdown differ"
for model in gpt-350m moe-380m; do
  line=$(grep "| $model |" "$tmp/q.md") || fail "no row for $model"
  # Same plan on one GPU for both systems: speedup 1.000 within rounding, error near 0.
  echo "$line" | grep -Eq '\| (0\.99[0-9]|1\.0[0-9]{2}) \|' || fail "$model: no speedup near 1: $line"
  echo "$line" | grep -Eq '\| [+-][0-9]+\.[0-9] % \|' || fail "$model: no prediction error: $line"
done
grep -q "^- GPT: planner no slower than the baseline on 1 of 1 rows" "$tmp/q.md" ||
  fail "no GPT summary line"
grep -q "^- prediction error: " "$tmp/q.md" || fail "no prediction error summary"
grep -q "<svg" "$tmp/q.svg" || fail "no SVG"
[[ $(grep -c "<circle" "$tmp/q.svg") -eq 4 ]] || fail "expected 4 points (2 rows x 2 systems)"
grep -q "Megatron-LM-style baseline" "$tmp/q.svg" || fail "no legend"
echo "quality_table_test: ok"

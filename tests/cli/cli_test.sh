#!/usr/bin/env bash
# Usage: cli_test.sh PATH_TO_ALPA GOLDEN_DIR
set -u
alpa=$1
golden=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# expect NAME WANT_EXIT PATTERN_IN_OUTPUT -- command...   (WANT_EXIT nz: any non-zero)
expect() {
  local name=$1 want_exit=$2 pattern=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $want_exit == nz && $rc -ne 0 ]]; then
    :
  elif [[ $want_exit == nz || $rc -ne $want_exit ]]; then
    echo "FAIL $name: exit $rc, expected $want_exit; output:"; echo "$out" | tail -5
    failed=$((failed + 1)); return
  fi
  if ! grep -q -E -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output lacks /$pattern/; output:"; echo "$out" | tail -5
    failed=$((failed + 1)); return
  fi
  passed=$((passed + 1))
}

# expect_last_line NAME LINE -- command...: stdout's last line must be exactly LINE.
expect_last_line() {
  local name=$1 want=$2
  shift 3
  local last
  last=$("$@" 2>/dev/null | tail -n 1)
  if [[ "$last" != "$want" ]]; then
    echo "FAIL $name: last line '$last', expected '$want'"; failed=$((failed + 1)); return
  fi
  passed=$((passed + 1))
}

example=$golden/iopddl_example.json
expect_last_line solve_example "[0, 0, 2, 1, 0]" -- "$alpa" solve "$example" 10
expect solve_example_json 0 '^\{.*"objective":445.*\}$' -- "$alpa" solve "$example" 10 --json
expect solve_example_json_status 0 '"status":"optimal"' -- "$alpa" solve "$example" --json
expect solve_example_progress 0 '^# .*objective' -- "$alpa" solve "$example"
gzip -c "$example" > "$tmp/example.json.gz"
expect_last_line solve_gz "[0, 0, 2, 1, 0]" -- "$alpa" solve "$tmp/example.json.gz" 5

expect evaluate_best 0 '^445$' -- "$alpa" evaluate "$example" "[0, 0, 2, 1, 0]"
expect evaluate_memory 1 'memory' -- "$alpa" evaluate "$example" "[0, 0, 1, 1, 0]"
expect evaluate_range 1 'node 2' -- "$alpa" evaluate "$example" "[0, 0, 3, 1, 0]"
expect evaluate_length 1 '5 nodes' -- "$alpa" evaluate "$example" "[0, 0]"
expect evaluate_syntax 1 'assignment' -- "$alpa" evaluate "$example" "0 0 2"

# Bad input: a clear message naming the element, a non-zero exit, never a crash.
expect missing_file 1 'nope.json' -- "$alpa" solve "$tmp/nope.json"
printf '{"problem": {"nodes": ' > "$tmp/truncated.json"
expect malformed_json 1 'error' -- "$alpa" solve "$tmp/truncated.json"
cat > "$tmp/bad_interval.json" <<'JSON'
{"problem": {"name": "bad", "nodes": {"intervals": [[5, 2]], "costs": [[1]], "usages": [[1]]},
 "edges": {"nodes": [], "costs": []}}}
JSON
expect bad_interval 1 'node 0' -- "$alpa" solve "$tmp/bad_interval.json"
cat > "$tmp/bad_edge.json" <<'JSON'
{"problem": {"name": "bad", "nodes": {"intervals": [[0, 1]], "costs": [[1, 2]], "usages": [[1, 1]]},
 "edges": {"nodes": [[0, 3]], "costs": [[1, 2]]}}}
JSON
expect bad_edge 1 'edge 0' -- "$alpa" solve "$tmp/bad_edge.json"
cat > "$tmp/infeasible.json" <<'JSON'
{"problem": {"name": "tight", "nodes": {"intervals": [[0, 2], [1, 3]], "costs": [[1, 2], [1, 2]],
 "usages": [[10, 20], [10, 20]]}, "edges": {"nodes": [], "costs": []}, "usage_limit": 15}}
JSON
expect infeasible 2 'time 1|infeasible' -- "$alpa" solve "$tmp/infeasible.json" 5
expect_last_line infeasible_last_line "[]" -- "$alpa" solve "$tmp/infeasible.json" 5
expect bad_timeout nz 'timeout' -- "$alpa" solve "$example" -- -3
expect usage nz 'not expected|--help' -- "$alpa" frobnicate

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]

#!/usr/bin/env bash
# Hostile inputs under a small memory cap: gzip bombs, whitespace around a valid problem,
# garbage and endless streams must end with a clear error (or, for the valid problem, the
# answer), never an abort, and quickly. The inputs are generated here, never committed.
# Usage: input_limits_test.sh PATH_TO_ALPA GOLDEN_DIR
set -u
alpa=$1
golden=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# 96 MiB bombs: their JSON documents would need several times the 400 MB cap below.
python3 "$(dirname "$0")/make_hostile_inputs.py" "$tmp" "$golden/iopddl_example.json" 96 || exit 1

# The cap is for what the inputs make the program allocate: on top of 400 MB it leaves the
# address space of the shared libraries the program maps before main (a CUDA build maps
# cuBLASLt, over 500 MB, which would not even load under the bare cap).
libraries_kib=$(ldd "$alpa" 2>/dev/null | awk '$3 ~ /^\// {print $3}' | xargs -r stat -L -c %s |
  awk '{sum += $1} END {print int(sum / 1024)}')
cap_kib=$((400000 + ${libraries_kib:-0}))

# expect NAME WANT_EXIT PATTERN -- command...: run under `ulimit -v $cap_kib` and 20 s; the
# exit code must be WANT_EXIT (never 134, an abort) and the output must match PATTERN.
expect() {
  local name=$1 want_exit=$2 pattern=$3
  shift 4
  local out rc
  out=$(ulimit -v "$cap_kib"; timeout 20 "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want_exit ]]; then
    echo "FAIL $name: exit $rc, expected $want_exit; output:"; echo "$out" | tail -5
    failed=$((failed + 1)); return
  fi
  if ! grep -q -E -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output lacks /$pattern/; output:"; echo "$out" | tail -5
    failed=$((failed + 1)); return
  fi
  passed=$((passed + 1))
}

expect bomb_array 1 'expected an object, found array' -- "$alpa" solve "$tmp/bomb_array.json.gz"
expect bomb_iopddl_oom 1 'out of memory' -- "$alpa" solve "$tmp/bomb_iopddl.json.gz"
expect bomb_iopddl_evaluate 1 'out of memory' -- "$alpa" evaluate "$tmp/bomb_iopddl.json.gz" "[0]"
expect bomb_limit 1 'exceeds the limit of 16777216 bytes .*--max-input-bytes' -- \
  "$alpa" solve "$tmp/bomb_iopddl.json.gz" --max-input-bytes 16MiB
expect bomb_graph 1 'graph: expected an object, found array' -- \
  "$alpa" graph --file "$tmp/bomb_array.json.gz"
expect bomb_graph_limit 1 'exceeds the limit of 1048576 bytes' -- \
  "$alpa" shard --file "$tmp/bomb_iopddl.json.gz" --mesh 2 --max-input-bytes 1MiB
expect whitespace 0 '^\[0, 0, 2, 1, 0\]$' -- "$alpa" solve "$tmp/whitespace.json.gz" 10
expect garbage 1 'garbage.bin: not JSON: byte 0 is 0x7f' -- "$alpa" solve "$tmp/garbage.bin"
expect garbage_plan 1 'not JSON: byte 0 is 0x7f' -- "$alpa" plan --file "$tmp/garbage.bin"
expect dev_zero 1 'not JSON: byte 0 is 0x00' -- "$alpa" solve /dev/zero
expect dev_zero_graph 1 'not JSON: byte 0 is 0x00' -- "$alpa" graph --file /dev/zero
expect dev_zero_simulate 1 'not JSON: byte 0 is 0x00' -- "$alpa" simulate /dev/zero
expect garbage_simulate 1 'not JSON: byte 0 is 0x7f' -- "$alpa" simulate "$tmp/garbage.bin"
expect spaces_simulate_limit 1 'exceeds the limit of 1048576 bytes' -- \
  bash -c "yes '' | tr '\\n' ' ' | \"$alpa\" simulate /dev/stdin --max-input-bytes 1MiB"
expect dev_zero_assignment 1 'stdin: input exceeds the limit of 1048576 bytes' -- \
  bash -c "\"$alpa\" evaluate \"$golden/iopddl_example.json\" - --max-input-bytes 1MiB < /dev/zero"
expect limit_flag_checked 1 'max-input-bytes' -- \
  "$alpa" solve "$golden/iopddl_example.json" --max-input-bytes lots
expect limit_small_example 1 'exceeds the limit of 100 bytes' -- \
  "$alpa" solve "$golden/iopddl_example.json" --max-input-bytes 100

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]

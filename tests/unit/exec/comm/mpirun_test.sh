#!/usr/bin/env bash
# Runs an MPI test program on NP processes of this host.
#   mpirun_test.sh MPIEXEC NP PROGRAM                      the program must pass
#   mpirun_test.sh MPIEXEC NP PROGRAM --expect-abort TEXT   the job must end non-zero within 30 s
#                                                           with TEXT on stderr
# --oversubscribe lets NP exceed the cores; as root (containers, CI) Open MPI also needs
# --allow-run-as-root.
set -uo pipefail
mpiexec=$1
np=$2
program=$3
flags=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
# Sanitizer options reach the processes too.
for variable in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
  [[ -n ${!variable:-} ]] && flags+=(-x "$variable")
done
if [[ ${4:-} != --expect-abort ]]; then
  exec timeout 120 "$mpiexec" "${flags[@]}" -np "$np" "$program"
fi
expected=$5
stderr_file=$(mktemp)
trap 'rm -f "$stderr_file"' EXIT
start=$(date +%s)
timeout 30 "$mpiexec" "${flags[@]}" -np "$np" "$program" 2>"$stderr_file"
rc=$?
elapsed=$(($(date +%s) - start))
cat "$stderr_file" >&2
if ((rc == 0)); then
  echo "mpirun_test: the job exited 0; expected every process to be aborted" >&2
  exit 1
fi
if ((rc == 124)); then
  echo "mpirun_test: the job was still running after 30 s: the abort did not end it" >&2
  exit 1
fi
if ! grep -qF -- "$expected" "$stderr_file"; then
  echo "mpirun_test: stderr lacks '$expected'" >&2
  exit 1
fi
if grep -q "was not ended by the abort" "$stderr_file"; then
  echo "mpirun_test: a process outlived the abort" >&2
  exit 1
fi
echo "mpirun_test: the job ended with status $rc after ${elapsed} s, with the failing rank's message"

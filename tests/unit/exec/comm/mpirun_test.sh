#!/usr/bin/env bash
# Runs an MPI test program on NP processes of this host.
#   mpirun_test.sh MPIEXEC NP PROGRAM [ARGS...]             the program must pass within
#                                                           MPIRUN_TEST_SECONDS (default 120)
#   mpirun_test.sh MPIEXEC NP PROGRAM --expect-abort TEXT   the job must end non-zero within 30 s
#                                                           with TEXT on stderr
# --oversubscribe lets NP exceed the cores; as root (containers, CI) Open MPI also needs
# --allow-run-as-root. With more processes than cores, a process waiting in MPI must yield its
# core (mpi_yield_when_idle) rather than spin: spinning waiters take the cores from the
# processes they wait for, which made the 8-process plan equivalence run 2.5 to 4 times slower
# on 2 cores.
set -uo pipefail
mpiexec=$1
np=$2
program=$3
flags=(--oversubscribe --mca mpi_yield_when_idle 1)
[[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
# Sanitizer options reach the processes too.
for variable in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
  [[ -n ${!variable:-} ]] && flags+=(-x "$variable")
done
if [[ ${4:-} != --expect-abort ]]; then
  exec timeout "${MPIRUN_TEST_SECONDS:-120}" "$mpiexec" "${flags[@]}" -np "$np" "$program" "${@:4}"
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

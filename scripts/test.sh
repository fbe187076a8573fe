#!/usr/bin/env bash
# Installs what is missing, builds and runs the tests with ctest.
#   scripts/test.sh               the README's test command: every test, Release, in ./build,
#                                 then the bindings' suites (scripts/test-bindings.sh); with the
#                                 CUDA backend (ALPA_WITH_CUDA=ON) where nvcc is found (its tests
#                                 that need a GPU skip where there is none)
#   scripts/test.sh --sanitize    the C++ and C suites under ASan+UBSan (but for the searches of
#                                 asan_skip below; without the `alpa` program and its shell
#                                 suites), in ./build-asan, then the Go suite against that library
#   scripts/test.sh --tsan        the tests that run threads, under ThreadSanitizer, in ./build-tsan
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
jobs=$(nproc)
# ccache (installed with the test packages) makes a rebuild of the same sources in the same folder
# nearly free. It does not share objects between ./build and the Python package's own build of
# libalpa (bindings/python/build): their include paths differ (each build's module_include), so
# on a fresh machine that second build compiles everything again (stop 43's CI: 724 s wall on a
# busy machine).
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

# The CUDA backend joins the Release build where the toolkit is installed (nvcc on the PATH or
# in /usr/local/cuda); the sanitizer builds stay without it (the sanitizers do not see into the
# CUDA runtime, and there is no GPU code to check on a machine without a GPU).
cuda=()
nvcc=$(command -v nvcc || true)
if [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]]; then nvcc=/usr/local/cuda/bin/nvcc; fi
if [[ -n $nvcc ]]; then
  cuda=(-DALPA_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc")
  if command -v ccache >/dev/null; then cuda+=(-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache); fi
fi

# The tests whose code runs on several threads: the planner's parallel stage costs and baseline
# grid (RunParallel), the sharding solver's parallel local searches and block elimination pool,
# concurrent GLPK solves, the thread communicator (ranks as threads), the NCCL rendezvous (ranks
# as threads, its watchdog thread), the executor's devices as
# threads (a plan's perturbations, transfers with a local all-gather, the C executor), the
# lowering's devices on threads (the programs' simulation), and the C ABI's planning calls (each
# sets two threads).
tsan_unit_tests=(planner_test manual_plan_test plan_simulation_test sharding_solver_test
                 block_elimination_test ilp_glpk_test thread_communicator_test
                 plan_perturbation_test rendezvous_test program_simulation_test
                 local_all_gather_test)
# Of the C tests, those whose calls plan on threads or run the executor's thread devices; the
# other C tests of planning (plan_capi_test, baseline_capi_test, simulate_capi_test: 6.5 of the
# phase's 17 minutes in stop 42's CI) reach the same planner threads as planner_test and the
# baseline search under TSan, and run in the Release and ASan+UBSan phases.
tsan_c_tests=(capi_test example_plan_model executor_capi_test)
# Left out under TSan: a quality comparison that runs the baseline grid's threaded code (as
# BaselineSearch.FixedMicrobatchesAndRemat does) on a larger model, and takes minutes there.
tsan_skip='^BaselineSearch\.PlannerIsNeverSlowerWhereTheSpacesMeet$'

# Left out under ASan+UBSan (they run in the Release suite): searches that compare plan quality
# or determinism on larger models, a minute or more each there, exercising code the rest of the
# suite runs on smaller inputs; and the plan equivalence cases on 8 MPI processes (235 s there in
# stop 42's CI): the same cases run under ASan+UBSan on thread devices (plan_equivalence_test),
# and the MPI communicator's own checks run on MPI processes. The `alpa` program is not built
# (-DALPA_BUILD_CLI=OFF): its shell suites check its output and exit codes over hundreds of runs
# (402 s of the phase's tests in stop 38's CI, 61 s in Release); the library code those runs
# reach is the unit tests', and the fuzzers run its parsers under ASan+UBSan.
asan_skip='^(BaselineSearch\.PlannerIsNeverSlowerWhereTheSpacesMeet|PcieServer\.LessTensorParallelismThanOnNvlink|PlannerSubmeshes\.LargeClustersSolveTheSubsetOnly|PlannerDeterminism\.TheMicrobatchSearchWithWarmStartsIsDeterministicAndFindsTheColdPlan|mpi_plan_equivalence_test)$'

# The sanitizer builds compile at -O1 with line tables only (-g1: enough for the sanitizers' stack
# traces): measured with g++ 12 under ASan+UBSan, twice as fast to build as RelWithDebInfo's
# -O2 -g (src/exec/lower/lower_plan.cc 33.6 -> 15.0 s, planner_test.cc 10.9 -> 5.6 s), and the
# sanitizers' own documentation recommends -O1.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
                 -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")

# The ctest names of the tsan tests: GoogleTest cases are discovered as Suite.Name, so each
# unit test contributes its suites (from --gtest_list_tests); C tests are named as the target.
tsan_test_regex() {
  local names=() suite
  for t in "${tsan_unit_tests[@]}"; do
    while read -r suite; do
      names+=("${suite%.}\\.")
    done < <(build-tsan/bin/"$t" --gtest_list_tests | grep -E '^[A-Za-z_][A-Za-z0-9_/]*\.$')
  done
  for t in "${tsan_c_tests[@]}"; do names+=("$t\$"); done
  local IFS='|'
  echo "^(${names[*]})"
}

case ${1:-} in
  --sanitize)
    cmake -S . -B build-asan "${sanitizer_flags[@]}" -DALPA_SANITIZE="address;undefined" \
          -DALPA_BUILD_BENCH=OFF -DALPA_BUILD_CLI=OFF "${launcher[@]}"
    cmake --build build-asan -j"$jobs"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "$asan_skip"
    scripts/test-bindings.sh --asan build-asan build
    ;;
  --tsan)
    cmake -S . -B build-tsan "${sanitizer_flags[@]}" -DALPA_SANITIZE=thread \
          -DALPA_BUILD_BENCH=OFF -DALPA_BUILD_CLI=OFF "${launcher[@]}"
    cmake --build build-tsan -j"$jobs" --target "${tsan_unit_tests[@]}" "${tsan_c_tests[@]}"
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      ctest --test-dir build-tsan --output-on-failure -j"$jobs" -R "$(tsan_test_regex)" \
        -E "$tsan_skip"
    ;;
  "")
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "${cuda[@]}"
    cmake --build build -j"$jobs"
    ctest --test-dir build --output-on-failure -j"$jobs"
    scripts/test-bindings.sh build
    ;;
  *)
    echo "test.sh: unknown option '$1' (expected --sanitize, --tsan or nothing)" >&2
    exit 1
    ;;
esac

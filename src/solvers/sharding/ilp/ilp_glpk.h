// The sharding ILP on a WorkProblem, solved by GLPK's branch-and-cut through its C API:
// binary s[v][i] per node strategy, e[uv][i][j] in [0, 1] per finite edge entry with the tight
// linearization (sum_j e[i][j] = s_u[i], sum_i e[i][j] = s_v[j]), forbidden entries left out,
// and one row per memory row. With an incumbent, columns that cannot appear in a better solution
// are left out of the LP, and a root LP bound that meets the incumbent proves it optimal without
// branching. GLPK errors are caught through glp_error_hook and reported as kError, never an
// abort. The returned assignment is always re-checked with WorkObjective and WorkMemoryFeasible;
// a feasible incumbent is returned when GLPK finds nothing better (even with kError).
//
// Threads: safe to call from several threads at once (GLPK's environment is thread-local). A
// call leaves the calling thread's GLPK environment as it found it, except that GLPK's error and
// terminal hooks are reset to none, and that after a GLPK error the environment (with any GLPK
// object the caller holds on this thread) is freed, as GLPK requires.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "solvers/sharding/solve_control.h"
#include "solvers/sharding/work_problem.h"

namespace alpa {

struct IlpOptions {
  double relative_gap = 0.0;
  // A feasible assignment to start from (may be empty). GLPK gets it as its first incumbent.
  std::vector<int32_t> incumbent;
  // Called on the calling thread when branching starts (with the root LP bound) and whenever
  // GLPK improves its incumbent or bound (the bound is checked at most every 20 ms); returning
  // false (or throwing, which is caught) stops the search.
  std::function<bool(long double objective, long double lower_bound)> on_progress;
  // Stop after this many branch-and-bound nodes (0: no limit). A deterministic work limit,
  // unlike the deadline.
  int64_t node_limit = 0;
  // Decisions that depend on timing are made without the clock: the root LP always uses GLPK's
  // presolver (else only when the deadline leaves room for it), so that the same problem takes
  // the same path. The deadline still stops GLPK.
  bool deterministic = false;
};

enum class IlpStatus : int32_t {
  kOptimal,     // proven within relative_gap
  kFeasible,    // stopped (time limit / cancel) with an incumbent
  kInfeasible,  // proven infeasible
  kNoSolution,  // stopped without any incumbent
  kError        // GLPK failed; message says why
};

struct IlpResult {
  IlpStatus status = IlpStatus::kNoSolution;
  std::vector<int32_t> assignment;  // one strategy per node of the problem
  long double objective = 0;        // includes problem.constant
  long double lower_bound = 0;      // includes problem.constant; -inf unknown, +inf infeasible
  std::string message;
  int64_t nodes = 0;  // branch-and-bound nodes GLPK created
};

IlpResult SolveIlpGlpk(const WorkProblem& problem, const SolveControl& control,
                       const IlpOptions& options);

}  // namespace alpa

// An independent evaluator for sharding problems: recomputes the cost of an assignment and checks
// every constraint straight from the problem as given (followers, aliases, forbidden costs,
// memory per time step). It shares no code with the solvers' bookkeeping, so tests can use it to
// check any solver answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/problem/sharding_problem.h"

namespace alpa {

struct Evaluation {
  bool feasible = false;
  // Exact for integer costs below 2^63 per term: summed in long double (64-bit mantissa).
  long double cost = 0;
  // Largest memory use over all time steps (0 without usages).
  long double peak_usage = 0;
  // Why the assignment is not feasible, naming the element ("node 3 ...", "alias 0 ...",
  // "memory at time 52: 60 exceeds limit 50"); empty when feasible.
  std::string violation;
};

// The problem must be valid (ValidateProblem). The assignment must have one entry per node; a
// wrong length or an out-of-range strategy is reported as a violation, not a crash.
Evaluation EvaluateAssignment(const ShardingProblem& problem,
                              const std::vector<int32_t>& assignment);

}  // namespace alpa

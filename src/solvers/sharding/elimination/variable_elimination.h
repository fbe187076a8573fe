// Exact minimisation of a sum of table factors by variable elimination (bucket elimination in
// the min-plus semiring). Eliminating a variable replaces every factor that mentions it by one
// factor over their other variables, holding the minimum over its values, and records the
// minimising value for the way back. The work is the number of table entries visited, which a
// greedy order keeps small on problems of small elimination width (chains, ladders, the layers
// of a network).
#pragma once

#include <cstdint>
#include <vector>

#include "solvers/sharding/solve_control.h"

namespace alpa {

// A table over distinct variables, row-major: the last variable varies fastest.
struct Factor {
  std::vector<int32_t> vars;
  std::vector<double> table;  // one entry per joint value of `vars`; +inf allowed, never NaN
};

// The order in which to eliminate variables and what it costs.
struct EliminationPlan {
  std::vector<int32_t> order;
  double work = 0;           // table entries visited: sum over steps of (new table size) * domain
  double largest_table = 0;  // entries of the largest table created
  bool within_limits = true;
};

struct EliminationLimits {
  double max_work = 4e9;
  double max_table = 3.3e7;  // entries; a table takes 8 bytes an entry plus 2 for the argmin
};

// Greedy minimum-weight order of `eliminate` (each step takes the variable whose new table
// would be smallest times its domain; ties to the lower id); the other variables stay. Stops
// early, with within_limits false, as soon as the limits cannot hold, or once `control` has
// expired (the caller tells the two apart by reading the control).
EliminationPlan PlanElimination(const std::vector<int32_t>& domain,
                                const std::vector<Factor>& factors,
                                const std::vector<int32_t>& eliminate,
                                const EliminationLimits& limits,
                                const SolveControl& control = SolveControl());

// One eliminated variable: its best value for each joint value of `given` (row-major, the
// last varies fastest).
struct EliminatedVariable {
  int32_t var = 0;
  std::vector<int32_t> given;
  std::vector<int32_t> given_domain;
  std::vector<uint16_t> best;
};

struct EliminationOutcome {
  bool completed = false;                 // false: stopped by the control, or a domain above 65535
  std::vector<Factor> remaining;          // over variables not eliminated (empty vars: constants)
  std::vector<EliminatedVariable> steps;  // in elimination order
};

// Eliminates `order` (a plan's order) from the sum of `factors`.
EliminationOutcome Eliminate(const std::vector<int32_t>& domain, std::vector<Factor> factors,
                             const std::vector<int32_t>& order, const SolveControl& control);

// Fills the eliminated variables of `assignment` (the others must be set) from the steps, last
// step first.
void BackSubstitute(const std::vector<EliminatedVariable>& steps, std::vector<int32_t>* assignment);

// The same table over the same variables in another order (a permutation of f.vars).
Factor PermuteFactor(const Factor& f, const std::vector<int32_t>& vars,
                     const std::vector<int32_t>& domain);

}  // namespace alpa

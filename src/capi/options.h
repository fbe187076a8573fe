// The option keys of the C ABI (solve, shard and plan families) as one table: each key's name,
// type, accepted range, family and the field it sets. alpa_solve_options_* and
// alpa_plan_options_* (set_int, set_double, set_by_name, and the "options" object of
// alpa_problem_solve_json) all set options through it, so every option is checked the same way
// and every rejection reads the same:
//   <family> option "<name>": must be <requirement> (got <value>)
#pragma once

#include <cstdint>
#include <string>

#include "alpa.h"
#include "solvers/auto_sharding/auto_sharding.h"
#include "solvers/planner/planner.h"
#include "solvers/sharding/sharding_solver.h"

namespace alpa::capi {

// The options handle being set: alpa_solve_options holds the solve and shard families,
// alpa_plan_options the plan family. A key of another family is rejected, naming it.
enum class OptionHolder { kSolveOptions, kPlanOptions };

// The C++ option structs a handle holds (those it does not hold are nullptr).
struct OptionFields {
  SolveOptions* solve = nullptr;
  AutoShardOptions* shard = nullptr;
  PlannerOptions* plan = nullptr;
  uint64_t* max_input_bytes = nullptr;  // set with the solve family
  int32_t* graph_batch_dim = nullptr;   // set with the plan family
};

// Sets option `key` (ALPA_OPT_* / ALPA_PLAN_OPT_*) from an integer or a double. An integer
// option takes a double only when it is integral; a double option takes any integer.
int32_t SetOptionInt(OptionHolder holder, const OptionFields& fields, int32_t key, int64_t value,
                     alpa_error** err);
int32_t SetOptionDouble(OptionHolder holder, const OptionFields& fields, int32_t key, double value,
                        alpa_error** err);
// Sets the option called `name` from text: a number in any strtod form (integer options need an
// integral value; int64 literals are read exactly) or one of the option's symbolic values
// ("true", "alpa", "search", "none", ...).
int32_t SetOptionByName(OptionHolder holder, const OptionFields& fields, const std::string& name,
                        const std::string& text, alpa_error** err);
// The key of option `name` among the holder's families, or -1.
int32_t OptionKeyOfName(OptionHolder holder, const std::string& name);

}  // namespace alpa::capi

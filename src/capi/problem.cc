// Building, reading, writing and evaluating sharding problems through the C ABI.
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capi/handles.h"
#include "core/problem/problem_io.h"
#include "core/problem/sharding_evaluator.h"

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

// Checks the handle is present and still in the building state.
int32_t CheckBuilding(const alpa_problem* problem, alpa_error** err) {
  if (problem == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "problem is NULL");
  if (problem->finalized) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "problem is finalized and can no longer change");
  }
  return ALPA_OK;
}

int32_t CheckFinalized(const alpa_problem* problem, alpa_error** err) {
  if (problem == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "problem is NULL");
  if (!problem->finalized) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "problem is not finalized: call alpa_problem_finalize first");
  }
  return ALPA_OK;
}

int32_t CheckCount(int64_t count, const char* what, alpa_error** err) {
  if (count < 0) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                std::string(what) + " is negative (" + std::to_string(count) + ")");
  }
  return ALPA_OK;
}

int32_t CheckFormat(int32_t format, alpa_error** err) {
  if (format < ALPA_FORMAT_AUTO || format > ALPA_FORMAT_ALPA) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "unknown format " + std::to_string(format));
  }
  return ALPA_OK;
}

int32_t NodeCountPrefix(const alpa_problem* problem, int64_t count, const char* what,
                        alpa_error** err) {
  if (count > static_cast<int64_t>(problem->problem.nodes.size())) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                std::string(what) + ": count " + std::to_string(count) + " exceeds the " +
                    std::to_string(problem->problem.nodes.size()) + " nodes added so far");
  }
  return ALPA_OK;
}

// Strategy count of node, or 0 when the id is out of range (validation reports it later).
size_t StrategiesOf(const alpa::ShardingProblem& p, int32_t node) {
  if (node < 0 || static_cast<size_t>(node) >= p.nodes.size()) return 0;
  return p.nodes[static_cast<size_t>(node)].costs.size();
}

// Appends `count` pair elements (edges or aliases) with their row-major k_u x k_v matrices taken
// one after the other from `values`. Nothing is added when any element is bad.
template <typename Element, typename Value>
int32_t AppendPairs(alpa_problem* problem, int64_t count, const int32_t* pairs, const Value* values,
                    const char* kind, const char* kinds,
                    std::vector<Element> alpa::ShardingProblem::*list,
                    std::vector<Value> Element::*matrix, alpa_error** err) {
  if (int32_t s = CheckBuilding(problem, err)) return s;
  if (int32_t s = CheckCount(count, (std::string(kind) + " count").c_str(), err)) return s;
  if (count == 0) return ALPA_OK;
  if (pairs == nullptr || values == nullptr) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                std::string(kinds) + ": the pair and matrix arrays must not be NULL");
  }
  const alpa::ShardingProblem& p = problem->problem;
  const size_t first_id = (p.*list).size();
  std::vector<Element> added(static_cast<size_t>(count));
  size_t offset = 0;
  for (size_t i = 0; i < added.size(); ++i) {
    added[i].u = pairs[2 * i];
    added[i].v = pairs[2 * i + 1];
    const size_t ku = StrategiesOf(p, added[i].u);
    const size_t kv = StrategiesOf(p, added[i].v);
    if (ku == 0 || kv == 0) {
      return Fail(err, ALPA_ERR_INVALID_PROBLEM,
                  std::string(kind) + " " + std::to_string(first_id + i) + " (" +
                      std::to_string(added[i].u) + ", " + std::to_string(added[i].v) +
                      "): endpoint is not a node added so far");
    }
    (added[i].*matrix).assign(values + offset, values + offset + ku * kv);
    offset += ku * kv;
  }
  for (Element& element : added) (problem->problem.*list).push_back(std::move(element));
  return ALPA_OK;
}

int32_t WrapProblem(alpa_problem** out, alpa::Result<alpa::ShardingProblem> read,
                    alpa_error** err) {
  if (!read.ok()) return Fail(err, read.status());
  auto* handle = new alpa_problem();
  handle->problem = std::move(read).value();
  handle->finalized = true;
  *out = handle;
  return ALPA_OK;
}

}  // namespace

extern "C" {

ALPA_API int32_t alpa_problem_create(alpa_problem** out, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = new alpa_problem();
    return ALPA_OK;
  });
}

ALPA_API void alpa_problem_destroy(alpa_problem* problem) { delete problem; }

ALPA_API int32_t alpa_problem_add_nodes(alpa_problem* problem, int64_t count,
                                        const int32_t* strategy_counts, const double* costs,
                                        const int64_t* usages, alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuilding(problem, err)) return s;
    if (int32_t s = CheckCount(count, "node count", err)) return s;
    if (count == 0) return ALPA_OK;
    if (strategy_counts == nullptr || costs == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "strategy_counts and costs must not be NULL");
    }
    if (static_cast<int64_t>(problem->problem.nodes.size()) + count > INT32_MAX) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "too many nodes (node ids are int32)");
    }
    for (int64_t i = 0; i < count; ++i) {
      if (strategy_counts[i] < 0) {
        return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                    "node " +
                        std::to_string(problem->problem.nodes.size() + static_cast<size_t>(i)) +
                        ": negative strategy count " + std::to_string(strategy_counts[i]));
      }
    }
    std::vector<alpa::ShardingNode> added(static_cast<size_t>(count));
    size_t offset = 0;
    for (size_t i = 0; i < added.size(); ++i) {
      const size_t k = static_cast<size_t>(strategy_counts[i]);
      added[i].costs.assign(costs + offset, costs + offset + k);
      if (usages != nullptr) added[i].usages.assign(usages + offset, usages + offset + k);
      offset += k;
    }
    for (auto& node : added) problem->problem.nodes.push_back(std::move(node));
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_problem_set_intervals(alpa_problem* problem, int64_t count,
                                            const int64_t* lo_hi, alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuilding(problem, err)) return s;
    if (int32_t s = CheckCount(count, "interval count", err)) return s;
    if (int32_t s = NodeCountPrefix(problem, count, "alpa_problem_set_intervals", err)) return s;
    if (count > 0 && lo_hi == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "lo_hi must not be NULL");
    }
    for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
      problem->problem.nodes[i].interval = {lo_hi[2 * i], lo_hi[2 * i + 1]};
    }
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_problem_set_live_sets(alpa_problem* problem, int64_t num_steps,
                                            const int64_t* step_sizes, const int32_t* node_ids,
                                            alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuilding(problem, err)) return s;
    if (int32_t s = CheckCount(num_steps, "num_steps", err)) return s;
    if (num_steps > 0 && step_sizes == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "step_sizes must not be NULL");
    }
    std::vector<std::vector<int32_t>> sets(static_cast<size_t>(num_steps));
    size_t offset = 0;
    for (size_t t = 0; t < sets.size(); ++t) {
      if (step_sizes[t] < 0) {
        return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                    "time step " + std::to_string(t) + ": negative live set size");
      }
      if (step_sizes[t] > 0 && node_ids == nullptr) {
        return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "node_ids must not be NULL");
      }
      const size_t n = static_cast<size_t>(step_sizes[t]);
      if (n > 0) sets[t].assign(node_ids + offset, node_ids + offset + n);
      offset += n;
    }
    problem->problem.live_sets = std::move(sets);
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_problem_add_edges(alpa_problem* problem, int64_t count,
                                        const int32_t* endpoints, const double* costs,
                                        alpa_error** err) {
  return Guard(err, [&] {
    return AppendPairs(problem, count, endpoints, costs, "edge", "edges",
                       &alpa::ShardingProblem::edges, &alpa::ShardingEdge::costs, err);
  });
}

ALPA_API int32_t alpa_problem_set_followers(alpa_problem* problem, int64_t count,
                                            const int32_t* follows, alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuilding(problem, err)) return s;
    if (int32_t s = CheckCount(count, "follower count", err)) return s;
    if (int32_t s = NodeCountPrefix(problem, count, "alpa_problem_set_followers", err)) return s;
    if (count > 0 && follows == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "follows must not be NULL");
    }
    for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
      problem->problem.nodes[i].follows = follows[i];
    }
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_problem_add_aliases(alpa_problem* problem, int64_t count,
                                          const int32_t* pairs, const uint8_t* forbidden,
                                          alpa_error** err) {
  return Guard(err, [&] {
    return AppendPairs(problem, count, pairs, forbidden, "alias", "aliases",
                       &alpa::ShardingProblem::aliases, &alpa::ShardingAlias::forbidden, err);
  });
}

ALPA_API int32_t alpa_problem_set_memory_limit(alpa_problem* problem, int64_t limit,
                                               alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuilding(problem, err)) return s;
    if (limit < 0) {
      problem->problem.usage_limit.reset();
    } else {
      problem->problem.usage_limit = limit;
    }
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_problem_finalize(alpa_problem* problem, alpa_error** err) {
  return Guard(err, [&] {
    if (problem == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "problem is NULL");
    if (problem->finalized) return ALPA_OK;
    if (alpa::Status s = alpa::ValidateProblem(problem->problem); !s.ok()) return Fail(err, s);
    problem->finalized = true;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_problem_read_file(alpa_problem** out, const char* path, int32_t format,
                                        alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || path == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and path must not be NULL");
    }
    if (int32_t s = CheckFormat(format, err)) return s;
    return WrapProblem(out, alpa::ReadProblemFile(path, static_cast<alpa::ProblemFormat>(format)),
                       err);
  });
}

ALPA_API int32_t alpa_problem_read_file_with_options(alpa_problem** out, const char* path,
                                                     int32_t format,
                                                     const alpa_solve_options* options,
                                                     alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || path == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and path must not be NULL");
    }
    if (int32_t s = CheckFormat(format, err)) return s;
    const uint64_t limit =
        options == nullptr ? alpa::kDefaultMaxInputBytes : options->max_input_bytes;
    return WrapProblem(
        out, alpa::ReadProblemFile(path, static_cast<alpa::ProblemFormat>(format), limit), err);
  });
}

ALPA_API int32_t alpa_problem_read_buffer(alpa_problem** out, const char* data, size_t size,
                                          int32_t format, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || (data == nullptr && size > 0)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and data must not be NULL");
    }
    if (int32_t s = CheckFormat(format, err)) return s;
    const std::string_view bytes = size == 0 ? std::string_view() : std::string_view(data, size);
    return WrapProblem(
        out, alpa::ReadProblemBuffer(bytes, static_cast<alpa::ProblemFormat>(format)), err);
  });
}

ALPA_API int32_t alpa_problem_to_json(alpa_buffer** out, const alpa_problem* problem,
                                      int32_t format, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (int32_t s = CheckFinalized(problem, err)) return s;
    if (format != ALPA_FORMAT_IOPDDL && format != ALPA_FORMAT_ALPA) {
      return Fail(
          err, ALPA_ERR_INVALID_ARGUMENT,
          "write needs ALPA_FORMAT_IOPDDL or ALPA_FORMAT_ALPA, got " + std::to_string(format));
    }
    alpa::Result<std::string> text =
        alpa::WriteProblem(problem->problem, static_cast<alpa::ProblemFormat>(format));
    if (!text.ok()) return Fail(err, text.status());
    *out = new alpa_buffer{std::move(text).value()};
    return ALPA_OK;
  });
}

ALPA_API int64_t alpa_problem_node_count(const alpa_problem* problem) {
  return problem == nullptr ? 0 : static_cast<int64_t>(problem->problem.nodes.size());
}

ALPA_API int64_t alpa_problem_edge_count(const alpa_problem* problem) {
  return problem == nullptr ? 0 : static_cast<int64_t>(problem->problem.edges.size());
}

ALPA_API int32_t alpa_problem_strategy_count(const alpa_problem* problem, int64_t node) {
  if (problem == nullptr || node < 0 ||
      node >= static_cast<int64_t>(problem->problem.nodes.size())) {
    return -1;
  }
  return problem->problem.nodes[static_cast<size_t>(node)].strategy_count();
}

ALPA_API int32_t alpa_problem_evaluate(double* out_cost, const alpa_problem* problem, int64_t count,
                                       const int32_t* assignment, alpa_error** err) {
  return Guard(err, [&] {
    if (out_cost == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out_cost is NULL");
    if (int32_t s = CheckFinalized(problem, err)) return s;
    const int64_t n = static_cast<int64_t>(problem->problem.nodes.size());
    if (count != n) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "assignment has " + std::to_string(count) + " entries, the problem has " +
                      std::to_string(n) + " nodes");
    }
    if (count > 0 && assignment == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "assignment is NULL");
    }
    std::vector<int32_t> values(assignment, assignment + count);
    for (size_t i = 0; i < values.size(); ++i) {
      const int32_t k = problem->problem.nodes[i].strategy_count();
      if (values[i] < 0 || values[i] >= k) {
        return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                    "node " + std::to_string(i) + ": strategy " + std::to_string(values[i]) +
                        " out of range [0, " + std::to_string(k) + ")");
      }
    }
    const alpa::Evaluation eval = alpa::EvaluateAssignment(problem->problem, values);
    *out_cost = static_cast<double>(eval.cost);
    if (!eval.feasible) return Fail(err, ALPA_ERR_INFEASIBLE, eval.violation);
    return ALPA_OK;
  });
}

ALPA_API int64_t alpa_assignment_parse(const char* text, size_t size, int32_t* out,
                                       int64_t capacity, alpa_error** err) {
  const int32_t rc = Guard(err, [&] {
    if (text == nullptr && size > 0) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "text is NULL");
    }
    if (alpa::capi::BadFillTarget(out, capacity)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "out is NULL or capacity negative (capacity " + std::to_string(capacity) + ")");
    }
    return ALPA_OK;
  });
  if (rc != ALPA_OK) return -rc;
  int64_t count = 0;
  const int32_t parsed = Guard(err, [&] {
    alpa::Result<std::vector<int32_t>> assignment =
        alpa::ParseAssignment(std::string_view(text == nullptr ? "" : text, size));
    if (!assignment.ok()) return Fail(err, assignment.status());
    const std::vector<int32_t>& a = assignment.value();
    count = alpa::capi::FillArray(out, capacity, static_cast<int64_t>(a.size()),
                                  [&a](int64_t i) { return a[static_cast<size_t>(i)]; });
    return ALPA_OK;
  });
  return parsed == ALPA_OK ? count : -static_cast<int64_t>(parsed);
}

}  // extern "C"

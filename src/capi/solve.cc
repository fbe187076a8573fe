// Solve options, solving, solutions and the one-shot JSON call of the C ABI.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "capi/handles.h"
#include "capi/options.h"
#include "core/problem/problem_io.h"
#include "core/util/json_document.h"
#include "core/util/json_util.h"

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

nlohmann::json SolutionJson(const alpa::SolveResult& r) {
  nlohmann::json j;
  j["status"] = alpa::SolveStatusName(r.status);
  j["objective"] = alpa::json_util::NumberValue(r.objective);
  j["lower_bound"] = alpa::json_util::NumberValue(r.lower_bound);
  j["seconds"] = r.seconds;
  j["assignment"] = r.assignment;
  j["message"] = r.message;
  // The spelling of the auto-sharding JSON's stats (docs/formats.md): the same statistic has
  // the same key in every JSON of the library.
  j["stats"] = {{"problem_nodes", r.stats.nodes},
                {"problem_edges", r.stats.edges},
                {"normalized_nodes", r.stats.work_nodes},
                {"normalized_edges", r.stats.work_edges},
                {"core_nodes", r.stats.core_nodes},
                {"core_edges", r.stats.core_edges},
                {"memory_rows", r.stats.memory_rows},
                {"elimination_solved", r.stats.elimination_solved},
                {"elimination_blocks", r.stats.elimination_blocks},
                {"elimination_distinct_blocks", r.stats.elimination_distinct_blocks}};
  return j;
}

// SolutionJson as text. The document holds one entry per node: it is released leaves first,
// which needs no memory (nlohmann's destructor would reserve a stack as large as the array,
// and fail inside a noexcept destructor when memory is short).
std::string SolutionText(const alpa::SolveResult& r) {
  alpa::JsonDocument document;
  document.root() = SolutionJson(r);
  return document.root().dump();
}

// The C++ structs an alpa_solve_options sets.
alpa::capi::OptionFields FieldsOf(alpa_solve_options* o) {
  alpa::capi::OptionFields fields;
  fields.solve = &o->options;
  fields.shard = &o->auto_shard;
  fields.max_input_bytes = &o->max_input_bytes;
  return fields;
}

// Whether `key` belongs to the solve family (the keys a JSON request may set).
bool IsSolveKey(int32_t key) {
  return key >= ALPA_OPT_TIME_LIMIT_SECONDS && key <= ALPA_OPT_RELATIVE_GAP;
}

// Applies the "options" object of a JSON request.
int32_t ApplyJsonOptions(alpa_solve_options* o, const nlohmann::json& options, alpa_error** err) {
  if (!options.is_object()) {
    return Fail(err, ALPA_ERR_PARSE, "request: \"options\" must be an object");
  }
  for (auto it = options.begin(); it != options.end(); ++it) {
    if (it.key() == "warm_start") {
      if (!it.value().is_array()) {
        return Fail(err, ALPA_ERR_PARSE, "request: options.warm_start must be an array");
      }
      std::vector<int32_t> start;
      for (const auto& v : it.value()) {
        if (!v.is_number_integer()) {
          return Fail(err, ALPA_ERR_PARSE, "request: options.warm_start must hold integers");
        }
        const int64_t s = v.get<int64_t>();
        start.push_back(s < INT32_MIN || s > INT32_MAX ? -1 : static_cast<int32_t>(s));
      }
      o->options.warm_start = std::move(start);
      continue;
    }
    const int32_t key =
        alpa::capi::OptionKeyOfName(alpa::capi::OptionHolder::kSolveOptions, it.key());
    if (!IsSolveKey(key)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "request: unknown option \"" + it.key() + "\"");
    }
    double value = 0;
    if (it.value().is_boolean()) {
      value = it.value().get<bool>() ? 1 : 0;
    } else if (it.value().is_number()) {
      value = it.value().get<double>();
    } else {
      return Fail(err, ALPA_ERR_PARSE, "request: option \"" + it.key() + "\" must be a number");
    }
    const int32_t s = alpa::capi::SetOptionDouble(alpa::capi::OptionHolder::kSolveOptions,
                                                  FieldsOf(o), key, value, err);
    if (s != ALPA_OK) return s;
  }
  return ALPA_OK;
}

// {"problem": problem} as a document (IOPDDL's reader expects the wrapper), released like one.
alpa::JsonDocument WrapIopddl(nlohmann::json problem) {
  alpa::JsonDocument wrapped;
  wrapped.root() = nlohmann::json::object();
  wrapped.root()["problem"] = std::move(problem);
  return wrapped;
}

}  // namespace

namespace alpa::capi {

SolveOptions ToSolveOptions(const alpa_solve_options* options) {
  if (options == nullptr) return SolveOptions();
  SolveOptions out = options->options;
  if (options->cancel != nullptr) out.cancel = &options->cancel->triggered;
  if (options->progress != nullptr) {
    alpa_progress_fn fn = options->progress;
    void* user = options->progress_user_data;
    out.on_progress = [fn, user](const SolveProgress& p) {
      alpa_progress info;
      std::memset(&info, 0, sizeof(info));  // the reserved field included
      info.struct_size = sizeof(alpa_progress);
      info.version = 1;
      info.seconds = p.seconds;
      info.objective = static_cast<double>(p.objective);
      info.lower_bound = static_cast<double>(p.lower_bound);
      info.phase = p.phase;
      return fn(user, &info) == 0;
    };
  }
  return out;
}

}  // namespace alpa::capi

extern "C" {

ALPA_API int32_t alpa_solve_options_create(alpa_solve_options** out, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = new alpa_solve_options();
    return ALPA_OK;
  });
}

ALPA_API void alpa_solve_options_destroy(alpa_solve_options* options) { delete options; }

ALPA_API int32_t alpa_solve_options_set_double(alpa_solve_options* options, int32_t key,
                                               double value, alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    return alpa::capi::SetOptionDouble(alpa::capi::OptionHolder::kSolveOptions, FieldsOf(options),
                                       key, value, err);
  });
}

ALPA_API int32_t alpa_solve_options_set_int(alpa_solve_options* options, int32_t key, int64_t value,
                                            alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    return alpa::capi::SetOptionInt(alpa::capi::OptionHolder::kSolveOptions, FieldsOf(options), key,
                                    value, err);
  });
}

ALPA_API int32_t alpa_solve_options_set_by_name(alpa_solve_options* options, const char* name,
                                                const char* value, alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr || name == nullptr || value == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options, name and value must not be NULL");
    }
    return alpa::capi::SetOptionByName(alpa::capi::OptionHolder::kSolveOptions, FieldsOf(options),
                                       name, value, err);
  });
}

ALPA_API int32_t alpa_solve_options_set_warm_start(alpa_solve_options* options, int64_t count,
                                                   const int32_t* assignment, alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    if (count < 0 || (count > 0 && assignment == nullptr)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "warm start: bad count or NULL assignment");
    }
    options->options.warm_start.assign(assignment, assignment + count);
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_solve_options_set_cancel_token(alpa_solve_options* options,
                                                     alpa_cancel_token* token, alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    options->cancel = token;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_solve_options_set_progress(alpa_solve_options* options,
                                                 alpa_progress_fn callback, void* user_data,
                                                 alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    options->progress = callback;
    options->progress_user_data = user_data;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_problem_solve(alpa_solution** out, const alpa_problem* problem,
                                    const alpa_solve_options* options, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (problem == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "problem is NULL");
    if (!problem->finalized) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "problem is not finalized: call alpa_problem_finalize first");
    }
    auto solution = std::make_unique<alpa_solution>();
    solution->result = alpa::SolveSharding(problem->problem, alpa::capi::ToSolveOptions(options));
    const alpa::SolveResult& r = solution->result;
    const bool answered = r.status == alpa::SolveStatus::kOptimal ||
                          r.status == alpa::SolveStatus::kFeasible || !r.assignment.empty();
    if (int32_t rc = alpa::capi::FailWithoutAnswer(err, r.status, answered, r.message)) {
      *out = nullptr;
      return rc;
    }
    *out = solution.release();
    return ALPA_OK;
  });
}

ALPA_API void alpa_solution_destroy(alpa_solution* solution) { delete solution; }

ALPA_API int32_t alpa_solution_status(const alpa_solution* solution) {
  return solution == nullptr ? 0 : static_cast<int32_t>(solution->result.status);
}

ALPA_API double alpa_solution_objective(const alpa_solution* solution) {
  return solution == nullptr ? std::numeric_limits<double>::quiet_NaN()
                             : static_cast<double>(solution->result.objective);
}

ALPA_API double alpa_solution_lower_bound(const alpa_solution* solution) {
  return solution == nullptr ? std::numeric_limits<double>::quiet_NaN()
                             : static_cast<double>(solution->result.lower_bound);
}

ALPA_API double alpa_solution_seconds(const alpa_solution* solution) {
  return solution == nullptr ? std::numeric_limits<double>::quiet_NaN() : solution->result.seconds;
}

ALPA_API int64_t alpa_solution_assignment(const alpa_solution* solution, int32_t* out,
                                          int64_t capacity) {
  if (solution == nullptr) return alpa::capi::kFillMisuse;
  const std::vector<int32_t>& a = solution->result.assignment;
  return alpa::capi::FillArray(out, capacity, static_cast<int64_t>(a.size()),
                               [&a](int64_t i) { return a[static_cast<size_t>(i)]; });
}

ALPA_API const char* alpa_solution_message(const alpa_solution* solution) {
  return solution == nullptr ? "" : solution->result.message.c_str();
}

ALPA_API int32_t alpa_solution_to_json(alpa_buffer** out, const alpa_solution* solution,
                                       alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || solution == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and solution must not be NULL");
    }
    *out = new alpa_buffer{SolutionText(solution->result)};
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_problem_solve_json(alpa_buffer** out, const char* request, size_t size,
                                         alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || (request == nullptr && size > 0)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and request must not be NULL");
    }
    // A JsonDocument: bounded while parsing, and released without allocating (a plain
    // nlohmann document can abort the process when memory runs out while it is destroyed).
    alpa::Result<alpa::JsonDocument> document =
        alpa::ParseJsonDocument(std::string_view(request, size));
    if (!document.ok() && document.status().code() == alpa::StatusCode::kOutOfMemory) {
      return Fail(err, document.status());
    }
    if (!document.ok()) {
      const std::string& why = document.status().message();
      // A literal such as 1e400: valid JSON, but beyond a double ("number overflow parsing
      // '1e400'").
      if (why.find("number overflow") != std::string::npos) {
        return Fail(err, ALPA_ERR_PARSE,
                    "request: a number is out of range (beyond +-1.8e308): " + why);
      }
      return Fail(err, ALPA_ERR_PARSE, "request: " + why);
    }
    if (!document.value().root().is_object()) {
      return Fail(err, ALPA_ERR_PARSE,
                  std::string("request: expected a JSON object, found ") +
                      document.value().root().type_name());
    }
    nlohmann::json& j = document.value().root();
    if (!j.contains("problem")) return Fail(err, ALPA_ERR_PARSE, "request: missing \"problem\"");
    alpa_solve_options options;
    if (j.contains("options")) {
      if (int32_t s = ApplyJsonOptions(&options, j["options"], err)) return s;
    }
    // The problem object may be an IOPDDL problem ({"name", "nodes", "edges", ...}) or an Alpa
    // object; IOPDDL's reader expects it wrapped as {"problem": ...}.
    nlohmann::json& problem_json = j["problem"];
    alpa::Result<alpa::ShardingProblem> problem =
        problem_json.is_object() && problem_json.contains("format") &&
                problem_json["format"] == "alpa"
            ? alpa::ProblemFromJson(problem_json, alpa::ProblemFormat::kAlpa)
            : alpa::ProblemFromJson(WrapIopddl(std::move(problem_json)).root(),
                                    alpa::ProblemFormat::kIopddl);
    alpa::SolveResult result;
    if (!problem.ok()) {
      if (problem.status().code() != alpa::StatusCode::kInvalidProblem) {
        return Fail(err, problem.status());
      }
      result.status = alpa::SolveStatus::kInvalidInput;
      result.message = problem.status().message();
    } else {
      result = alpa::SolveSharding(problem.value(), alpa::capi::ToSolveOptions(&options));
    }
    *out = new alpa_buffer{SolutionText(result)};
    return ALPA_OK;
  });
}

}  // extern "C"

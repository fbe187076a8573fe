#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "alpa.h"
#include "cli_output.h"
#include "commands.h"

extern const unsigned char alpa_default_problem[];
extern const unsigned long alpa_default_problem_size;

namespace alpa_cli {
namespace {

using Clock = std::chrono::steady_clock;

// Share of the wall-clock limit kept back for reading, expanding and printing.
constexpr double kTimeoutMargin = 0.03;

int32_t PrintProgress(void* /*user*/, const alpa_progress* p) {
  std::printf("# %8.3fs  %-10s objective %s  bound %s\n", p->seconds, p->phase,
              FormatNumber(p->objective, 10).c_str(), FormatNumber(p->lower_bound, 10).c_str());
  std::fflush(stdout);
  return 0;
}

std::string FormatAssignment(const std::vector<int32_t>& a) {
  std::string out = "[";
  for (size_t i = 0; i < a.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(a[i]);
  }
  return out + "]";
}

}  // namespace

int RunSolve(const SolveArgs& args) {
  const Clock::time_point start = Clock::now();
  alpa_error* err = nullptr;
  alpa_problem* problem = nullptr;
  const int32_t read =
      args.file.empty()
          ? alpa_problem_read_buffer(&problem, reinterpret_cast<const char*>(alpa_default_problem),
                                     alpa_default_problem_size, ALPA_FORMAT_AUTO, &err)
          : alpa_problem_read_file(&problem, args.file.c_str(), ALPA_FORMAT_AUTO, &err);
  if (read != ALPA_OK) return ReportError(err);
  const double read_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!args.quiet) {
    std::printf("# read %lld nodes, %lld edges in %.3fs\n",
                static_cast<long long>(alpa_problem_node_count(problem)),
                static_cast<long long>(alpa_problem_edge_count(problem)), read_seconds);
  }

  alpa_solve_options* options = nullptr;
  if (alpa_solve_options_create(&options, &err) != ALPA_OK) {
    alpa_problem_destroy(problem);
    return ReportError(err);
  }
  if (args.timeout_seconds > 0) {
    // The limit is for the whole run, as the IOPDDL harness measures it.
    const double left = args.timeout_seconds * (1 - kTimeoutMargin) - read_seconds;
    alpa_solve_options_set_double(options, ALPA_OPT_TIME_LIMIT_SECONDS, left > 0.01 ? left : 0.01,
                                  nullptr);
  }
  alpa_solve_options_set_int(options, ALPA_OPT_DETERMINISTIC, args.deterministic ? 1 : 0, nullptr);
  alpa_solve_options_set_int(options, ALPA_OPT_THREADS, args.threads, nullptr);
  alpa_solve_options_set_double(options, ALPA_OPT_RELATIVE_GAP, args.relative_gap, nullptr);
  if (!args.quiet) alpa_solve_options_set_progress(options, PrintProgress, nullptr, nullptr);

  alpa_solution* solution = nullptr;
  const int32_t solved = alpa_problem_solve(&solution, problem, options, &err);
  alpa_solve_options_destroy(options);
  alpa_problem_destroy(problem);
  if (solved == ALPA_ERR_INFEASIBLE || solved == ALPA_ERR_TIMEOUT || solved == ALPA_ERR_CANCELLED) {
    // No answer is a status of the C ABI: the message, the empty assignment and exit code 2.
    std::fprintf(stderr, "alpa: %s\n", alpa_error_message(err));
    alpa_error_free(err);
    if (!args.json) std::printf("[]\n");
    return 2;
  }
  if (solved != ALPA_OK) return ReportError(err);

  const int32_t status = alpa_solution_status(solution);
  std::vector<int32_t> assignment(
      static_cast<size_t>(alpa_solution_assignment(solution, nullptr, 0)));
  alpa_solution_assignment(solution, assignment.data(), static_cast<int64_t>(assignment.size()));
  int exit_code = assignment.empty() ? 2 : 0;
  if (status == ALPA_SOLVE_INVALID_INPUT) exit_code = 1;
  const char* message = alpa_solution_message(solution);
  if (message[0] != '\0') std::fprintf(stderr, "alpa: %s\n", message);

  if (args.json) {
    alpa_buffer* json = nullptr;
    if (alpa_solution_to_json(&json, solution, &err) != ALPA_OK) {
      alpa_solution_destroy(solution);
      return ReportError(err);
    }
    std::printf("%s\n", alpa_buffer_data(json));
    alpa_buffer_free(json);
  } else {
    std::printf("# status %s  objective %s  lower bound %s  %.3fs (solve %.3fs)\n",
                SolveStatusName(status),
                FormatNumber(alpa_solution_objective(solution), 10).c_str(),
                FormatNumber(alpa_solution_lower_bound(solution), 10).c_str(),
                std::chrono::duration<double>(Clock::now() - start).count(),
                alpa_solution_seconds(solution));
    std::printf("%s\n", FormatAssignment(assignment).c_str());
  }
  std::fflush(stdout);
  alpa_solution_destroy(solution);
  return exit_code;
}

}  // namespace alpa_cli

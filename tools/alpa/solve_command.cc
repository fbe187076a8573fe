// `alpa solve FILE [TIMEOUT]`: solves a sharding problem (IOPDDL or Alpa JSON), printing progress
// lines and, last, the assignment as IOPDDL expects it (or one JSON object with --json); -o also
// writes the assignment to a file that `alpa evaluate FILE @ASSIGNMENT` reads.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "alpa.h"
#include "assignment_text.h"
#include "cli_output.h"
#include "commands.h"
#include "input_limit.h"
#include "seconds_validator.h"

namespace alpa_cli {
namespace {

using Clock = std::chrono::steady_clock;

// Share of the wall-clock limit kept back for expanding and printing.
constexpr double kTimeoutMargin = 0.03;
// The C ABI reads a time limit of 0 as "none": the smallest positive one means "stop now, with
// the best answer found so far".
constexpr double kStopNowSeconds = 1e-9;
// IOPDDL objectives are integers up to about 1e15: print them in full in progress lines.
constexpr int kObjectiveDigits = 10;

struct SolveArgs {
  std::string file;
  double timeout_seconds = 0;  // <= 0: no limit
  bool json = false;
  bool deterministic = false;
  int threads = 0;
  double relative_gap = 0;
  bool quiet = false;           // no progress lines
  std::string assignment_file;  // -o: also write the assignment here
  InputLimit limit;             // --max-input-bytes
};

int32_t PrintProgress(void* /*user*/, const alpa_progress* progress) {
  PrintSolveProgress(*progress, kObjectiveDigits);
  return 0;
}

// --deterministic: progress lines without the clock, so that runs compare byte for byte.
int32_t PrintProgressWithoutSeconds(void* /*user*/, const alpa_progress* progress) {
  PrintSolveProgress(*progress, kObjectiveDigits, /*with_seconds=*/false);
  return 0;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Owns the handles of one solve; frees them on every path.
struct SolveHandles {
  alpa_problem* problem = nullptr;
  alpa_solve_options* options = nullptr;
  alpa_solution* solution = nullptr;
  SolveHandles() = default;
  SolveHandles(const SolveHandles&) = delete;
  SolveHandles& operator=(const SolveHandles&) = delete;
  ~SolveHandles() {
    alpa_solution_destroy(solution);
    alpa_solve_options_destroy(options);
    alpa_problem_destroy(problem);
  }
};

// When the run must end: TIMEOUT after `start` less the margin; time_point::max() without one,
// and with --deterministic, where TIMEOUT is the solver's work budget and the library applies
// its own safety stop (reading is then bounded by the input limit alone).
Clock::time_point RunDeadline(const SolveArgs& args, Clock::time_point start) {
  if (!(args.timeout_seconds > 0) || args.deterministic) return Clock::time_point::max();
  return start + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(args.timeout_seconds * (1 - kTimeoutMargin)));
}

// The solve options of the arguments; the time limit is what is left of the whole run's
// TIMEOUT (reading included, as the IOPDDL harness measures it), or with --deterministic TIMEOUT
// itself, the work budget, which must not depend on how long reading took. 0, or the exit code.
int MakeSolveOptions(const SolveArgs& args, Clock::time_point deadline,
                     alpa_solve_options** options) {
  alpa_error* err = nullptr;
  if (alpa_solve_options_create(options, &err) != ALPA_OK) return ReportError(err);
  if (args.deterministic && args.timeout_seconds > 0) {
    alpa_solve_options_set_double(*options, ALPA_OPT_TIME_LIMIT_SECONDS, args.timeout_seconds,
                                  nullptr);
  } else if (deadline != Clock::time_point::max()) {
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    alpa_solve_options_set_double(*options, ALPA_OPT_TIME_LIMIT_SECONDS,
                                  std::max(left, kStopNowSeconds), nullptr);
  }
  alpa_solve_options_set_int(*options, ALPA_OPT_DETERMINISTIC, args.deterministic ? 1 : 0, nullptr);
  alpa_solve_options_set_int(*options, ALPA_OPT_THREADS, args.threads, nullptr);
  alpa_solve_options_set_double(*options, ALPA_OPT_RELATIVE_GAP, args.relative_gap, nullptr);
  if (!args.quiet) {
    alpa_solve_options_set_progress(
        *options, args.deterministic ? PrintProgressWithoutSeconds : PrintProgress, nullptr,
        nullptr);
  }
  return 0;
}

// The status line and the assignment, or the solution's JSON object. 0, or the exit code.
int PrintSolution(const SolveArgs& args, const alpa_solution* solution,
                  const std::string& assignment_text, Clock::time_point start) {
  if (args.json) {
    alpa_error* err = nullptr;
    alpa_buffer* json = nullptr;
    if (alpa_solution_to_json(&json, solution, &err) != ALPA_OK) return ReportError(err);
    std::printf("%s\n", alpa_buffer_data(json));
    alpa_buffer_free(json);
    return 0;
  }
  std::printf("# status %s  objective %s  lower bound %s",
              SolveStatusName(alpa_solution_status(solution)),
              FormatNumber(alpa_solution_objective(solution), kObjectiveDigits).c_str(),
              FormatNumber(alpa_solution_lower_bound(solution), kObjectiveDigits).c_str());
  // --deterministic: no clock readings, so that runs compare byte for byte.
  if (args.deterministic)
    std::printf("\n");
  else
    std::printf("  %.3fs (solve %.3fs)\n", SecondsSince(start), alpa_solution_seconds(solution));
  std::printf("%s\n", assignment_text.c_str());
  return 0;
}

// -o: the assignment line (the last line of the text output) into the file. 0, or the exit code.
int WriteAssignmentFile(const SolveArgs& args, const std::string& assignment_text) {
  if (args.assignment_file.empty()) return 0;
  const std::string line = assignment_text + "\n";
  if (!WriteFile(args.assignment_file, line.data(), line.size())) {
    return ReportBadInput("-o: cannot write " + args.assignment_file);
  }
  return 0;
}

// No assignment: the message on stderr, the empty assignment (as a line, in the -o file, or as a
// JSON object with the status) and exit code 2.
int ReportNoAnswer(const SolveArgs& args, int32_t status, const std::string& message) {
  std::fprintf(stderr, "alpa: %s\n", message.c_str());
  const std::string assignment_text = FormatAssignmentText({});
  if (int rc = WriteAssignmentFile(args, assignment_text)) return rc;
  if (args.json) {
    const char* name = status == ALPA_ERR_INFEASIBLE  ? "infeasible"
                       : status == ALPA_ERR_CANCELLED ? "cancelled"
                                                      : "no_solution";
    const nlohmann::json object = {{"status", name},
                                   {"objective", nullptr},
                                   {"lower_bound", nullptr},
                                   {"assignment", nlohmann::json::array()},
                                   {"message", message}};
    std::printf("%s\n", object.dump().c_str());
  } else {
    std::printf("%s\n", assignment_text.c_str());
  }
  std::fflush(stdout);
  return 2;
}

int ReportNoAnswer(const SolveArgs& args, int32_t status, alpa_error* err) {
  const std::string message = alpa_error_message(err);
  alpa_error_free(err);
  return ReportNoAnswer(args, status, message);
}

// One alpa_problem_read_file on a thread of its own. The reader cannot be interrupted (a slow
// pipe, a large file), so the command waits for it only until its deadline; the shared state
// outlives the command when the thread is left behind.
class ProblemReader {
 public:
  // Takes `options` (the input limit) and frees it when the read ends.
  ProblemReader(const std::string& path, alpa_solve_options* options)
      : state_(std::make_shared<State>()) {
    std::thread([state = state_, path, options] {
      alpa_problem* problem = nullptr;
      alpa_error* err = nullptr;
      const int32_t status = alpa_problem_read_file_with_options(&problem, path.c_str(),
                                                                 ALPA_FORMAT_AUTO, options, &err);
      alpa_solve_options_destroy(options);
      const std::lock_guard<std::mutex> lock(state->mutex);
      state->problem = problem;
      state->err = err;
      state->status = status;
      state->done = true;
      state->finished.notify_one();
    }).detach();
  }

  // Waits for the reader until `deadline`; false when it has not finished by then.
  bool Wait(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (deadline == Clock::time_point::max()) {
      state_->finished.wait(lock, [this] { return state_->done; });
      return true;
    }
    return state_->finished.wait_until(lock, deadline, [this] { return state_->done; });
  }

  // After a successful Wait: the reader's status; the problem moves to *problem, the error
  // (if any) to *err.
  int32_t Take(alpa_problem** problem, alpa_error** err) {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    *problem = state_->problem;
    *err = state_->err;
    state_->problem = nullptr;
    state_->err = nullptr;
    return state_->status;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    int32_t status = ALPA_OK;
    alpa_problem* problem = nullptr;
    alpa_error* err = nullptr;
  };
  std::shared_ptr<State> state_;
};

// The time limit ran out while the file was still being read: no answer (exit code 2). The
// reader thread is still inside the library, so the process ends here, without running static
// destructors under it.
[[noreturn]] void ExitReadTimedOut(const SolveArgs& args) {
  const int rc = ReportNoAnswer(args, ALPA_ERR_TIMEOUT,
                                "the time limit was reached while reading " + args.file);
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(rc);
}

int RunSolve(const SolveArgs& args) {
  const Clock::time_point start = Clock::now();
  // One deadline for the whole command, fixed before reading: reading counts against it.
  const Clock::time_point deadline = RunDeadline(args, start);
  SolveHandles handles;
  alpa_error* err = nullptr;
  alpa_solve_options* read_options = nullptr;
  if (int rc = MakeReadOptions(args.limit, &read_options)) return rc;
  ProblemReader reader(args.file, read_options);
  if (!reader.Wait(deadline)) ExitReadTimedOut(args);
  if (reader.Take(&handles.problem, &err) != ALPA_OK) return ReportError(err);
  const double read_seconds = SecondsSince(start);
  if (!args.quiet) {
    std::printf("# read %lld nodes, %lld edges",
                static_cast<long long>(alpa_problem_node_count(handles.problem)),
                static_cast<long long>(alpa_problem_edge_count(handles.problem)));
    if (args.deterministic)
      std::printf("\n");
    else
      std::printf(" in %.3fs\n", read_seconds);
  }
  if (int rc = MakeSolveOptions(args, deadline, &handles.options)) return rc;
  const int32_t solved =
      alpa_problem_solve(&handles.solution, handles.problem, handles.options, &err);
  if (IsNoAnswer(solved)) return ReportNoAnswer(args, solved, err);
  if (solved != ALPA_OK) return ReportError(err);

  const alpa_solution* solution = handles.solution;
  std::vector<int32_t> assignment(
      static_cast<size_t>(alpa_solution_assignment(solution, nullptr, 0)));
  alpa_solution_assignment(solution, assignment.data(), static_cast<int64_t>(assignment.size()));
  int exit_code = assignment.empty() ? 2 : 0;
  if (alpa_solution_status(solution) == ALPA_SOLVE_INVALID_INPUT) exit_code = 1;
  const char* message = alpa_solution_message(solution);
  if (message[0] != '\0') std::fprintf(stderr, "alpa: %s\n", message);

  // The file holds the last line of the text output ("[]" when none was found), so that it
  // never keeps an older run's answer.
  const std::string assignment_text = FormatAssignmentText(assignment);
  if (int rc = WriteAssignmentFile(args, assignment_text)) return rc;
  if (int rc = PrintSolution(args, solution, assignment_text, start)) return rc;
  std::fflush(stdout);
  return exit_code;
}

}  // namespace

Command AddSolveCommand(CLI::App& app) {
  auto args = std::make_shared<SolveArgs>();
  CLI::App* solve = app.add_subcommand("solve", "Solve a sharding problem (IOPDDL or Alpa JSON)");
  solve->add_option("file", args->file, "Problem file (.json or .json.gz)")->required();
  solve
      ->add_option("timeout", args->timeout_seconds,
                   "Wall-clock limit in seconds for the whole run, reading included (default: "
                   "none); 0 left: the best answer so far, or none")
      ->check(NonNegativeSeconds());
  solve->add_flag("--json", args->json, "Print the result as one JSON object (last line)");
  solve->add_flag("--deterministic", args->deterministic,
                  "The same answer and output for the same file, options and build, whatever the "
                  "load or thread count: TIMEOUT becomes a work budget (counted steps; wall time "
                  "may exceed it on a slow or busy machine; a safety stop at 10 x TIMEOUT), and "
                  "the text output carries no clock readings");
  solve->add_option("--threads", args->threads, "Threads (0: all)")->check(CLI::Range(0, 4096));
  solve->add_option("--gap", args->relative_gap, "Stop within this relative gap")
      ->check(CLI::Range(0.0, 0.999999));
  solve->add_flag("-q,--quiet", args->quiet, "No progress lines");
  AddInputLimitOption(solve, &args->limit);
  solve->add_option("-o,--output", args->assignment_file,
                    "Also write the assignment (\"[0, 0, 2, 1, 0]\") to this file, for "
                    "alpa evaluate FILE @ASSIGNMENT_FILE");
  return {solve, [args] { return RunSolve(*args); }};
}

}  // namespace alpa_cli

// `alpa evaluate FILE ASSIGNMENT`: the cost of an assignment of a sharding problem, or the
// constraint it violates. The assignment is given inline ("[0, 0, 2, 1, 0]"), as @FILE or as -
// (stdin): a large one does not fit on a command line.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "alpa.h"
#include "assignment_text.h"
#include "cli_output.h"
#include "commands.h"
#include "input_limit.h"

namespace alpa_cli {
namespace {

// Costs are integers up to about 1e15 or, from other formats, doubles: all their digits.
constexpr int kCostDigits = 17;

struct EvaluateArgs {
  std::string file;
  std::string assignment;  // the assignment, @FILE or -
  InputLimit limit;        // --max-input-bytes
};

int RunEvaluate(const EvaluateArgs& args) {
  const InputLimit& limit = args.limit;
  std::string text, source;
  const std::string read_error =
      ReadAssignmentArgument(args.assignment, limit.bytes, &text, &source);
  if (!read_error.empty()) return ReportBadInput(read_error);
  std::vector<int32_t> assignment;
  const std::string parse_error = ParseAssignmentText(text, &assignment);
  if (!parse_error.empty()) {
    return ReportBadInput(source.empty() ? parse_error : source + ": " + parse_error);
  }

  alpa_error* err = nullptr;
  alpa_problem* problem = nullptr;
  alpa_solve_options* read_options = nullptr;
  if (int rc = MakeReadOptions(limit, &read_options)) return rc;
  const int32_t read = alpa_problem_read_file_with_options(&problem, args.file.c_str(),
                                                           ALPA_FORMAT_AUTO, read_options, &err);
  alpa_solve_options_destroy(read_options);
  if (read != ALPA_OK) return ReportError(err);
  double cost = 0;
  const int32_t status = alpa_problem_evaluate(
      &cost, problem, static_cast<int64_t>(assignment.size()), assignment.data(), &err);
  alpa_problem_destroy(problem);
  if (status != ALPA_OK) {
    std::printf("invalid: %s\n", alpa_error_message(err));
    alpa_error_free(err);
    return 1;
  }
  std::printf("%s\n", FormatNumber(cost, kCostDigits).c_str());
  return 0;
}

}  // namespace

Command AddEvaluateCommand(CLI::App& app) {
  auto args = std::make_shared<EvaluateArgs>();
  CLI::App* evaluate =
      app.add_subcommand("evaluate", "Print the cost of an assignment or the violated constraint");
  evaluate->add_option("file", args->file, "Problem file")->required();
  evaluate
      ->add_option("assignment", args->assignment,
                   "Strategies, e.g. \"[0, 0, 2, 1, 0]\"; @FILE reads them from FILE (alpa solve "
                   "-o FILE writes it), - from stdin")
      ->required();
  AddInputLimitOption(evaluate, &args->limit);
  return {evaluate, [args] { return RunEvaluate(*args); }};
}

}  // namespace alpa_cli

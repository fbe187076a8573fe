// alpa: command-line front end of libalpa.
//   alpa                                   the main job: alpa plan with its defaults (gpt-2.6b
//                                          on two p3.16xlarge hosts)
//   alpa plan [--model SPEC] [--cluster P:N] pipeline stages + sharding (Alpa's two levels)
//   alpa baseline [--model SPEC] [--cluster P:N] [--dp N --tp N --pp N -B N]
//                                          the Megatron-LM baseline: the grid search over manual
//                                          dp x tp x pp plans, or one manual plan
//   alpa simulate PLAN.json [--svg F]      one simulated iteration of a plan vs the prediction
//   alpa compile PLAN.json [--device D]    the device programs the plan lowers to
//   alpa run PLAN.json [--steps N] [--check] [--devices threads|mpi]
//                                          train the plan on CPU devices (synthetic data)
//   alpa calibrate [--out F] [--quick]     measure the GPU, write the calibration file
//   alpa solve FILE [TIMEOUT] [--json] [-o A.txt]
//                                          solve a sharding problem (IOPDDL or Alpa JSON); -o
//                                          also writes the assignment to A.txt
//   alpa evaluate FILE "[0, 0, 2, 1, 0]"   cost of an assignment, or the violated constraint;
//   alpa evaluate FILE @A.txt | -          the assignment read from a file or from stdin
//   alpa models [--json]                   model-zoo presets (gpt, bert, moe, wresnet, llama)
//                                          and family keys
//   alpa graph --model SPEC | --file F     graph statistics [--json] or the graph JSON [-o F]
//   alpa shard --model SPEC --mesh 2x4     auto-shard a graph on one logical mesh
// Each command registers itself in its own <name>_command.cc (see commands.h).
#include <CLI/CLI.hpp>

#include <new>
#include <string>
#include <vector>

#include "alpa.h"
#include "cli_output.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"alpa: automatic parallelization planner (libalpa " +
               std::string(alpa_version_string()) + ")"};
  app.set_version_flag("--version", std::string(alpa_version_string()));
  app.require_subcommand(0, 1);

  // Registered in the order --help lists them.
  std::vector<alpa_cli::Command> commands;
  commands.push_back(alpa_cli::AddSolveCommand(app));
  commands.push_back(alpa_cli::AddEvaluateCommand(app));
  commands.push_back(alpa_cli::AddGraphCommand(app));
  commands.push_back(alpa_cli::AddModelsCommand(app));
  commands.push_back(alpa_cli::AddShardCommand(app));
  const alpa_cli::Command main_job = alpa_cli::AddPlanCommand(app);
  commands.push_back(main_job);
  commands.push_back(alpa_cli::AddBaselineCommand(app));
  commands.push_back(alpa_cli::AddSimulateCommand(app));
  commands.push_back(alpa_cli::AddCompileCommand(app));
  commands.push_back(alpa_cli::AddRunCommand(app));
  commands.push_back(alpa_cli::AddCalibrateCommand(app));
  // After the subcommands, which would inherit it.
  app.footer(
      "Without a subcommand, alpa runs the main job: alpa plan with its defaults (gpt-2.6b on two "
      "p3.16xlarge hosts).");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version exit 0; every usage error exits 1, like other bad input.
    return app.exit(error) == 0 ? 0 : 1;
  }

  // The library returns ALPA_ERR_OUT_OF_MEMORY rather than throw; the program's own containers
  // can still fail to grow under a memory limit: that is an error, never an abort.
  try {
    for (const alpa_cli::Command& command : commands) {
      if (command.subcommand->parsed()) return command.run();
    }
    // `alpa` alone runs the main job: `alpa plan` with its defaults.
    return main_job.run();
  } catch (const std::bad_alloc&) {
    return alpa_cli::ReportBadInput("out of memory");
  }
}

// What `alpa run`, `alpa compile` and `alpa plan --run` share: running a plan's device programs
// step by step and printing each step.
#pragma once

#include <cstdint>
#include <string>

#include "alpa.h"

namespace CLI {
class App;
}  // namespace CLI

namespace alpa_cli {

struct RunArgs {
  int64_t steps = 1;
  uint64_t seed = 0;
  bool check = false;
  // "1f1b", "gpipe", "zb-h1" or "interleaved-1f1b"; empty: the plan's own
  // (alpa_plan_pipeline_schedule).
  std::string schedule{};
  std::string devices = "threads";  // or "mpi"
  std::string backend = "cpu";      // or "cuda"
  bool tf32 = false;                // cuda: f32 contractions in TF32
  bool json = false;                // one JSON object per step, as the last lines
};

// Registers --seed, --check, --schedule, --devices, --backend, --tf32 and --json (not --steps:
// each command names it).
void AddRunOptions(CLI::App* command, RunArgs* args);

// Runs `plan` for args.steps steps, printing per step the loss, wall time and measured against
// planned peak memory (and with --check the largest differences from the one-device
// interpreter). Returns the exit code: 0, 1 (bad input or a failing device), 3 (a check above
// tolerance).
int RunPlanSteps(const alpa_plan* plan, const RunArgs& args);

}  // namespace alpa_cli

// libFuzzer target: the plan JSON reader of the simulator (exec/sim/plan_simulation.h).
// Whatever it accepts must be a valid simulator input that simulates (when small enough to be
// quick) with a finite closed form and a report that is JSON; every rejection has a message
// naming the plan JSON.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "exec/sim/plan_simulation.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  alpa::PlanSimulationContext context;
  alpa::Result<alpa::PipelineSimInput> in =
      alpa::SimInputFromPlanJson(bytes, alpa::PipelineScheduleKind::kOneFOneB, &context);
  if (!in.ok()) {
    const std::string& m = in.status().message();
    if (m.rfind("plan JSON", 0) != 0 && in.status().code() != alpa::StatusCode::kOutOfMemory) {
      Fail("an error that does not name the plan JSON: " + m);
    }
    return 0;
  }
  alpa::PipelineSimInput input = std::move(in).value();
  const alpa::Status valid = alpa::ValidatePipelineSimInput(input);
  if (!valid.ok()) Fail("accepted an invalid input: " + valid.message());
  size_t moves = 0;
  for (const alpa::PipelineSimTransfer& t : input.transfers) moves += t.slices.size() + 1;
  if (input.microbatches * static_cast<int64_t>(input.stages.size() + moves) > 100000) return 0;
  input.record_timeline = false;
  alpa::Result<alpa::PipelineSimResult> r = alpa::SimulatePipeline(input);
  if (!r.ok()) Fail("a valid input did not simulate: " + r.status().message());
  if (!std::isfinite(r.value().closed_form_seconds)) Fail("a closed form that is not finite");
  const std::string report = alpa::SimulationJson(input, r.value(), context);
  if (!nlohmann::json::accept(report)) Fail("the report is not JSON");
  return 0;
}

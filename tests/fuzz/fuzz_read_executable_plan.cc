// libFuzzer target: the executable plan JSON reader (solvers/planner/plan_json_read.h). Every
// rejection has a message naming the plan JSON; whatever it accepts is a plan that writes back
// as executable JSON which reads again into a plan that writes the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "solvers/planner/plan_json.h"
#include "solvers/planner/plan_json_read.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  alpa::Cluster cluster;
  std::string model;
  alpa::Result<alpa::PipelinePlan> plan = alpa::ReadPipelinePlanJson(bytes, &cluster, &model);
  if (!plan.ok()) {
    if (plan.status().message().rfind("plan JSON", 0) != 0) {
      Fail("an error that does not name the plan JSON: " + plan.status().message());
    }
    return 0;
  }
  alpa::Result<std::string> written =
      alpa::PipelinePlanJson(plan.value(), cluster, model, alpa::kPlanJsonExecutable);
  if (!written.ok()) Fail("an accepted plan did not write: " + written.status().message());
  alpa::Cluster cluster_again;
  std::string model_again;
  alpa::Result<alpa::PipelinePlan> again =
      alpa::ReadPipelinePlanJson(written.value(), &cluster_again, &model_again);
  if (!again.ok()) Fail("a written plan did not read: " + again.status().message());
  alpa::Result<std::string> rewritten =
      alpa::PipelinePlanJson(again.value(), cluster_again, model_again, alpa::kPlanJsonExecutable);
  if (!rewritten.ok() || rewritten.value() != written.value()) {
    Fail("writing a read plan again changed its bytes");
  }
  return 0;
}

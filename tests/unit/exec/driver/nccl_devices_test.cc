// Devices one per process over NCCL (ALPA_DEVICES_NCCL, exec/driver/nccl_world.h): the groups
// the executor splits off for a plan's collectives, the clear answers without a rendezvous or a
// GPU, and on a machine with a GPU a one-process run over NCCL equal to one device.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "alpa.h"
#include "alpa_experimental.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/driver/nccl_world.h"
#include "exec/lower/lower_plan.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"

namespace alpa {
namespace {

const char* kGpt = "gpt:layers=2,hidden=16,heads=4,seq=8,vocab=32,batch=8,dtype=f32";

// GPT on 4 devices: data parallel 2 x tensor parallel 2.
Result<ProgramSet> DpTpPrograms() {
  Result<PlannerModel> model = PlannerModelFromSpec(kGpt);
  if (!model.ok()) return model.status();
  Result<Cluster> cluster = ParseClusterSpec("dgx-a100-80g:hosts=1,devices_per_host=4");
  if (!cluster.ok()) return cluster.status();
  ManualPlanSpec spec;
  spec.data_parallel = 2;
  spec.tensor_parallel = 2;
  spec.pipeline_parallel = 1;
  spec.microbatches = 1;
  PlannerOptions options;
  options.threads = 1;
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec, options);
  if (!plan.ok()) return plan.status();
  LowerOptions lower;
  lower.threads = 1;
  return LowerPlan(plan.value(), lower);
}

TEST(NcclDevices, EveryCollectiveGroupButTheWorldIsSplitOffOnceInFirstUseOrder) {
  Result<ProgramSet> set = DpTpPrograms();
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set.value().devices, 4);
  const std::vector<DeviceGroup> groups = CollectiveGroups(set.value(), 4);
  const std::set<DeviceGroup> listed(groups.begin(), groups.end());
  EXPECT_EQ(listed.size(), groups.size()) << "each group once";
  // The tensor-parallel pairs and the data-parallel pairs (the gradients' all-reduce).
  EXPECT_EQ(listed.count({0, 1}), 1u);
  EXPECT_EQ(listed.count({2, 3}), 1u);
  EXPECT_EQ(listed.count({0, 2}), 1u);
  EXPECT_EQ(listed.count({1, 3}), 1u);
  EXPECT_EQ(listed.count({0, 1, 2, 3}), 0u) << "the world needs no split";
  for (const DeviceProgram& p : set.value().programs) {
    for (const Instruction& in : p.code) {
      if (!CollectiveKindOf(in.kind).has_value() || in.group.size() < 2) continue;
      const DeviceGroup world = {0, 1, 2, 3};
      EXPECT_TRUE(listed.count(in.group) == 1 || in.group == world) << InstructionText(p, in);
    }
  }
  // The same programs give the same list (every rank lowers them alike).
  EXPECT_EQ(CollectiveGroups(set.value(), 4), groups);
}

// An MLP plan on one device made through the C ABI.
alpa_plan* OneDevicePlan() {
  alpa_cluster* cluster = nullptr;
  EXPECT_EQ(alpa_cluster_create_preset(&cluster, "dgx-a100-80g:devices_per_host=1", 0, nullptr),
            ALPA_OK);
  alpa_manual_plan spec = ALPA_MANUAL_PLAN_INIT;
  alpa_plan* plan = nullptr;
  EXPECT_EQ(alpa_model_plan_manual(&plan, "mlp:layers=2,hidden=16,batch=8", cluster, &spec, nullptr,
                                   nullptr),
            ALPA_OK);
  alpa_cluster_destroy(cluster);
  return plan;
}

std::string Message(alpa_error* err) {
  const std::string m = err != nullptr ? alpa_error_message(err) : "";
  alpa_error_free(err);
  return m;
}

TEST(NcclDevices, WithoutARendezvousTheAnswerSaysWhatToSet) {
  if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr || std::getenv("PMI_RANK") != nullptr) {
    GTEST_SKIP() << "under mpirun the rendezvous is MPI's";
  }
  unsetenv("ALPA_RENDEZVOUS");
  alpa_plan* plan = OneDevicePlan();
  ASSERT_NE(plan, nullptr);
  alpa_executor_config config = ALPA_EXECUTOR_CONFIG_INIT;
  config.devices = ALPA_DEVICES_NCCL;
  alpa_executor* ex = nullptr;
  alpa_error* err = nullptr;
  EXPECT_EQ(alpa_executor_create(&ex, plan, &config, &err), ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Message(err).find("ALPA_RENDEZVOUS is not set"), std::string::npos);
  EXPECT_EQ(ex, nullptr);
  config.devices = 3;
  err = nullptr;
  EXPECT_EQ(alpa_executor_create(&ex, plan, &config, &err), ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Message(err).find("ALPA_DEVICES_NCCL (2)"), std::string::npos);
  alpa_plan_destroy(plan);
}

// One process over NCCL (file rendezvous): ALPA_ERR_UNSUPPORTED with the reason where no GPU
// (or no CUDA) can be used; on a GPU, steps checked against the one-device interpreter.
TEST(NcclDevices, OneProcessRunsOnItsGpuOrSaysWhyNot) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("alpa_nccl_devices_" + std::to_string(getpid())))
          .string();
  std::filesystem::remove(path);
  setenv("ALPA_RENDEZVOUS", ("file:" + path).c_str(), 1);
  setenv("ALPA_RANK", "0", 1);
  setenv("ALPA_WORLD_SIZE", "1", 1);
  alpa_plan* plan = OneDevicePlan();
  ASSERT_NE(plan, nullptr);
  alpa_executor_config config = ALPA_EXECUTOR_CONFIG_INIT;
  config.devices = ALPA_DEVICES_NCCL;
  config.backend = ALPA_BACKEND_CUDA;
  config.check = 1;
  alpa_executor* ex = nullptr;
  alpa_error* err = nullptr;
  const int32_t rc = alpa_executor_create(&ex, plan, &config, &err);
  std::string why;
  if (CudaDeviceCount(&why) == 0) {
    EXPECT_EQ(rc, ALPA_ERR_UNSUPPORTED);
    const std::string m = Message(err);
    EXPECT_TRUE(m.find("GPU") != std::string::npos || m.find("CUDA") != std::string::npos) << m;
  } else {
    ASSERT_EQ(rc, ALPA_OK) << Message(err);
    EXPECT_EQ(alpa_executor_rank(ex), 0);
    for (int step = 0; step < 2; ++step) {
      alpa_step_result r = ALPA_STEP_RESULT_INIT;
      ASSERT_EQ(alpa_executor_run_step(ex, &r, sizeof r, &err), ALPA_OK) << Message(err);
      EXPECT_EQ(r.passed, 1) << "step " << step;
      EXPECT_TRUE(std::isfinite(r.loss));
    }
    alpa_executor_destroy(ex);
  }
  unsetenv("ALPA_RENDEZVOUS");
  unsetenv("ALPA_RANK");
  unsetenv("ALPA_WORLD_SIZE");
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".failed");
  alpa_plan_destroy(plan);
}

}  // namespace
}  // namespace alpa

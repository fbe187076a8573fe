// Sharded equals one device: plans that `alpa baseline` (manual Megatron-style plans) and
// `alpa plan` (the planner) produce for every zoo family, lowered to device programs and run on
// thread devices with real collectives for 3 Adam (or momentum) steps in f32, give the loss and
// every parameter and optimizer state of the one-device interpreter within rtol 1e-5, atol 4e-5;
// and what runs is what was planned (plan_conformance.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "exec/driver/memory_breakdown.h"
#include "exec/driver/plan_conformance.h"
#include "exec/driver/plan_run.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"

namespace alpa {
namespace {

struct Case {
  std::string name;
  std::string model;
  std::string cluster;
  bool planner = false;  // the planner's plan; else the manual spec
  ManualPlanSpec manual;
  int64_t microbatches = 1;  // planner: fixed B
  RematMode remat = RematMode::kSearch;
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Transformers: Adam with epsilon 1e-5. Attention's key biases have an exactly zero gradient
// (softmax ignores a shift of its inputs), so what the backward pass computes for them is
// rounding noise (~1e-9), and with epsilon 1e-8 Adam scales that noise up to +-lr per step, its
// sign set by the order of additions. A sharded plan adds in another order wherever it passes a
// partial sum through a linear op (a mul by a layer-norm scale before the all-reduce): the
// whole-batch step rounds the sum first, the plan rounds after the product. With epsilon 1e-5
// those directions move by < 1e-6 per step and every other parameter follows Adam as before.
const char* kMlp = "mlp:layers=4,hidden=16,batch=16,dtype=f32";
const char* kMlpCe = "mlp:layers=3,hidden=16,batch=16,dtype=f32,loss=ce,bias=1";
const char* kGpt = "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5";
const char* kGpt4 = "gpt:layers=4,hidden=16,heads=4,seq=8,vocab=32,batch=8,dtype=f32,adam_eps=1e-5";
const char* kBert =
    "bert:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5";
const char* kMoe =
    "moe:layers=2,hidden=16,heads=2,experts=4,seq=8,vocab=16,batch=8,group=8,dtype=f32,adam_eps=1e-"
    "5";
// Grouped-query attention (2 kv heads for 4 query heads), rotary tables as inputs.
const char* kLlama =
    "llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=16,batch=8,dtype=f32,"
    "adam_eps=1e-5";
const char* kWres =
    "wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=8,optimizer=momentum";

std::string ClusterSpec(int64_t hosts, int64_t per_host) {
  return "p3.16xlarge:hosts=" + std::to_string(hosts) +
         ",devices_per_host=" + std::to_string(per_host);
}

Case Manual(const std::string& model, int64_t hosts, int64_t per_host, int64_t dp, int64_t tp,
            int64_t pp, int64_t b, int32_t zero, bool remat,
            PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB) {
  Case c;
  c.model = model;
  c.cluster = ClusterSpec(hosts, per_host);
  c.manual.data_parallel = dp;
  c.manual.tensor_parallel = tp;
  c.manual.pipeline_parallel = pp;
  c.manual.microbatches = b;
  c.manual.zero_stage = zero;
  c.manual.remat = remat;
  c.schedule = schedule;
  c.name = model.substr(0, model.find(':')) + "_baseline_" + std::to_string(hosts) + "x" +
           std::to_string(per_host) + "_dp" + std::to_string(dp) + "tp" + std::to_string(tp) +
           "pp" + std::to_string(pp) + "B" + std::to_string(b) + (zero ? "_zero" : "") +
           (remat ? "_remat" : "") + (schedule == PipelineScheduleKind::kGPipe ? "_gpipe" : "");
  return c;
}

Case Planned(const std::string& model, int64_t hosts, int64_t per_host, int64_t b,
             RematMode remat = RematMode::kSearch,
             PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB) {
  Case c;
  c.model = model;
  c.cluster = ClusterSpec(hosts, per_host);
  c.planner = true;
  c.microbatches = b;
  c.remat = remat;
  c.schedule = schedule;
  c.name = model.substr(0, model.find(':')) + "_plan_" + std::to_string(hosts) + "x" +
           std::to_string(per_host) + "_B" + std::to_string(b) +
           (remat == RematMode::kOn    ? "_remat"
            : remat == RematMode::kOff ? "_noremat"
                                       : "") +
           (schedule == PipelineScheduleKind::kGPipe ? "_gpipe" : "");
  return c;
}

std::vector<Case> Cases() {
  using K = PipelineScheduleKind;
  std::vector<Case> cases;
  // Every family on the meshes 1x2, 2x1, 2x2, 1x4, 2x4 and pipelines of 1 to 4 stages.
  for (const char* model : {kMlp, kGpt, kBert, kMoe}) {
    cases.push_back(Manual(model, 1, 2, 1, 2, 1, 1, 0, false));            // mesh 1x2
    cases.push_back(Manual(model, 1, 2, 2, 1, 1, 2, 0, false));            // mesh 2x1
    cases.push_back(Manual(model, 1, 4, 2, 2, 1, 2, 1, false));            // 2x2, ZeRO
    cases.push_back(Manual(model, 1, 4, 1, 4, 1, 1, 0, true));             // 1x4, remat
    cases.push_back(Manual(model, 1, 8, 2, 4, 1, 1, 1, false));            // 2x4, ZeRO
    cases.push_back(Manual(model, 1, 4, 1, 2, 2, 2, 0, false));            // 2 stages
    cases.push_back(Manual(model, 1, 4, 1, 2, 2, 4, 0, true, K::kGPipe));  // GPipe, remat
    cases.push_back(Manual(model, 2, 4, 2, 2, 2, 4, 1, false));            // 2 hosts
    cases.push_back(Planned(model, 1, 2, 2));
    cases.push_back(Planned(model, 1, 4, 2, RematMode::kOn));
    cases.push_back(Planned(model, 1, 8, 4, RematMode::kOff, K::kGPipe));
  }
  // Pipelines of 3 and 4 stages (4 layers).
  cases.push_back(Manual(kMlp, 1, 4, 1, 1, 4, 4, 0, false));
  cases.push_back(Manual(kMlp, 1, 4, 1, 1, 4, 4, 0, true, K::kGPipe));
  cases.push_back(Manual(kGpt4, 1, 4, 1, 1, 4, 4, 0, false));
  cases.push_back(Manual(kGpt4, 1, 8, 2, 1, 4, 4, 1, true));
  cases.push_back(Manual(kGpt4, 1, 8, 1, 2, 4, 2, 0, false, K::kGPipe));
  cases.push_back(Manual(kMlpCe, 1, 2, 1, 1, 2, 4, 0, false));
  cases.push_back(Manual(kMlpCe, 1, 4, 2, 2, 1, 1, 1, true));
  cases.push_back(Planned(kMlpCe, 1, 4, 4));
  cases.push_back(Planned(kGpt4, 1, 4, 4));
  cases.push_back(Manual(kLlama, 1, 2, 1, 2, 1, 1, 0, false));            // mesh 1x2
  cases.push_back(Manual(kLlama, 1, 4, 2, 2, 1, 2, 1, false));            // 2x2, ZeRO
  cases.push_back(Manual(kLlama, 1, 4, 1, 4, 1, 1, 0, true));             // 1x4: 4 > kv_heads
  cases.push_back(Manual(kLlama, 1, 4, 1, 2, 2, 4, 0, true, K::kGPipe));  // 2 stages
  cases.push_back(Manual(kLlama, 2, 4, 2, 2, 2, 4, 1, false));            // 2 hosts
  cases.push_back(Planned(kLlama, 1, 4, 2));
  // Batch normalisation normalises over the microbatch, which the whole-batch step does not
  // do: the convolutional network runs with one microbatch.
  cases.push_back(Manual(kWres, 1, 2, 2, 1, 1, 1, 0, false));
  cases.push_back(Manual(kWres, 1, 2, 1, 2, 1, 1, 0, false));
  cases.push_back(Manual(kWres, 1, 4, 2, 2, 1, 1, 1, true));
  cases.push_back(Manual(kWres, 1, 4, 2, 1, 2, 1, 0, false));
  cases.push_back(Manual(kWres, 1, 8, 2, 2, 2, 1, 1, false, K::kGPipe));
  cases.push_back(Planned(kWres, 1, 4, 1));
  cases.push_back(Planned(kWres, 1, 8, 1, RematMode::kOn));
  return cases;
}

class PlanEquivalenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(PlanEquivalenceTest, ShardedEqualsOneDevice) {
  const Case& c = GetParam();
  Result<PlannerModel> model = PlannerModelFromSpec(c.model);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster = ParseClusterSpec(c.cluster);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  PlannerOptions options;
  options.threads = 2;
  Result<PipelinePlan> plan = Status::Ok();
  if (c.planner) {
    options.microbatches = c.microbatches;
    options.remat = c.remat;
    plan = PlanPipeline(model.value(), cluster.value(), options);
  } else {
    plan = EvaluateManualPlan(model.value(), cluster.value(), c.manual, options);
  }
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Result<Graph> whole = model.value().build(1);
  ASSERT_TRUE(whole.ok()) << whole.status().message();

  PlanRunOptions run_options;
  run_options.steps = 3;
  run_options.check = true;
  run_options.lower.schedule = c.schedule;
  Result<PlanRunReport> run = RunPlanOnThreads(plan.value(), whole.value(), run_options);
  ASSERT_TRUE(run.ok()) << run.status().message();
  for (const StepSummary& s : run.value().steps) {
    EXPECT_TRUE(s.passed) << "step " << s.step << ": loss " << s.loss << " vs " << s.reference_loss
                          << " (" << s.loss_error << " of the tolerance), " << s.worst_parameter
                          << " off by " << s.parameter_error << " of the tolerance";
  }
  Status conforms = CheckExecutedAgainstPlan(plan.value(), run.value());
  EXPECT_TRUE(conforms.ok()) << conforms.message();
  // Measured against planned memory, per device at the last step. The walk over the program
  // (memory_breakdown.h) must find the runtime's peak, so that its split by component accounts
  // for exactly what was measured, and the planner's model must give the planned bytes. The
  // bounds are docs/executor.md's ("Memory: measured against planned"): without the free ops'
  // values, which this CPU runtime materialises and a compiler fuses, a device never holds more
  // than 10 % above the plan; the plan overestimates by at most 15 % when every gradient is
  // accumulated over several microbatches without rematerialization, and by at most 35 % with
  // one microbatch (gradients appear during the backward) or with rematerialization.
  const StepSummary& last = run.value().steps.back();
  const ProgramSet& programs = run.value().programs;
  const std::vector<char> free_op = FreeOpsOfPlan(plan.value());
  bool remat = false;
  for (const PlannedStage& st : plan.value().stages) remat = remat || st.remat;
  const double least = plan.value().microbatches > 1 && !remat ? 0.85 : 0.65;
  double worst = 1;
  std::string worst_row;
  for (size_t d = 0; d < last.peak_bytes.size(); ++d) {
    if (last.peak_bytes[d] < 0 || last.planned_bytes[d] <= 0) continue;
    const DeviceProgram& program = programs.programs[d];
    const MeasuredMemory measured = MeasureProgramMemory(program, programs.graph, free_op);
    EXPECT_EQ(measured.peak_bytes, last.peak_bytes[d]) << "device " << d;
    Result<PlannedMemory> stage_model = PlannedStageMemory(plan.value(), program.stage, c.schedule);
    ASSERT_TRUE(stage_model.ok()) << stage_model.status().message();
    const PlannedMemory& planned = stage_model.value();
    EXPECT_EQ(planned.total(), last.planned_bytes[d]) << "device " << d;
    const double planned_bytes = static_cast<double>(last.planned_bytes[d]);
    const double ratio = static_cast<double>(last.peak_bytes[d]) / planned_bytes;
    const double without_free =
        static_cast<double>(measured.peak_without_free_values) / planned_bytes;
    const std::string row =
        "device " + std::to_string(d) + ": " + MemoryBreakdownRow(measured, planned);
    EXPECT_LE(without_free, 1.10) << row;
    EXPECT_GE(without_free, least) << row;
    if (worst_row.empty() || std::fabs(ratio - 1) > std::fabs(worst - 1)) {
      worst = ratio;
      worst_row = row;
    }
  }
  std::printf("memory %s: measured / planned peak, worst device %.3f\n  %s\n", c.name.c_str(),
              worst, worst_row.c_str());
}

INSTANTIATE_TEST_SUITE_P(Zoo, PlanEquivalenceTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace alpa

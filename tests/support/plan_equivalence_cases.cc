#include "support/plan_equivalence_cases.h"

#include <cmath>
#include <utility>

#include "exec/driver/plan_conformance.h"
#include "models/planner_model.h"

namespace alpa::testing {
namespace {

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
// Weights large against its activations: on 4 MiB devices only ZeRO-3 fits one stage of it.
const char* kGptZero3 =
    "gpt:layers=4,hidden=128,heads=4,seq=8,vocab=64,batch=8,dtype=f32,adam_eps=1e-5";
const char* kGpt4 = "gpt:layers=4,hidden=16,heads=4,seq=8,vocab=32,batch=8,dtype=f32,adam_eps=1e-5";
// Eight layers wide enough that the planner interleaves them over four one-device groups.
const char* kGpt8 =
    "gpt:layers=8,hidden=128,heads=4,seq=8,vocab=64,batch=8,dtype=f32,adam_eps=1e-5";
// Activations wide enough across two hosts that the receiving stage takes 1/k per replica and
// all-gathers the rest (a local all-gather, cross_mesh.h).
const char* kGptWide =
    "gpt:layers=2,hidden=64,heads=2,seq=16,vocab=64,batch=8,dtype=f32,adam_eps=1e-5";
const char* kBert =
    "bert:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5";
const char* kBert4 =
    "bert:layers=2,hidden=16,heads=4,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5";
const char* kMoe =
    "moe:layers=2,hidden=16,heads=2,experts=4,seq=8,vocab=16,batch=8,group=8,dtype=f32,adam_eps=1e-"
    "5";
// Grouped-query attention (2 kv heads for 4 query heads), rotary tables as inputs.
const char* kLlama =
    "llama:layers=2,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=16,batch=8,dtype=f32,"
    "adam_eps=1e-5";
// Four layers: two device groups of two stages each under interleaved 1F1B.
const char* kLlama4 =
    "llama:layers=4,hidden=16,heads=4,kv_heads=2,ffn=24,seq=8,vocab=16,batch=8,dtype=f32,"
    "adam_eps=1e-5";
const char* kBertL4 =
    "bert:layers=4,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5";
const char* kWres =
    "wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=8,optimizer=momentum";

std::string ClusterSpec(int64_t hosts, int64_t per_host) {
  return "p3.16xlarge:hosts=" + std::to_string(hosts) +
         ",devices_per_host=" + std::to_string(per_host);
}

// The case name's mark of a schedule other than 1F1B.
std::string ScheduleSuffix(PipelineScheduleKind schedule) {
  switch (schedule) {
    case PipelineScheduleKind::kGPipe:
      return "_gpipe";
    case PipelineScheduleKind::kZeroBubbleH1:
      return "_zbh1";
    case PipelineScheduleKind::kInterleavedOneFOneB:
      return "_interleaved";
    case PipelineScheduleKind::kOneFOneB:
      break;
  }
  return "";
}

EquivalenceCase Manual(const std::string& model, int64_t hosts, int64_t per_host, int64_t dp,
                       int64_t tp, int64_t pp, int64_t b, int32_t zero, Recompute remat,
                       PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB) {
  EquivalenceCase c;
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
           "pp" + std::to_string(pp) + "B" + std::to_string(b) +
           (zero == 3   ? "_zero3"
            : zero == 2 ? "_zero2"
            : zero      ? "_zero"
                        : "") +
           (remat == Recompute::kFull        ? "_remat"
            : remat == Recompute::kSelective ? "_selective"
                                             : "") +
           ScheduleSuffix(schedule);
  return c;
}

EquivalenceCase Planned(const std::string& model, int64_t hosts, int64_t per_host, int64_t b,
                        RematMode remat = RematMode::kSearch,
                        PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB) {
  EquivalenceCase c;
  c.model = model;
  c.cluster = ClusterSpec(hosts, per_host);
  c.planner = true;
  c.microbatches = b;
  c.remat = remat;
  c.schedule = schedule;
  c.name = model.substr(0, model.find(':')) + "_plan_" + std::to_string(hosts) + "x" +
           std::to_string(per_host) + "_B" + std::to_string(b) +
           (remat == RematMode::kOn          ? "_remat"
            : remat == RematMode::kOff       ? "_noremat"
            : remat == RematMode::kSelective ? "_selective"
                                             : "") +
           ScheduleSuffix(schedule);
  return c;
}

// Interleaved 1F1B (Megatron-LM's virtual pipeline stages): pp device groups, each running
// `virtual_stages` stages of the layers cut into pp x virtual_stages (manual_plan.h).
EquivalenceCase Interleaved(const std::string& model, int64_t per_host, int64_t dp, int64_t tp,
                            int64_t pp, int32_t virtual_stages, int64_t b, int32_t zero,
                            Recompute remat) {
  EquivalenceCase c = Manual(model, 1, per_host, dp, tp, pp, b, zero, remat,
                             PipelineScheduleKind::kInterleavedOneFOneB);
  c.manual.virtual_stages = virtual_stages;
  c.name += "_vp" + std::to_string(virtual_stages);
  return c;
}

}  // namespace

std::vector<EquivalenceCase> EquivalenceCases() {
  using K = PipelineScheduleKind;
  constexpr Recompute kNo = Recompute::kNone, kFull = Recompute::kFull,
                      kSel = Recompute::kSelective;
  std::vector<EquivalenceCase> cases;
  // Every family on the meshes 1x2, 2x1, 2x2, 1x4, 2x4 and pipelines of 1 to 4 stages.
  for (const char* model : {kMlp, kGpt, kBert, kMoe}) {
    cases.push_back(Manual(model, 1, 2, 1, 2, 1, 1, 0, kNo));               // mesh 1x2
    cases.push_back(Manual(model, 1, 2, 2, 1, 1, 2, 0, kNo));               // mesh 2x1
    cases.push_back(Manual(model, 1, 4, 2, 2, 1, 2, 1, kNo));               // 2x2, ZeRO
    cases.push_back(Manual(model, 1, 4, 1, 4, 1, 1, 0, kFull));             // 1x4, remat
    cases.push_back(Manual(model, 1, 8, 2, 4, 1, 1, 1, kNo));               // 2x4, ZeRO
    cases.push_back(Manual(model, 1, 4, 1, 2, 2, 2, 0, kNo));               // 2 stages
    cases.push_back(Manual(model, 1, 4, 1, 2, 2, 4, 0, kFull, K::kGPipe));  // GPipe, remat
    cases.push_back(Manual(model, 2, 4, 2, 2, 2, 4, 1, kNo));               // 2 hosts
    cases.push_back(Planned(model, 1, 2, 2));
    cases.push_back(Planned(model, 1, 4, 2, RematMode::kOn));
    cases.push_back(Planned(model, 1, 8, 4, RematMode::kOff, K::kGPipe));
  }
  // Pipelines of 3 and 4 stages (4 layers).
  cases.push_back(Manual(kMlp, 1, 4, 1, 1, 4, 4, 0, kNo));
  cases.push_back(Manual(kMlp, 1, 4, 1, 1, 4, 4, 0, kFull, K::kGPipe));
  cases.push_back(Manual(kGpt4, 1, 4, 1, 1, 4, 4, 0, kNo));
  cases.push_back(Manual(kGpt4, 1, 8, 2, 1, 4, 4, 1, kFull));
  cases.push_back(Manual(kGpt4, 1, 8, 1, 2, 4, 2, 0, kNo, K::kGPipe));
  cases.push_back(Manual(kMlpCe, 1, 2, 1, 1, 2, 4, 0, kNo));
  cases.push_back(Manual(kMlpCe, 1, 4, 2, 2, 1, 1, 1, kFull));
  cases.push_back(Planned(kMlpCe, 1, 4, 4));
  cases.push_back(Planned(kGpt4, 1, 4, 4));
  cases.push_back(Manual(kLlama, 1, 2, 1, 2, 1, 1, 0, kNo));               // mesh 1x2
  cases.push_back(Manual(kLlama, 1, 4, 2, 2, 1, 2, 1, kNo));               // 2x2, ZeRO
  cases.push_back(Manual(kLlama, 1, 4, 1, 4, 1, 1, 0, kFull));             // 1x4: 4 > kv_heads
  cases.push_back(Manual(kLlama, 1, 4, 1, 2, 2, 4, 0, kFull, K::kGPipe));  // 2 stages
  cases.push_back(Manual(kLlama, 2, 4, 2, 2, 2, 4, 1, kNo));               // 2 hosts
  cases.push_back(Planned(kLlama, 1, 4, 2));
  // ZeRO-2: gradients reduce-scattered per microbatch into shard accumulators.
  cases.push_back(Manual(kGpt, 1, 4, 2, 2, 1, 2, 2, kNo));             // 2x2
  cases.push_back(Manual(kMlp, 1, 4, 4, 1, 1, 4, 2, kNo));             // 4x1
  cases.push_back(Manual(kMoe, 1, 8, 2, 2, 2, 4, 2, kNo));             // 2 stages
  cases.push_back(Manual(kGpt4, 1, 8, 2, 1, 4, 4, 2, kFull));          // 4 stages, remat
  cases.push_back(Manual(kLlama, 2, 4, 2, 2, 2, 4, 2, kNo));           // 2 hosts
  cases.push_back(Manual(kMlp, 1, 4, 2, 1, 2, 4, 2, kNo, K::kGPipe));  // GPipe
  // Batch normalisation normalises over the microbatch, which the whole-batch step does not
  // do: the convolutional network runs with one microbatch.
  cases.push_back(Manual(kWres, 1, 2, 2, 1, 1, 1, 0, kNo));
  cases.push_back(Manual(kWres, 1, 2, 1, 2, 1, 1, 0, kNo));
  cases.push_back(Manual(kWres, 1, 4, 2, 2, 1, 1, 1, kFull));
  cases.push_back(Manual(kWres, 1, 4, 2, 1, 2, 1, 0, kNo));
  cases.push_back(Manual(kWres, 1, 8, 2, 2, 2, 1, 1, kNo, K::kGPipe));
  cases.push_back(Planned(kWres, 1, 4, 1));
  cases.push_back(Planned(kWres, 1, 8, 1, RematMode::kOn));
  // Selective recomputation: the attention cores rerun before the backward (models whose
  // sequence is longer than a head, so that the scores are the larger values and have cores).
  cases.push_back(Manual(kGpt4, 1, 2, 1, 2, 1, 2, 0, kSel));              // 1x2, B = 2
  cases.push_back(Manual(kBert4, 1, 4, 2, 2, 1, 2, 1, kSel));             // 2x2, ZeRO
  cases.push_back(Manual(kGpt4, 1, 8, 2, 1, 4, 4, 1, kSel));              // 4 stages
  cases.push_back(Manual(kLlama, 1, 4, 1, 2, 2, 4, 0, kSel, K::kGPipe));  // 2 stages, GQA
  cases.push_back(Planned(kGpt4, 1, 4, 2, RematMode::kSelective));
  // Local all-gathers into the second host's dp 2 x tp 2 stage (forward) and back (backward).
  cases.push_back(Manual(kGptWide, 2, 4, 2, 2, 2, 2, 0, kNo));
  cases.push_back(Manual(kGptWide, 2, 4, 2, 2, 2, 2, 1, kNo, K::kGPipe));
  cases.push_back(Manual(kGptWide, 2, 4, 2, 2, 2, 2, 0, kFull));
  // ZeRO-3: the weights sharded over the data-parallel devices, gathered where they are read.
  cases.push_back(Manual(kGpt4, 1, 4, 2, 2, 1, 2, 3, kNo));  // 2x2
  cases.push_back(Manual(kMlp, 1, 4, 2, 1, 2, 4, 3, kNo));   // 2 stages
  // ZB-H1: each backward split into the input-gradient task and the weight-gradient task run
  // later (weight_gradient_ops.h); 1F1B on the same plans is listed above or here.
  cases.push_back(Manual(kMlpCe, 1, 2, 1, 1, 2, 4, 0, kNo, K::kZeroBubbleH1));  // 2 stages
  cases.push_back(Manual(kMlp, 1, 4, 1, 1, 4, 4, 0, kNo, K::kZeroBubbleH1));    // 4 stages
  cases.push_back(Manual(kMlp, 1, 4, 1, 1, 4, 2, 0, kNo, K::kZeroBubbleH1));    // B < stages
  cases.push_back(Manual(kMlpCe, 1, 2, 1, 1, 2, 1, 0, kNo, K::kZeroBubbleH1));  // B = 1
  cases.push_back(Manual(kGpt4, 1, 4, 1, 1, 4, 4, 0, kNo, K::kZeroBubbleH1));
  // Stages of several pieces (embedding, blocks, head), tensor parallel.
  cases.push_back(Manual(kGpt4, 1, 4, 1, 2, 2, 4, 0, kNo));
  cases.push_back(Manual(kGpt4, 1, 4, 1, 2, 2, 4, 0, kNo, K::kZeroBubbleH1));
  cases.push_back(Manual(kGpt4, 1, 8, 2, 1, 4, 4, 1, kSel, K::kZeroBubbleH1));   // selective
  cases.push_back(Manual(kGpt4, 1, 8, 2, 1, 4, 4, 2, kFull, K::kZeroBubbleH1));  // ZeRO-2, remat
  cases.push_back(Manual(kLlama, 1, 4, 1, 2, 2, 4, 0, kFull, K::kZeroBubbleH1));
  cases.push_back(Manual(kMlp, 1, 4, 2, 1, 2, 4, 3, kNo, K::kZeroBubbleH1));  // ZeRO-3
  cases.push_back(Planned(kGpt4, 1, 4, 4, RematMode::kSearch, K::kZeroBubbleH1));
  // The planner's ZeRO-3: one data-parallel stage on 4 MiB devices gathers its weights.
  EquivalenceCase zero3 = Planned(kGptZero3, 1, 4, 2);
  zero3.device_memory_bytes = int64_t{4} << 20;
  zero3.pipeline_stages = 1;
  zero3.max_tensor_parallel = 1;
  zero3.name += "_zero3";
  cases.push_back(zero3);
  // Interleaved 1F1B: 4 stages on 2 device groups (stage s on group s % 2), each device's
  // program running the tasks of its two stages in its group's order.
  cases.push_back(Interleaved(kGpt4, 2, 1, 1, 2, 2, 2, 0, kNo));      // B = groups: no steady state
  cases.push_back(Interleaved(kGpt4, 4, 1, 2, 2, 2, 4, 0, kNo));      // tensor parallel
  cases.push_back(Interleaved(kGpt4, 4, 2, 1, 2, 2, 4, 1, kNo));      // data parallel, ZeRO
  cases.push_back(Interleaved(kBertL4, 2, 1, 1, 2, 2, 4, 0, kFull));  // remat
  cases.push_back(Interleaved(kLlama4, 4, 1, 2, 2, 2, 2, 0, kSel));   // GQA, selective
  // The planner's interleaving (search_interleaving): 4 device groups of one device.
  EquivalenceCase interleaved = Planned(kGpt8, 1, 4, 4, RematMode::kOff, K::kInterleavedOneFOneB);
  interleaved.pipeline_stages = 4;
  cases.push_back(interleaved);
  return cases;
}

Result<PlannedCase> PlanEquivalenceCase(const EquivalenceCase& c) {
  Result<PlannerModel> model = PlannerModelFromSpec(c.model);
  if (!model.ok()) return model.status();
  Result<Cluster> cluster = ParseClusterSpec(c.cluster);
  if (!cluster.ok()) return cluster.status();
  PlannerOptions options;
  options.threads = 2;
  Result<PipelinePlan> plan = Status::Ok();
  if (c.planner) {
    options.microbatches = c.microbatches;
    options.remat = c.remat;
    if (c.device_memory_bytes > 0) options.device_memory_bytes = c.device_memory_bytes;
    options.pipeline_stages = c.pipeline_stages;
    options.max_tensor_parallel = c.max_tensor_parallel;
    options.search_interleaving = c.schedule == PipelineScheduleKind::kInterleavedOneFOneB;
    plan = PlanPipeline(model.value(), cluster.value(), options);
    if (plan.ok() && plan.value().schedule != c.schedule &&
        c.schedule == PipelineScheduleKind::kInterleavedOneFOneB) {
      return Status(StatusCode::kInternal, c.name + ": the planner did not interleave the plan");
    }
  } else {
    plan = EvaluateManualPlan(model.value(), cluster.value(), c.manual, options);
  }
  if (!plan.ok()) return plan.status();
  Result<Graph> whole = model.value().build(1);
  if (!whole.ok()) return whole.status();
  return PlannedCase{std::move(plan).value(), std::move(cluster).value(), std::move(whole).value()};
}

PlanRunOptions EquivalenceRunOptions(const EquivalenceCase& c) {
  PlanRunOptions options;
  options.steps = 3;
  options.check = true;
  options.lower.schedule = c.schedule;
  return options;
}

Status CheckEquivalenceRun(const PipelinePlan& plan, const PlanRunReport& run) {
  for (const StepSummary& s : run.steps) {
    if (s.passed) continue;
    return InternalError(
        "step " + std::to_string(s.step) + ": loss " + std::to_string(s.loss) + " vs " +
        std::to_string(s.reference_loss) + " (" + std::to_string(s.loss_error) +
        " of the tolerance), " + s.worst_parameter + " off by " +
        std::to_string(s.parameter_error) + " of the tolerance" +
        (s.replicas_agree ? "" : "; copies of " + s.diverged_parameter + " disagree"));
  }
  return CheckExecutedAgainstPlan(plan, run);
}

double WorstMemoryRatio(const PlanRunReport& run) {
  double worst = 1;
  if (run.steps.empty()) return worst;
  const StepSummary& last = run.steps.back();
  for (size_t d = 0; d < last.peak_bytes.size() && d < last.planned_bytes.size(); ++d) {
    if (last.peak_bytes[d] < 0 || last.planned_bytes[d] <= 0) continue;
    const double ratio =
        static_cast<double>(last.peak_bytes[d]) / static_cast<double>(last.planned_bytes[d]);
    if (std::fabs(ratio - 1) > std::fabs(worst - 1)) worst = ratio;
  }
  return worst;
}

}  // namespace alpa::testing

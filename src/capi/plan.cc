// The pipeline planner through the C ABI: alpa_plan_options, alpa_model_plan / alpa_graph_plan
// and the plan's getters (count-then-fill, versioned structs, JSON).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "capi/handles.h"
#include "capi/options.h"
#include "core/cluster/sharding_spec.h"
#include "models/planner_model.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "solvers/planner/plan_json.h"

static_assert(ALPA_REMAT_SEARCH == static_cast<int32_t>(alpa::RematMode::kSearch));
static_assert(ALPA_REMAT_OFF == static_cast<int32_t>(alpa::RematMode::kOff));
static_assert(ALPA_REMAT_ON == static_cast<int32_t>(alpa::RematMode::kOn));
static_assert(ALPA_REMAT_SELECTIVE == static_cast<int32_t>(alpa::RematMode::kSelective));
// alpa_stage_info.remat and alpa_manual_plan.remat: 0 none, 1 full, 2 selective.
static_assert(static_cast<int32_t>(alpa::Recompute::kNone) == 0);
static_assert(static_cast<int32_t>(alpa::Recompute::kFull) == 1);
static_assert(static_cast<int32_t>(alpa::Recompute::kSelective) == 2);
static_assert(static_cast<int32_t>(alpa::PipelineTaskKind::kForward) == 0);
static_assert(static_cast<int32_t>(alpa::PipelineTaskKind::kBackward) == 1);
static_assert(static_cast<int32_t>(alpa::PipelineTaskKind::kWeightGradient) == 2);
static_assert(static_cast<int32_t>(alpa::PipelineScheduleKind::kOneFOneB) == ALPA_SCHEDULE_1F1B);
static_assert(static_cast<int32_t>(alpa::PipelineScheduleKind::kZeroBubbleH1) ==
              ALPA_SCHEDULE_ZB_H1);
static_assert(static_cast<int32_t>(alpa::PipelineScheduleKind::kInterleavedOneFOneB) ==
              ALPA_SCHEDULE_INTERLEAVED_1F1B);

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

// The C++ struct an alpa_plan_options sets.
alpa::capi::OptionFields FieldsOf(alpa_plan_options* o) {
  alpa::capi::OptionFields fields;
  fields.plan = &o->options;
  fields.graph_batch_dim = &o->graph_batch_dim;
  return fields;
}

int32_t RunPlanner(alpa_plan** out, const alpa::PlannerModel& model, const alpa_cluster* cluster,
                   const alpa_plan_options* options, std::string model_name, alpa_error** err) {
  alpa::Result<alpa::PipelinePlan> planned =
      alpa::PlanPipeline(model, cluster->cluster, alpa::capi::ToPlannerOptions(options));
  if (!planned.ok()) return Fail(err, planned.status());
  *out = alpa::capi::MakePlan(std::move(planned).value(), cluster->cluster, std::move(model_name))
             .release();
  return ALPA_OK;
}

const alpa::PlannedStage* StageOf(const alpa_plan* plan, int32_t stage) {
  if (plan == nullptr || stage < 0 || static_cast<size_t>(stage) >= plan->plan.stages.size()) {
    return nullptr;
  }
  return &plan->plan.stages[static_cast<size_t>(stage)];
}

uint32_t MeshDimBits(const std::vector<int32_t>& dims) {
  uint32_t bits = 0;
  for (int32_t d : dims) {
    if (d >= 0 && d < 32) bits |= uint32_t{1} << d;
  }
  return bits;
}

// A piece's collective with its op ids mapped to the planned graph (as src/capi/shard.cc's
// ToCollective, plus the mapping through Subgraph::origin).
alpa_collective ToCollective(const alpa::PlannedCollective& c, const alpa::Subgraph& sub) {
  auto origin = [&sub](int32_t local) {
    return local >= 0 && static_cast<size_t>(local) < sub.origin.size()
               ? sub.origin[static_cast<size_t>(local)]
               : -1;
  };
  alpa_collective out;
  std::memset(&out, 0, sizeof(out));
  out.struct_size = sizeof(alpa_collective);
  out.version = 1;
  out.kind = static_cast<int32_t>(c.kind);
  out.mesh_dims = MeshDimBits(c.mesh_dims);
  out.flags = (c.inside_op ? ALPA_COLLECTIVE_FLAG_INSIDE_OP : 0u) |
              (c.gradient_sync ? ALPA_COLLECTIVE_FLAG_GRADIENT_SYNC : 0u);
  out.bytes = c.bytes;
  out.cost = c.cost;
  out.tensor = origin(c.tensor);
  out.consumer = origin(c.consumer);
  out.operand = c.operand;
  return out;
}

// The ends of the version-1 structs: the smallest elements a caller may pass.
constexpr size_t kCollectiveV1Size = offsetof(alpa_collective, reserved) + sizeof(int32_t);
constexpr size_t kStageV1Size = offsetof(alpa_stage_info, in_flight) + sizeof(int64_t);
constexpr size_t kTransferV1Size = offsetof(alpa_transfer, seconds) + sizeof(double);
constexpr size_t kSliceMoveV1Size = offsetof(alpa_slice_move, bytes) + sizeof(int64_t);

}  // namespace

namespace alpa::capi {

alpa::PlannerOptions ToPlannerOptions(const alpa_plan_options* options) {
  if (options == nullptr) return alpa::PlannerOptions();
  alpa::PlannerOptions out = options->options;
  if (options->cancel != nullptr) out.cancel = &options->cancel->triggered;
  if (options->progress != nullptr) {
    alpa_plan_progress_fn fn = options->progress;
    void* user = options->progress_user_data;
    out.on_progress = [fn, user](const alpa::PlannerProgress& p) {
      alpa_plan_progress info;
      std::memset(&info, 0, sizeof(info));
      info.struct_size = sizeof(alpa_plan_progress);
      info.version = 2;
      info.seconds = p.seconds;
      info.phase = p.phase != nullptr ? p.phase : "";
      info.microbatches = p.microbatches;
      info.done = p.done;
      info.total = p.total;
      info.time_limit_seconds = p.time_limit_seconds;
      info.estimated_solves = p.estimate.solves;
      info.solves_per_count = p.estimate.solves_per_count;
      info.max_solves_per_count = p.estimate.max_solves_per_count;
      info.piece_types = p.estimate.piece_types;
      info.logical_meshes = p.estimate.logical_meshes;
      info.microbatch_counts = p.estimate.microbatch_counts;
      info.stage_candidates = p.estimate.stage_candidates;
      return fn(user, &info) == 0;
    };
  }
  return out;
}

int32_t PlannerModelOf(const char* spec, alpa::PlannerModel* out, alpa_error** err) {
  const std::string text = spec;
  alpa::Result<alpa::PlannerModel> model = alpa::PlannerModelFromSpec(text);
  if (!model.ok()) {
    // Name the spec (once), as alpa_model_build_graph does.
    const std::string& m = model.status().message();
    return Fail(err, ToCode(model.status().code()),
                m.find(text) != std::string::npos ? m : "model \"" + text + "\": " + m);
  }
  *out = std::move(model).value();
  return ALPA_OK;
}

int32_t PlannerModelOfGraph(const alpa_graph* graph, const alpa_plan_options* options,
                            alpa::PlannerModel* out, alpa_error** err) {
  if (graph == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "graph is NULL");
  if (!graph->finalized) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "graph is not finalized: call alpa_graph_finalize first");
  }
  auto copy = std::make_shared<const alpa::Graph>(graph->graph);
  const int32_t batch_dim = options != nullptr ? options->graph_batch_dim : -1;
  if (batch_dim < 0) {
    *out = alpa::FixedPlannerModel(std::move(copy));
    return ALPA_OK;
  }
  alpa::Result<alpa::PlannerModel> model = alpa::PlannerModelFromGraph(std::move(copy), batch_dim);
  if (!model.ok()) {
    return Fail(err, ToCode(model.status().code()),
                model.status().message() +
                    " (graph_batch_dim -1 plans the graph as one microbatch, as it is)");
  }
  *out = std::move(model).value();
  return ALPA_OK;
}

alpa::Result<alpa::Graph> WholeBatchGraph(const alpa_plan& plan) {
  if (plan.model.empty()) {
    if (plan.plan.microbatches != 1) {
      return alpa::InvalidArgument(
          "the plan has " + std::to_string(plan.plan.microbatches) +
          " microbatches but no model spec to rebuild the whole batch from: plan the graph with "
          "one microbatch");
    }
    return plan.plan.graph;
  }
  alpa::Result<alpa::PlannerModel> model = alpa::PlannerModelFromSpec(plan.model);
  if (!model.ok()) return model.status();
  return model.value().build(1);
}

std::unique_ptr<alpa_plan> MakePlan(alpa::PipelinePlan plan, const alpa::Cluster& cluster,
                                    std::string model) {
  auto out = std::make_unique<alpa_plan>();
  out->plan = std::move(plan);
  out->cluster = cluster;
  out->model = std::move(model);
  out->sites = alpa::PlanOpSites(out->plan);
  return out;
}

}  // namespace alpa::capi

extern "C" {

ALPA_API int32_t alpa_plan_options_create(alpa_plan_options** out, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = new alpa_plan_options();
    return ALPA_OK;
  });
}

ALPA_API void alpa_plan_options_destroy(alpa_plan_options* options) { delete options; }

ALPA_API int32_t alpa_plan_options_set_int(alpa_plan_options* options, int32_t key, int64_t value,
                                           alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    return alpa::capi::SetOptionInt(alpa::capi::OptionHolder::kPlanOptions, FieldsOf(options), key,
                                    value, err);
  });
}

ALPA_API int32_t alpa_plan_options_set_double(alpa_plan_options* options, int32_t key, double value,
                                              alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    return alpa::capi::SetOptionDouble(alpa::capi::OptionHolder::kPlanOptions, FieldsOf(options),
                                       key, value, err);
  });
}

ALPA_API int32_t alpa_plan_options_set_by_name(alpa_plan_options* options, const char* name,
                                               const char* value, alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr || name == nullptr || value == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options, name and value must not be NULL");
    }
    return alpa::capi::SetOptionByName(alpa::capi::OptionHolder::kPlanOptions, FieldsOf(options),
                                       name, value, err);
  });
}

ALPA_API int32_t alpa_plan_options_set_cancel_token(alpa_plan_options* options,
                                                    alpa_cancel_token* token, alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    options->cancel = token;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_plan_options_set_progress(alpa_plan_options* options,
                                                alpa_plan_progress_fn fn, void* user_data,
                                                alpa_error** err) {
  return Guard(err, [&] {
    if (options == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "options is NULL");
    options->progress = fn;
    options->progress_user_data = user_data;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_model_plan(alpa_plan** out, const char* model_spec,
                                 const alpa_cluster* cluster, const alpa_plan_options* options,
                                 alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (model_spec == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "model_spec is NULL");
    if (cluster == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "cluster is NULL");
    alpa::PlannerModel model;
    if (int32_t rc = alpa::capi::PlannerModelOf(model_spec, &model, err)) return rc;
    return RunPlanner(out, model, cluster, options, model_spec, err);
  });
}

ALPA_API int32_t alpa_graph_plan(alpa_plan** out, const alpa_graph* graph,
                                 const alpa_cluster* cluster, const alpa_plan_options* options,
                                 alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    alpa::PlannerModel model;
    if (int32_t rc = alpa::capi::PlannerModelOfGraph(graph, options, &model, err)) return rc;
    if (cluster == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "cluster is NULL");
    return RunPlanner(out, model, cluster, options, "", err);
  });
}

ALPA_API void alpa_plan_destroy(alpa_plan* plan) { delete plan; }

ALPA_API double alpa_plan_iteration_seconds(const alpa_plan* plan) {
  return plan == nullptr ? std::numeric_limits<double>::quiet_NaN() : plan->plan.iteration_seconds;
}

ALPA_API double alpa_plan_period_seconds(const alpa_plan* plan) {
  return plan == nullptr ? std::numeric_limits<double>::quiet_NaN() : plan->plan.period_seconds;
}

ALPA_API double alpa_plan_schedule_seconds(const alpa_plan* plan) {
  return plan == nullptr ? std::numeric_limits<double>::quiet_NaN() : plan->plan.schedule_seconds;
}

ALPA_API double alpa_plan_compile_seconds(const alpa_plan* plan) {
  return plan == nullptr ? std::numeric_limits<double>::quiet_NaN()
                         : plan->plan.stats.total_seconds;
}

ALPA_API int64_t alpa_plan_microbatches(const alpa_plan* plan) {
  return plan == nullptr ? 0 : plan->plan.microbatches;
}

ALPA_API int32_t alpa_plan_pipeline_schedule(const alpa_plan* plan) {
  return plan == nullptr ? -1 : static_cast<int32_t>(plan->plan.schedule);
}

ALPA_API int32_t alpa_plan_virtual_stages(const alpa_plan* plan) {
  return plan == nullptr ? 0 : plan->plan.virtual_stages;
}

ALPA_API int64_t alpa_plan_peak_memory_bytes(const alpa_plan* plan) {
  return plan == nullptr ? 0 : plan->plan.peak_memory_bytes;
}

ALPA_API double alpa_plan_tflops_per_device(const alpa_plan* plan) {
  return plan == nullptr ? std::numeric_limits<double>::quiet_NaN() : plan->plan.tflops_per_device;
}

ALPA_API int32_t alpa_plan_stage_count(const alpa_plan* plan) {
  return plan == nullptr ? 0 : static_cast<int32_t>(plan->plan.stages.size());
}

ALPA_API int32_t alpa_plan_copy_graph(alpa_graph** out, const alpa_plan* plan, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    auto graph = std::make_unique<alpa_graph>();
    graph->graph = plan->plan.graph;
    graph->finalized = true;
    *out = graph.release();
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_plan_stage(alpa_stage_info* out, size_t element_size, const alpa_plan* plan,
                                 int32_t stage, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    if (element_size < kStageV1Size) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "element_size " + std::to_string(element_size) +
                      " is smaller than version 1 of alpa_stage_info (" +
                      std::to_string(kStageV1Size) + " bytes)");
    }
    const alpa::PlannedStage* st = StageOf(plan, stage);
    if (st == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "stage " + std::to_string(stage) + " is out of range (the plan has " +
                      std::to_string(plan->plan.stages.size()) + " stages)");
    }
    alpa_stage_info info;
    std::memset(&info, 0, sizeof(info));
    info.version = 1;
    info.first_layer = st->first_layer;
    info.last_layer = st->last_layer;
    info.submesh_hosts = st->submesh.hosts;
    info.submesh_devices_per_host = st->submesh.devices_per_host;
    const size_t ndim = std::min<size_t>(2, st->logical_mesh.size());
    info.logical_ndim = static_cast<int32_t>(ndim);
    info.logical_mesh[0] = info.logical_mesh[1] = 1;
    for (size_t d = 0; d < ndim; ++d) info.logical_mesh[d] = st->logical_mesh[d];
    info.devices = st->submesh.hosts * st->submesh.devices_per_host;
    info.data_parallel = st->data_parallel;
    info.tensor_parallel = st->tensor_parallel;
    info.zero = st->shard_parameters ? 3 : st->shard_gradients ? 2 : st->zero ? 1 : 0;
    info.remat = static_cast<int32_t>(st->remat);
    info.latency_seconds = st->latency;
    info.iteration_overhead_seconds = st->iteration_overhead;
    info.memory_bytes = st->memory_bytes;
    info.in_flight = st->in_flight;
    alpa::capi::WriteElement(out, element_size, 0, info);
    return ALPA_OK;
  });
}

ALPA_API int64_t alpa_plan_stage_devices(const alpa_plan* plan, int32_t stage, int64_t* out,
                                         int64_t capacity) {
  const alpa::PlannedStage* st = StageOf(plan, stage);
  if (st == nullptr) return alpa::capi::kFillMisuse;
  return alpa::capi::FillArray(out, capacity, static_cast<int64_t>(st->devices.size()),
                               [st](int64_t i) { return st->devices[static_cast<size_t>(i)]; });
}

ALPA_API int64_t alpa_plan_op_stages(const alpa_plan* plan, int32_t* out, int64_t capacity) {
  if (plan == nullptr) return alpa::capi::kFillMisuse;
  return alpa::capi::FillArray(
      out, capacity, static_cast<int64_t>(plan->sites.size()),
      [plan](int64_t i) { return plan->sites[static_cast<size_t>(i)].stage; });
}

ALPA_API int32_t alpa_plan_op_spec(alpa_buffer** out, const alpa_plan* plan, int32_t op,
                                   alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    if (op < 0 || static_cast<size_t>(op) >= plan->sites.size()) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "op " + std::to_string(op) + " is out of range (the planned graph has " +
                      std::to_string(plan->sites.size()) + " ops)");
    }
    std::string text;
    const alpa::PlanOpSite& site = plan->sites[static_cast<size_t>(op)];
    if (const alpa::PlannedStage* st = StageOf(plan, site.stage)) {
      const alpa::OpSharding& s = st->pieces[static_cast<size_t>(site.piece)]
                                      .sharding->ops[static_cast<size_t>(site.local)];
      if (!s.free && !s.fused) {
        text = alpa::ToString(s.result) + "  (strategy: " + s.strategy_name + ")";
      }
    }
    alpa_buffer* buffer = alpa::capi::MakeBuffer(std::move(text));
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = buffer;
    return ALPA_OK;
  });
}

ALPA_API int64_t alpa_plan_stage_collectives(const alpa_plan* plan, int32_t stage,
                                             alpa_collective* out, int64_t capacity,
                                             size_t element_size) {
  const alpa::PlannedStage* st = StageOf(plan, stage);
  if (st == nullptr) return alpa::capi::kFillMisuse;
  int64_t n = 0;
  for (const alpa::StagePiece& piece : st->pieces) {
    n += static_cast<int64_t>(piece.sharding->collectives.size());
  }
  if (alpa::capi::BadFillTarget(out, capacity)) return alpa::capi::kFillMisuse;
  if (capacity == 0) return n;
  if (element_size < kCollectiveV1Size) return alpa::capi::kFillMisuse;
  int64_t i = 0;
  for (const alpa::StagePiece& piece : st->pieces) {
    for (const alpa::PlannedCollective& c : piece.sharding->collectives) {
      if (i >= capacity) return n;
      alpa::capi::WriteElement(out, element_size, i++, ToCollective(c, *piece.subgraph));
    }
  }
  return n;
}

ALPA_API int64_t alpa_plan_transfers(const alpa_plan* plan, alpa_transfer* out, int64_t capacity,
                                     size_t element_size) {
  if (plan == nullptr) return alpa::capi::kFillMisuse;
  const std::vector<alpa::CrossStageTransfer>& list = plan->plan.transfers;
  return alpa::capi::FillStructs<alpa_transfer>(
      out, capacity, element_size, kTransferV1Size, static_cast<int64_t>(list.size()),
      [&list](int64_t i) {
        const alpa::CrossStageTransfer& t = list[static_cast<size_t>(i)];
        alpa_transfer tr;
        std::memset(&tr, 0, sizeof(tr));
        tr.version = 1;
        tr.from_stage = t.from_stage;
        tr.to_stage = t.to_stage;
        tr.tensor = t.tensor;
        tr.bytes = t.bytes;
        tr.seconds = t.seconds;
        return tr;
      });
}

ALPA_API int64_t alpa_plan_transfer_moves(const alpa_plan* plan, int64_t transfer,
                                          alpa_slice_move* out, int64_t capacity,
                                          size_t element_size) {
  if (plan == nullptr || transfer < 0 ||
      transfer >= static_cast<int64_t>(plan->plan.transfers.size())) {
    return alpa::capi::kFillMisuse;
  }
  const alpa::CrossStageTransfer& t = plan->plan.transfers[static_cast<size_t>(transfer)];
  if (plan->plan.graph.op(t.tensor).shape.size() > ALPA_SLICE_MOVE_MAX_RANK) {
    return -ALPA_ERR_UNSUPPORTED;
  }
  return alpa::capi::FillStructs<alpa_slice_move>(
      out, capacity, element_size, kSliceMoveV1Size, static_cast<int64_t>(t.moves.size()),
      [&t](int64_t i) {
        const alpa::SliceMove& m = t.moves[static_cast<size_t>(i)];
        alpa_slice_move sm;
        std::memset(&sm, 0, sizeof(sm));
        sm.version = 1;
        sm.src_device = m.src_device;
        sm.dst_device = m.dst_device;
        sm.rank = static_cast<int32_t>(m.offsets.size());
        for (size_t d = 0; d < ALPA_SLICE_MOVE_MAX_RANK; ++d) {
          sm.offsets[d] = d < m.offsets.size() ? m.offsets[d] : 0;
          sm.sizes[d] = d < m.sizes.size() ? m.sizes[d] : 1;
        }
        sm.bytes = m.bytes;
        return sm;
      });
}

ALPA_API int64_t alpa_plan_stage_schedule(const alpa_plan* plan, int32_t stage, int32_t* out,
                                          int64_t capacity) {
  if (StageOf(plan, stage) == nullptr) return alpa::capi::kFillMisuse;
  if (alpa::capi::BadFillTarget(out, capacity)) return alpa::capi::kFillMisuse;
  try {
    const std::vector<alpa::PipelineTask> tasks =
        alpa::StageSchedule(plan->plan.schedule, static_cast<int32_t>(plan->plan.stages.size()),
                            stage, plan->plan.microbatches, plan->plan.virtual_stages);
    const int64_t n = 2 * static_cast<int64_t>(tasks.size());
    if (out != nullptr && capacity > 0) {
      const int64_t copy = std::min(capacity, n);
      for (int64_t i = 0; i < copy; ++i) {
        const alpa::PipelineTask& t = tasks[static_cast<size_t>(i / 2)];
        out[i] = i % 2 == 0 ? static_cast<int32_t>(t.kind) : static_cast<int32_t>(t.microbatch);
      }
    }
    return n;
  } catch (...) {
    return -ALPA_ERR_OUT_OF_MEMORY;  // the schedule could not be built
  }
}

ALPA_API int32_t alpa_plan_to_json(alpa_buffer** out, const alpa_plan* plan, int32_t detail,
                                   alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || plan == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and plan must not be NULL");
    }
    if (detail < alpa::kPlanJsonSummary || detail > alpa::kPlanJsonExecutable) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "detail must be 0, 1 or 2 (got " + std::to_string(detail) + ")");
    }
    alpa::Result<std::string> text = alpa::capi::PlanJson(*plan, detail);
    if (!text.ok()) return Fail(err, text.status());
    alpa_buffer* buffer = alpa::capi::MakeBuffer(text.value());
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = buffer;
    return ALPA_OK;
  });
}

}  // extern "C"

// A pipeline plan as the simulator's input, and the names a report of it uses
// (plan_simulation.h; the JSON halves are in plan_simulation_json.cc).
#include "exec/sim/plan_simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "core/cluster/nvlink_graph.h"

namespace alpa {

PipelineSimStage SimStageFromPlanned(std::vector<int64_t> devices, double latency,
                                     double forward_latency, double weight_gradient_latency,
                                     double iteration_overhead, int64_t memory_bytes,
                                     int64_t in_flight, int64_t activation_bytes) {
  PipelineSimStage s;
  s.devices = std::move(devices);
  s.forward_seconds = forward_latency;
  s.backward_seconds = latency - forward_latency;
  s.weight_gradient_seconds = weight_gradient_latency;
  // The planner charges gradient synchronisation and the update together, once.
  s.gradient_sync_seconds = iteration_overhead;
  s.update_seconds = 0;
  s.activation_bytes = activation_bytes;
  // Working memory folded in: the planner's peak holds it once, beside in_flight activations.
  s.persistent_bytes = memory_bytes - in_flight * activation_bytes;
  return s;
}

namespace {

// The links of a host of `one_type` (a cluster of one device type): its device link and its
// moves' pair bandwidths where it has an NVLink graph, its NIC group bandwidth, and its devices'
// NIC groups where it has several.
SimHostLinks HostLinksOf(const Cluster& one_type) {
  SimHostLinks links;
  links.intra_host = {one_type.intra_host_link.bandwidth, one_type.intra_host_link.latency};
  links.intra_host_pairs = MovePairBandwidths(one_type);
  links.inter_host = {NicGroupBandwidth(one_type), one_type.inter_host_link.latency};
  if (NicGroups(one_type) > 1) {
    for (int64_t d = 0; d < one_type.devices_per_host; ++d) {
      links.device_nic_group.push_back(static_cast<int32_t>(NicGroupOf(one_type, d)));
    }
  }
  return links;
}

}  // namespace

void SetSimCluster(const Cluster& cluster, PipelineSimInput& in) {
  in.hosts = static_cast<int32_t>(cluster.hosts);
  in.devices_per_host = static_cast<int32_t>(cluster.devices_per_host);
  SimHostLinks links = HostLinksOf(cluster);
  in.intra_host = links.intra_host;
  in.intra_host_pairs = std::move(links.intra_host_pairs);
  in.inter_host = links.inter_host;
  in.device_nic_group = std::move(links.device_nic_group);
  in.device_inter_host_bandwidth.clear();
  in.host_links.clear();
  // Each host's links are its pool's (pools have no NIC locality).
  for (int64_t h = 0; cluster.mixed() && h < cluster.hosts; ++h) {
    in.host_links.push_back(HostLinksOf(HostCluster(cluster, h)));
  }
  const double nic_bandwidth = in.inter_host.bandwidth;
  if (cluster.nic_locality.empty()) return;
  for (int64_t d = 0; d < cluster.devices_per_host; ++d) {
    // Device d of host 0 stands for device d of every host; a move pairs two ends, so the rate of
    // one end alone is its rate to a device near its NICs.
    in.device_inter_host_bandwidth.push_back(
        NearNic(cluster, d) ? nic_bandwidth
                            : std::min(nic_bandwidth, cluster.nic_locality.far_bandwidth));
  }
}

Status CheckPlanSchedule(int32_t virtual_stages, PipelineScheduleKind schedule) {
  const bool interleaved = schedule == PipelineScheduleKind::kInterleavedOneFOneB;
  if (virtual_stages > 1 && !interleaved) {
    return InvalidArgument("the plan runs " + std::to_string(virtual_stages) +
                           " stages per device group (" +
                           PipelineScheduleName(PipelineScheduleKind::kInterleavedOneFOneB) +
                           "); it cannot be simulated under " + PipelineScheduleName(schedule));
  }
  if (virtual_stages <= 1 && interleaved) {
    return InvalidArgument(std::string("the plan runs one stage per device group; it cannot be "
                                       "simulated under ") +
                           PipelineScheduleName(schedule) +
                           " (a plan made for it runs 2 or more, virtual_stages)");
  }
  return Status::Ok();
}

Result<PipelineSimInput> SimInputFromPlan(const PipelinePlan& plan, const Cluster& cluster,
                                          PipelineScheduleKind schedule) {
  ALPA_RETURN_IF_ERROR(CheckPlanSchedule(plan.virtual_stages, schedule));
  if (cluster.hosts < 1 || cluster.hosts > std::numeric_limits<int32_t>::max() ||
      cluster.devices_per_host < 1 ||
      cluster.devices_per_host > std::numeric_limits<int32_t>::max()) {
    return InvalidArgument("cluster: " + std::to_string(cluster.hosts) + " hosts x " +
                           std::to_string(cluster.devices_per_host) +
                           " devices per host is out of the simulator's range");
  }
  PipelineSimInput in;
  SetSimCluster(cluster, in);
  in.schedule = schedule;
  in.virtual_stages = plan.virtual_stages;
  in.microbatches = plan.microbatches;
  for (const PlannedStage& st : plan.stages) {
    in.stages.push_back(SimStageFromPlanned(st.devices, st.latency, st.forward_latency,
                                            st.weight_gradient_latency, st.iteration_overhead,
                                            st.memory_bytes, st.in_flight, st.activation_bytes));
  }
  for (const CrossStageTransfer& t : plan.transfers) {
    // Accumulated and sent once before the receiver's sync: the planner already charges it in
    // the receiver's iteration overhead.
    if (t.once_per_iteration) continue;
    PipelineSimTransfer tr;
    tr.from_stage = t.from_stage;
    tr.to_stage = t.to_stage;
    tr.bytes = t.bytes;
    tr.direction = t.to_stage > t.from_stage ? SimTransferDirection::kForward
                                             : SimTransferDirection::kBackward;
    tr.slices.reserve(t.moves.size());
    for (const SliceMove& m : t.moves) tr.slices.push_back({m.src_device, m.dst_device, m.bytes});
    tr.gather_seconds = t.gather_seconds;
    in.transfers.push_back(std::move(tr));
  }
  ALPA_RETURN_IF_ERROR(ValidatePipelineSimInput(in));
  return in;
}

PlanSimulationContext PlanSimulationContextOf(const PipelinePlan& plan, const Cluster& cluster,
                                              const std::string& model) {
  PlanSimulationContext c;
  c.model = model;
  c.cluster = cluster.name;
  c.planner_iteration_seconds = plan.iteration_seconds;
  c.device_memory_bytes = cluster.device.memory_bytes;
  for (const PlannedStage& st : plan.stages) {
    c.first_layer.push_back(st.first_layer);
    c.last_layer.push_back(st.last_layer);
    if (cluster.mixed())
      c.stage_device_memory_bytes.push_back(
          DevicesCluster(cluster, st.devices).device.memory_bytes);
  }
  return c;
}

namespace {

// "0-7", "0-3,8-11".
std::string DeviceRuns(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

std::string Seconds(double s) {
  char buf[48];
  if (s < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  } else if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  }
  return buf;
}

// "layers 0-3" / "layer 2" (the stage's layer groups when known), or "".
std::string LayersOf(const PlanSimulationContext& context, size_t stage) {
  if (stage >= context.first_layer.size() || stage >= context.last_layer.size()) return "";
  const int32_t a = context.first_layer[stage], b = context.last_layer[stage];
  return a == b ? "layer " + std::to_string(a)
                : "layers " + std::to_string(a) + "-" + std::to_string(b);
}

}  // namespace

std::vector<std::string> PlanStageLabels(const PipelineSimInput& input,
                                         const PlanSimulationContext& context) {
  std::vector<std::string> labels;
  const auto num_stages = static_cast<int32_t>(input.stages.size());
  const int32_t groups = PipelineGroups(num_stages, input.virtual_stages);
  if (input.virtual_stages > 1 && groups > 0) {
    // One row per device group (timeline_svg.h): its devices, then its stages and their layers.
    for (int32_t g = 0; g < groups; ++g) {
      std::string label = "group " + std::to_string(g) + ": devices " +
                          DeviceRuns(input.stages[static_cast<size_t>(g)].devices) + ", stages ";
      for (int32_t s = g; s < num_stages; s += groups) {
        if (s != g) label += ", ";
        label += std::to_string(s);
        const std::string layers = LayersOf(context, static_cast<size_t>(s));
        if (!layers.empty()) label += " (" + layers + ")";
      }
      labels.push_back(std::move(label));
    }
    return labels;
  }
  for (size_t s = 0; s < input.stages.size(); ++s) {
    std::string label =
        "stage " + std::to_string(s) + ": devices " + DeviceRuns(input.stages[s].devices);
    const std::string layers = LayersOf(context, s);
    if (!layers.empty()) label += ", " + layers;
    labels.push_back(std::move(label));
  }
  return labels;
}

double PlanPredictionError(const PipelineSimResult& result, const PlanSimulationContext& context) {
  const double planned = context.planner_iteration_seconds;
  if (!std::isfinite(planned) || planned <= 0) return std::numeric_limits<double>::quiet_NaN();
  return (result.iteration_seconds - planned) / planned;
}

std::string PlanTimelineTitle(const PipelineSimInput& input, const PipelineSimResult& result,
                              const PlanSimulationContext& context) {
  std::string title = context.model.empty() ? "plan" : context.model;
  title +=
      " on " + (context.cluster.empty() ? std::string("cluster") : context.cluster) + " (" +
      std::to_string(input.hosts) + " x " + std::to_string(input.devices_per_host) + "), " +
      ScheduleDisplayName(input.schedule) +
      (input.virtual_stages > 1 ? " (" + std::to_string(input.virtual_stages) + " stages per group)"
                                : std::string()) +
      ", " + std::to_string(input.microbatches) + " microbatch" +
      (input.microbatches == 1 ? "" : "es") + ": " + Seconds(result.iteration_seconds) +
      " simulated";
  const double error = PlanPredictionError(result, context);
  if (std::isfinite(error)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f %%", error * 100);
    title += ", " + Seconds(context.planner_iteration_seconds) + " planned (" + buf + ")";
  }
  return title;
}

}  // namespace alpa

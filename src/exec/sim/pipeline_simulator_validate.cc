// Input checks of the pipeline simulator (pipeline_simulator.h): every message names the
// element at fault, e.g. "stages[1].devices[0] = 3 is already used by stages[0]".
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/util/number_text.h"
#include "exec/sim/pipeline_simulator.h"

namespace alpa {
namespace {

Status CheckSeconds(const std::string& name, double v) {
  if (!std::isfinite(v) || v < 0) {
    return InvalidArgument(name + " must be finite and non-negative, got " + ExactDoubleText(v));
  }
  return Status::Ok();
}

Status CheckLink(const std::string& name, const SimLink& link) {
  if (!std::isfinite(link.bandwidth) || link.bandwidth <= 0) {
    return InvalidArgument(name + ".bandwidth must be finite and positive, got " +
                           ExactDoubleText(link.bandwidth));
  }
  return CheckSeconds(name + ".latency", link.latency);
}

Status CheckBytes(const std::string& name, int64_t v) {
  if (v < 0) return InvalidArgument(name + " is negative (" + std::to_string(v) + ")");
  return Status::Ok();
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t y : v) {
    if (y == x) return true;
  }
  return false;
}

// Stage s < groups owns its devices; under interleaving stage s >= groups runs on exactly those
// of stage s % groups.
Status CheckStageDevices(const PipelineSimInput& in, int64_t num_devices, int32_t groups) {
  std::map<int64_t, int32_t> owner;  // device -> stage (a map: hosts x devices may be huge)
  for (size_t s = 0; s < in.stages.size(); ++s) {
    const PipelineSimStage& st = in.stages[s];
    const std::string name = "stages[" + std::to_string(s) + "]";
    if (st.devices.empty()) return InvalidArgument(name + ".devices is empty");
    const size_t first = s % static_cast<size_t>(groups);
    if (s != first) {
      if (st.devices != in.stages[first].devices) {
        return InvalidArgument(
            name + ".devices must be those of stages[" + std::to_string(first) +
            "], the same devices in the same order (" + PipelineScheduleName(in.schedule) +
            " runs stage " + std::to_string(s) + " on device group " + std::to_string(first) + ")");
      }
      continue;
    }
    for (size_t k = 0; k < st.devices.size(); ++k) {
      const int64_t d = st.devices[k];
      const std::string dname = name + ".devices[" + std::to_string(k) + "] = " + std::to_string(d);
      if (d < 0 || d >= num_devices) {
        return InvalidArgument(dname + " is out of range (" + std::to_string(num_devices) +
                               " devices: hosts x devices_per_host)");
      }
      const auto [it, inserted] = owner.emplace(d, static_cast<int32_t>(s));
      if (!inserted && it->second == static_cast<int32_t>(s)) {
        return InvalidArgument(dname + " is listed twice");
      }
      if (!inserted) {
        return InvalidArgument(dname + " is already used by stages[" + std::to_string(it->second) +
                               "]");
      }
    }
  }
  return Status::Ok();
}

// A device group's peak memory, the sum over its stages of persistent + microbatches x
// activation at most, must fit in int64 (each stage's alone is checked with the stage).
Status CheckGroupMemory(const PipelineSimInput& in, int32_t groups) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (int32_t g = 0; g < groups; ++g) {
    int64_t sum = 0;
    for (size_t s = static_cast<size_t>(g); s < in.stages.size();
         s += static_cast<size_t>(groups)) {
      const PipelineSimStage& st = in.stages[s];
      const int64_t most = st.persistent_bytes + in.microbatches * st.activation_bytes;
      if (most > kMax - sum) {
        return InvalidArgument("device group " + std::to_string(g) +
                               ": the sum over its stages of persistent_bytes + microbatches * " +
                               "activation_bytes overflows int64");
      }
      sum += most;
    }
  }
  return Status::Ok();
}

Status CheckStages(const PipelineSimInput& in, int64_t num_devices, int32_t groups) {
  ALPA_RETURN_IF_ERROR(CheckStageDevices(in, num_devices, groups));
  for (size_t s = 0; s < in.stages.size(); ++s) {
    const PipelineSimStage& st = in.stages[s];
    const std::string name = "stages[" + std::to_string(s) + "]";
    ALPA_RETURN_IF_ERROR(CheckSeconds(name + ".forward_seconds", st.forward_seconds));
    ALPA_RETURN_IF_ERROR(CheckSeconds(name + ".backward_seconds", st.backward_seconds));
    ALPA_RETURN_IF_ERROR(
        CheckSeconds(name + ".weight_gradient_seconds", st.weight_gradient_seconds));
    if (st.weight_gradient_seconds > st.backward_seconds) {
      return InvalidArgument(name + ".weight_gradient_seconds " +
                             ExactDoubleText(st.weight_gradient_seconds) +
                             " exceeds backward_seconds " + ExactDoubleText(st.backward_seconds) +
                             " (it is a part of the backward)");
    }
    ALPA_RETURN_IF_ERROR(CheckSeconds(name + ".gradient_sync_seconds", st.gradient_sync_seconds));
    ALPA_RETURN_IF_ERROR(CheckSeconds(name + ".update_seconds", st.update_seconds));
    ALPA_RETURN_IF_ERROR(CheckBytes(name + ".activation_bytes", st.activation_bytes));
    ALPA_RETURN_IF_ERROR(CheckBytes(name + ".persistent_bytes", st.persistent_bytes));
    // Peak memory persistent + B * activation must fit in int64.
    if (st.activation_bytes > 0 &&
        in.microbatches >
            (std::numeric_limits<int64_t>::max() - st.persistent_bytes) / st.activation_bytes) {
      return InvalidArgument(name + ": persistent_bytes + microbatches * activation_bytes " +
                             "overflows int64");
    }
  }
  return CheckGroupMemory(in, groups);
}

Status CheckTransfers(const PipelineSimInput& in) {
  const int64_t num_stages = static_cast<int64_t>(in.stages.size());
  for (size_t t = 0; t < in.transfers.size(); ++t) {
    const PipelineSimTransfer& tr = in.transfers[t];
    const std::string name = "transfers[" + std::to_string(t) + "]";
    const auto bad_stage = [&](const char* field, int32_t v) {
      return InvalidArgument(name + "." + field + " = " + std::to_string(v) +
                             " is not a stage index (" + std::to_string(num_stages) + " stages)");
    };
    if (tr.from_stage < 0 || tr.from_stage >= num_stages)
      return bad_stage("from_stage", tr.from_stage);
    if (tr.to_stage < 0 || tr.to_stage >= num_stages) return bad_stage("to_stage", tr.to_stage);
    if (tr.direction != SimTransferDirection::kForward &&
        tr.direction != SimTransferDirection::kBackward) {
      return InvalidArgument(name + ".direction " +
                             std::to_string(static_cast<int32_t>(tr.direction)) +
                             " is neither forward (0) nor backward (1)");
    }
    if (tr.direction == SimTransferDirection::kForward && tr.from_stage >= tr.to_stage) {
      return InvalidArgument(name + " is forward but goes from stage " +
                             std::to_string(tr.from_stage) + " to stage " +
                             std::to_string(tr.to_stage) + " (must go to a later stage)");
    }
    if (tr.direction == SimTransferDirection::kBackward && tr.from_stage <= tr.to_stage) {
      return InvalidArgument(name + " is backward but goes from stage " +
                             std::to_string(tr.from_stage) + " to stage " +
                             std::to_string(tr.to_stage) + " (must go to an earlier stage)");
    }
    ALPA_RETURN_IF_ERROR(CheckBytes(name + ".bytes", tr.bytes));
    if (!(tr.gather_seconds >= 0) || !std::isfinite(tr.gather_seconds)) {
      return InvalidArgument(name + ".gather_seconds must be finite and >= 0");
    }
    if (tr.slices.empty()) continue;
    const PipelineSimStage& from = in.stages[static_cast<size_t>(tr.from_stage)];
    const PipelineSimStage& to = in.stages[static_cast<size_t>(tr.to_stage)];
    for (size_t k = 0; k < tr.slices.size(); ++k) {
      const SimSliceMove& mv = tr.slices[k];
      const std::string sname = name + ".slices[" + std::to_string(k) + "]";
      if (!Contains(from.devices, mv.src_device)) {
        return InvalidArgument(sname + ".src_device " + std::to_string(mv.src_device) +
                               " is not a device of stages[" + std::to_string(tr.from_stage) + "]");
      }
      if (!Contains(to.devices, mv.dst_device)) {
        return InvalidArgument(sname + ".dst_device " + std::to_string(mv.dst_device) +
                               " is not a device of stages[" + std::to_string(tr.to_stage) + "]");
      }
      ALPA_RETURN_IF_ERROR(CheckBytes(sname + ".bytes", mv.bytes));
    }
  }
  return Status::Ok();
}

std::string EntryText(double value) { return ExactDoubleText(value); }
std::string EntryText(int32_t value) { return std::to_string(value); }

// A per-device vector of the input (one entry per local device index, or empty): its size, then
// every entry by `valid`, whose failure reads "<name>[d] must be <requirement>, got <value>".
template <typename T, typename Valid>
Status CheckPerDevice(const std::vector<T>& per_device, const char* name, int32_t devices_per_host,
                      Valid valid, const std::string& requirement) {
  if (per_device.empty()) return Status::Ok();
  if (per_device.size() != static_cast<size_t>(devices_per_host)) {
    return InvalidArgument(std::string(name) + " has " + std::to_string(per_device.size()) +
                           " entries for " + std::to_string(devices_per_host) +
                           " devices per host");
  }
  for (size_t d = 0; d < per_device.size(); ++d) {
    if (!valid(per_device[d])) {
      return InvalidArgument(std::string(name) + "[" + std::to_string(d) + "] must be " +
                             requirement + ", got " + EntryText(per_device[d]));
    }
  }
  return Status::Ok();
}

Status CheckDeviceBandwidths(const PipelineSimInput& in) {
  return CheckPerDevice(
      in.device_inter_host_bandwidth, "device_inter_host_bandwidth", in.devices_per_host,
      [](double b) { return std::isfinite(b) && b > 0; }, "finite and positive");
}

Status CheckNicGroups(const std::vector<int32_t>& groups, const char* name,
                      const PipelineSimInput& in) {
  return CheckPerDevice(
      groups, name, in.devices_per_host,
      [&](int32_t g) { return g >= 0 && g < in.devices_per_host; },
      "in [0, " + std::to_string(in.devices_per_host - 1) + "]");
}

// A table of move bandwidths per ordered pair of a host's devices (or empty).
Status CheckPairBandwidths(const std::vector<double>& pairs, const std::string& name,
                           const PipelineSimInput& in) {
  if (pairs.empty()) return Status::Ok();
  const int64_t n = in.devices_per_host;
  if (static_cast<int64_t>(pairs.size()) != n * n) {
    return InvalidArgument(name + " has " + std::to_string(pairs.size()) + " entries, expected " +
                           std::to_string(n * n) + " (one per ordered pair of the " +
                           std::to_string(n) + " devices of a host)");
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (!std::isfinite(pairs[i]) || pairs[i] <= 0) {
      return InvalidArgument(name + "[" + std::to_string(i) + "] (devices " +
                             std::to_string(static_cast<int64_t>(i) / n) + " -> " +
                             std::to_string(static_cast<int64_t>(i) % n) +
                             ") must be finite and positive, got " + EntryText(pairs[i]));
    }
  }
  return Status::Ok();
}

Status CheckHostLinks(const PipelineSimInput& in) {
  if (in.host_links.empty()) return Status::Ok();
  if (in.host_links.size() != static_cast<size_t>(in.hosts)) {
    return InvalidArgument("host_links has " + std::to_string(in.host_links.size()) +
                           " entries, expected one per host (" + std::to_string(in.hosts) + ")");
  }
  for (size_t h = 0; h < in.host_links.size(); ++h) {
    const std::string where = "host_links[" + std::to_string(h) + "]";
    ALPA_RETURN_IF_ERROR(CheckLink(where + ".intra_host", in.host_links[h].intra_host));
    ALPA_RETURN_IF_ERROR(CheckLink(where + ".inter_host", in.host_links[h].inter_host));
    ALPA_RETURN_IF_ERROR(CheckNicGroups(in.host_links[h].device_nic_group,
                                        (where + ".device_nic_group").c_str(), in));
    ALPA_RETURN_IF_ERROR(
        CheckPairBandwidths(in.host_links[h].intra_host_pairs, where + ".intra_host_pairs", in));
  }
  return Status::Ok();
}

}  // namespace

Status ValidatePipelineSimInput(const PipelineSimInput& in) {
  if (in.hosts < 1) return InvalidArgument("hosts must be >= 1, got " + std::to_string(in.hosts));
  if (in.devices_per_host < 1) {
    return InvalidArgument("devices_per_host must be >= 1, got " +
                           std::to_string(in.devices_per_host));
  }
  ALPA_RETURN_IF_ERROR(CheckLink("intra_host", in.intra_host));
  ALPA_RETURN_IF_ERROR(CheckLink("inter_host", in.inter_host));
  ALPA_RETURN_IF_ERROR(CheckDeviceBandwidths(in));
  ALPA_RETURN_IF_ERROR(CheckNicGroups(in.device_nic_group, "device_nic_group", in));
  ALPA_RETURN_IF_ERROR(CheckPairBandwidths(in.intra_host_pairs, "intra_host_pairs", in));
  ALPA_RETURN_IF_ERROR(CheckHostLinks(in));
  if (in.schedule != PipelineScheduleKind::kGPipe &&
      in.schedule != PipelineScheduleKind::kOneFOneB &&
      in.schedule != PipelineScheduleKind::kZeroBubbleH1 &&
      in.schedule != PipelineScheduleKind::kInterleavedOneFOneB) {
    return InvalidArgument("schedule " + std::to_string(static_cast<int32_t>(in.schedule)) +
                           " is none of GPipe (0), 1F1B (1), ZB-H1 (2) and interleaved 1F1B (3)");
  }
  if (in.microbatches < 1 || in.microbatches > kMaxSimMicrobatches) {
    return InvalidArgument("microbatches must be in 1.." + std::to_string(kMaxSimMicrobatches) +
                           ", got " + std::to_string(in.microbatches));
  }
  if (in.stages.empty()) return InvalidArgument("stages is empty");
  if (in.stages.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgument("too many stages (" + std::to_string(in.stages.size()) + ")");
  }
  const auto num_stages = static_cast<int32_t>(in.stages.size());
  const std::string shape =
      PipelineShapeProblem(in.schedule, num_stages, in.virtual_stages, in.microbatches);
  if (!shape.empty()) return InvalidArgument(shape);
  // Both factors are int32, so the product fits in int64.
  const int64_t num_devices = int64_t{in.hosts} * in.devices_per_host;
  ALPA_RETURN_IF_ERROR(CheckStages(in, num_devices, PipelineGroups(num_stages, in.virtual_stages)));
  return CheckTransfers(in);
}

}  // namespace alpa

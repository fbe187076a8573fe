// The 1F1B closed form with transfers (pipeline_estimate.h).
#include "solvers/pipeline/pipeline_estimate.h"

#include <algorithm>
#include <cstddef>

namespace alpa {
namespace {

// max_s (o_s - sum_{r<s} (b_r + d_r)): how far the last stage to finish its once-per-iteration
// work ends after stage 0's last backward (pipeline_estimate.h).
double OverlappedOverhead(const std::vector<PipelineEstimateStage>& stages) {
  double latest = stages.front().iteration_overhead;
  double drain = 0;  // how much earlier stage s's last backward ends than stage 0's
  for (size_t s = 1; s < stages.size(); ++s) {
    drain += stages[s - 1].backward + stages[s - 1].from_next;
    latest = std::max(latest, stages[s].iteration_overhead - drain);
  }
  return latest;
}

}  // namespace

PipelineEstimate EstimateOneFOneB(const std::vector<PipelineEstimateStage>& stages,
                                  int64_t microbatches) {
  PipelineEstimate estimate;
  const int64_t n = static_cast<int64_t>(stages.size());
  if (n == 0 || microbatches < 1) return estimate;
  auto in_flight = [&](int64_t s) { return std::min<int64_t>(microbatches, n - s); };
  double first_pass = 0;
  for (int64_t s = 0; s < n; ++s) {
    const PipelineEstimateStage& st = stages[static_cast<size_t>(s)];
    first_pass += st.forward + st.backward;
    if (s + 1 < n) first_pass += st.to_next + st.from_next;
  }
  for (int64_t a = 0; a < n; ++a) {
    double weight = 0;
    for (int64_t z = a; z < n; ++z) {
      const PipelineEstimateStage& st = stages[static_cast<size_t>(z)];
      weight += st.forward + st.backward;
      if (z > a) {
        const PipelineEstimateStage& prev = stages[static_cast<size_t>(z - 1)];
        weight += prev.to_next + prev.from_next;
      }
      const double slots = static_cast<double>(1 + in_flight(a) - in_flight(z));
      const double ratio = weight / slots;
      if (ratio > estimate.period_seconds || estimate.bottleneck_first < 0) {
        estimate.period_seconds = ratio;
        estimate.bottleneck_first = static_cast<int32_t>(a);
        estimate.bottleneck_last = static_cast<int32_t>(z);
      }
    }
  }
  estimate.iteration_seconds = first_pass +
                               static_cast<double>(microbatches - 1) * estimate.period_seconds +
                               OverlappedOverhead(stages);
  return estimate;
}

namespace {

// When each device group's last task of GroupSchedule(kind) ends, in sweeps that alternate
// direction (forwards flow to later stages, input gradients to earlier ones) and run every group
// as far as its inputs allow; each sweep runs at least one task of the schedule's critical
// path. Empty when the schedule does not fit (PipelineShapeProblem).
std::vector<double> GroupEnds(PipelineScheduleKind kind,
                              const std::vector<PipelineEstimateStage>& stages,
                              int64_t microbatches, int32_t virtual_stages) {
  const int32_t n = static_cast<int32_t>(stages.size());
  const int32_t groups = PipelineGroups(n, virtual_stages);
  if (!PipelineShapeProblem(kind, n, virtual_stages, microbatches).empty()) return {};
  const size_t mb = static_cast<size_t>(microbatches);
  const bool split = SplitsBackward(kind);
  std::vector<std::vector<GroupTask>> order(static_cast<size_t>(groups));
  for (int32_t g = 0; g < groups; ++g) {
    order[static_cast<size_t>(g)] = GroupSchedule(kind, n, virtual_stages, g, microbatches);
  }
  constexpr double kNotYet = -1;
  std::vector<std::vector<double>> forward_end(stages.size(), std::vector<double>(mb, kNotYet));
  std::vector<std::vector<double>> backward_end = forward_end;
  std::vector<size_t> next(order.size(), 0);
  std::vector<double> clock(order.size(), 0);
  size_t left = 0;
  for (const auto& o : order) left += o.size();
  auto advance = [&](int32_t g) {
    const size_t gi = static_cast<size_t>(g);
    bool ran = false;
    while (next[gi] < order[gi].size()) {
      const GroupTask& t = order[gi][next[gi]];
      const int32_t s = t.stage;
      const size_t si = static_cast<size_t>(s);
      const PipelineEstimateStage& st = stages[si];
      const double weight = split ? std::min(st.weight, st.backward) : 0.0;
      const size_t m = static_cast<size_t>(t.microbatch);
      double ready = clock[gi], seconds = weight;
      if (t.kind == PipelineTaskKind::kForward) {
        if (s > 0) {
          const double in = forward_end[si - 1][m];
          if (in == kNotYet) break;
          ready = std::max(ready, in + stages[si - 1].to_next);
        }
        seconds = st.forward;
      } else if (t.kind == PipelineTaskKind::kBackward) {
        if (s + 1 < n) {
          const double in = backward_end[si + 1][m];
          if (in == kNotYet) break;
          ready = std::max(ready, in + st.from_next);
        }
        seconds = st.backward - weight;
      }
      clock[gi] = ready + seconds;
      if (t.kind == PipelineTaskKind::kForward) forward_end[si][m] = clock[gi];
      if (t.kind == PipelineTaskKind::kBackward) backward_end[si][m] = clock[gi];
      ++next[gi];
      --left;
      ran = true;
    }
    return ran;
  };
  for (bool down = true; left > 0; down = !down) {
    bool ran = false;
    for (int32_t k = 0; k < groups; ++k) ran |= advance(down ? k : groups - 1 - k);
    if (!ran) break;  // cannot happen: the schedules have no cycle
  }
  return clock;
}

}  // namespace

double EvaluateSchedule(PipelineScheduleKind kind, const std::vector<PipelineEstimateStage>& stages,
                        int64_t microbatches, int32_t virtual_stages) {
  if (stages.empty() || microbatches < 1) return 0;
  const std::vector<double> ends = GroupEnds(kind, stages, microbatches, virtual_stages);
  if (ends.empty()) return 0;
  // Each group runs its stages' once-per-iteration work one after another.
  std::vector<double> finish = ends;
  for (size_t s = 0; s < stages.size(); ++s) {
    finish[s % ends.size()] += stages[s].iteration_overhead;
  }
  return *std::max_element(finish.begin(), finish.end());
}

PipelineEstimate EstimateZeroBubbleH1(const std::vector<PipelineEstimateStage>& stages,
                                      int64_t microbatches) {
  PipelineEstimate estimate = EstimateOneFOneB(stages, microbatches);
  estimate.iteration_seconds =
      EvaluateSchedule(PipelineScheduleKind::kZeroBubbleH1, stages, microbatches);
  return estimate;
}

PipelineEstimate EstimateInterleaved(const std::vector<PipelineEstimateStage>& stages,
                                     int64_t microbatches, int32_t virtual_stages) {
  PipelineEstimate estimate;
  const int32_t n = static_cast<int32_t>(stages.size());
  const int32_t groups = PipelineGroups(n, virtual_stages);
  if (groups == 0 || microbatches < 1) return estimate;
  std::vector<double> work(static_cast<size_t>(groups), 0.0);
  for (int32_t s = 0; s < n; ++s) {
    const PipelineEstimateStage& st = stages[static_cast<size_t>(s)];
    work[static_cast<size_t>(s % groups)] += st.forward + st.backward;
  }
  const auto busiest = std::max_element(work.begin(), work.end());
  estimate.period_seconds = *busiest;
  estimate.bottleneck_first = estimate.bottleneck_last =
      static_cast<int32_t>(busiest - work.begin());
  estimate.iteration_seconds = EvaluateSchedule(PipelineScheduleKind::kInterleavedOneFOneB, stages,
                                                microbatches, virtual_stages);
  return estimate;
}

PipelineEstimate EstimatePipeline(PipelineScheduleKind kind,
                                  const std::vector<PipelineEstimateStage>& stages,
                                  int64_t microbatches, int32_t virtual_stages) {
  if (kind == PipelineScheduleKind::kInterleavedOneFOneB) {
    return EstimateInterleaved(stages, microbatches, virtual_stages);
  }
  if (kind == PipelineScheduleKind::kZeroBubbleH1) {
    return EstimateZeroBubbleH1(stages, microbatches);
  }
  return EstimateOneFOneB(stages, microbatches);
}

}  // namespace alpa

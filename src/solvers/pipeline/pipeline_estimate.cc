// The 1F1B closed form with transfers (pipeline_estimate.h).
#include "solvers/pipeline/pipeline_estimate.h"

#include <algorithm>

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

}  // namespace alpa

#include "exec/cuda/attention_calibration.h"

#include <cmath>

namespace alpa {
namespace cuda {

Result<AttentionCalibrationCase> AttentionCalibrationCaseFor(int64_t batch) {
  if (batch < 1 || batch > 64) {
    return InvalidArgument("the attention calibration's batch must be in [1, 64] (got " +
                           std::to_string(batch) + ")");
  }
  AttentionCalibrationCase c;
  AttentionShape& s = c.shape;
  s.batch = batch;
  s.heads = 32;
  s.q_seq = s.k_seq = 2048;
  s.head_dim = 128;
  s.storage = DType::kBF16;
  s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  s.causal = true;
  const std::string reason = AttentionUnsupportedReason(s);
  if (!reason.empty()) return InternalError("the attention calibration's shape: " + reason);
  c.name = "attention causal bf16 [batch " + std::to_string(s.batch) + ", heads " +
           std::to_string(s.heads) + ", seq " + std::to_string(s.q_seq) + ", head_dim " +
           std::to_string(s.head_dim) + "]";
  // One product's flops as OpFlops counts them, and the share a causal core's are priced at.
  const double product = 2.0 * static_cast<double>(s.batch * s.heads) *
                         static_cast<double>(s.q_seq) * static_cast<double>(s.k_seq) *
                         static_cast<double>(s.head_dim);
  constexpr double kCausalShare = 0.5;
  c.forward_flops = kCausalShare * 2 * product;
  c.backward_flops = kCausalShare * 4 * product;
  return c;
}

}  // namespace cuda
}  // namespace alpa

// The microbatch counts the planner's search chooses from (planner.h).
#pragma once

#include <cstdint>
#include <vector>

namespace alpa {

// One count per power of two 2^k <= max_microbatches: the divisor of global_batch (at most
// max_microbatches) nearest to 2^k in ratio (ties: the larger), duplicates dropped; largest
// first. A batch with a large power-of-two factor gets exactly the powers of two (1, 2, 4, ...);
// one without gets the divisors closest to them, so that a batch of 2,160 = 2^4 * 135 can still
// be cut into 135, 270 or 540 microbatches rather than at most 16. Empty when global_batch < 1
// or max_microbatches < 1.
std::vector<int64_t> MicrobatchCounts(int64_t global_batch, int64_t max_microbatches);

}  // namespace alpa

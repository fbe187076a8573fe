// The microbatch counts the planner's search chooses from (planner.h).
#pragma once

#include <cstdint>
#include <vector>

namespace alpa {

// One count per power of two 2^k <= max_microbatches, duplicates dropped, largest first: among
// the divisors of global_batch (at most max_microbatches) within half an octave of 2^k, the one
// whose microbatch (global_batch / count samples) splits over the largest power of two of hosts
// dividing `hosts` (data parallelism across hosts, tensor parallelism inside them); ties: the
// nearest to 2^k in ratio, then the larger. Where no divisor lies that close, the nearest one.
// A batch with a large power-of-two factor gets exactly the powers of two (1, 2, 4, ...); one
// without gets divisors near them, so that a batch of 2,160 = 2^4 * 135 can still be cut into
// 135, 270 or 540 microbatches rather than at most 16, and 1,792 samples on 128 hosts into 56
// microbatches of 32 (data parallel over 32 hosts) rather than 64 of 28. Empty when
// global_batch < 1 or max_microbatches < 1.
std::vector<int64_t> MicrobatchCounts(int64_t global_batch, int64_t max_microbatches,
                                      int64_t hosts = 1);

}  // namespace alpa

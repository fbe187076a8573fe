// The planner's microbatch ladder: powers of two where the batch has them, divisors near them
// where it does not (first those whose microbatch splits over the most hosts), never a count that
// does not divide the batch or exceeds the cap.
#include "solvers/planner/microbatch_counts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace alpa {
namespace {

using Counts = std::vector<int64_t>;

TEST(MicrobatchCounts, PowerOfTwoBatchesGetThePowersOfTwo) {
  EXPECT_EQ(MicrobatchCounts(1024, 1024), (Counts{1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1}));
  EXPECT_EQ(MicrobatchCounts(4096, 64), (Counts{64, 32, 16, 8, 4, 2, 1}));
  // 48 = 16 * 3: the powers of two up to 16, then the nearest divisors of 32 (24) and of 64 and
  // beyond (48 itself).
  EXPECT_EQ(MicrobatchCounts(48, 1024), (Counts{48, 24, 16, 8, 4, 2, 1}));
}

TEST(MicrobatchCounts, OddBatchesGetTheirNearestDivisors) {
  // Megatron-LM's 310.1B row: batch 2,160 = 2^4 * 135 (its own pipeline runs 144 microbatches).
  EXPECT_EQ(MicrobatchCounts(2160, 1024), (Counts{720, 540, 270, 135, 60, 30, 16, 8, 4, 2, 1}));
  // The 529.6B row: 2,520 = 2^3 * 315.
  EXPECT_EQ(MicrobatchCounts(2520, 1024), (Counts{840, 504, 252, 126, 63, 30, 15, 8, 4, 2, 1}));
  // A prime batch: only 1 and itself.
  EXPECT_EQ(MicrobatchCounts(1009, 2048), (Counts{1009, 1}));
}

TEST(MicrobatchCounts, NearAPowerOfTwoTheMicrobatchThatSplitsOverMoreHostsWins) {
  // Megatron-LM's 76.1B row: 1,792 = 2^8 * 7 samples on 128 hosts. Near 64 the count is 56
  // (microbatches of 32 samples: data parallel over 32 hosts), not 64 (28 samples, which split
  // over at most 4 hosts, so stages of 16 hosts had to use tensor parallelism across hosts).
  EXPECT_EQ(MicrobatchCounts(1792, 1024, 128),
            (Counts{896, 448, 224, 112, 56, 28, 14, 7, 4, 2, 1}));
  EXPECT_EQ(MicrobatchCounts(1792, 1024), (Counts{896, 448, 256, 128, 64, 32, 16, 8, 4, 2, 1}));
  // 48 samples on 8 hosts: microbatches of 1, 2, 4, 8 and 16 samples rather than 3 and 6; on 2
  // hosts only odd microbatches (3 samples) lose to even ones.
  EXPECT_EQ(MicrobatchCounts(48, 1024, 8), (Counts{48, 24, 12, 6, 3, 2, 1}));
  EXPECT_EQ(MicrobatchCounts(48, 1024, 2), (Counts{48, 24, 12, 8, 4, 2, 1}));
  // A power-of-two batch keeps its powers of two whatever the devices.
  EXPECT_EQ(MicrobatchCounts(1024, 1024, 96),
            (Counts{1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1}));
  // Nothing within half an octave: the nearest divisor, as without devices.
  EXPECT_EQ(MicrobatchCounts(1009, 2048, 64), (Counts{1009, 1}));
}

TEST(MicrobatchCounts, EveryCountDividesTheBatchAndRespectsTheCap) {
  for (int64_t batch = 1; batch <= 600; ++batch) {
    for (int64_t cap : {1, 3, 16, 100, 1024}) {
      for (int64_t hosts : {1, 8, 24}) {
        const Counts c = MicrobatchCounts(batch, cap, hosts);
        ASSERT_FALSE(c.empty());
        EXPECT_EQ(c.back(), 1);
        for (size_t k = 0; k < c.size(); ++k) {
          EXPECT_EQ(batch % c[k], 0) << batch << " " << c[k];
          EXPECT_LE(c[k], cap);
          if (k > 0) {
            EXPECT_LT(c[k], c[k - 1]) << "descending, no duplicates";
          }
        }
      }
    }
  }
}

TEST(MicrobatchCounts, NothingForBadInput) {
  EXPECT_TRUE(MicrobatchCounts(0, 1024).empty());
  EXPECT_TRUE(MicrobatchCounts(-4, 1024).empty());
  EXPECT_TRUE(MicrobatchCounts(64, 0).empty());
  // A cap near the int64 limit does not overflow the ladder.
  EXPECT_EQ(MicrobatchCounts(4, INT64_MAX), (Counts{4, 2, 1}));
}

}  // namespace
}  // namespace alpa

// The planner's microbatch ladder: powers of two where the batch has them, the nearest divisors
// where it does not, never a count that does not divide the batch or exceeds the cap.
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

TEST(MicrobatchCounts, EveryCountDividesTheBatchAndRespectsTheCap) {
  for (int64_t batch = 1; batch <= 600; ++batch) {
    for (int64_t cap : {1, 3, 16, 100, 1024}) {
      const Counts c = MicrobatchCounts(batch, cap);
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

TEST(MicrobatchCounts, NothingForBadInput) {
  EXPECT_TRUE(MicrobatchCounts(0, 1024).empty());
  EXPECT_TRUE(MicrobatchCounts(-4, 1024).empty());
  EXPECT_TRUE(MicrobatchCounts(64, 0).empty());
  // A cap near the int64 limit does not overflow the ladder.
  EXPECT_EQ(MicrobatchCounts(4, INT64_MAX), (Counts{4, 2, 1}));
}

}  // namespace
}  // namespace alpa

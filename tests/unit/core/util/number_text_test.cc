#include "core/util/number_text.h"

#include <cstdlib>
#include <limits>

#include <gtest/gtest.h>

namespace alpa {
namespace {

TEST(ExactDoubleText, TellsApartValuesThatSixDecimalsWouldMerge) {
  EXPECT_NE(ExactDoubleText(1e-7), ExactDoubleText(0.0));
  EXPECT_NE(ExactDoubleText(0.1), ExactDoubleText(0.1000001));
  EXPECT_EQ(ExactDoubleText(0.0), "0");
  EXPECT_EQ(ExactDoubleText(2.5), "2.5");
}

TEST(ExactDoubleText, ReadsBackAsTheSameDouble) {
  for (double v : {0.1, 1.0 / 3.0, 6.02214076e23, -4.9e-324, 1.7976931348623157e308}) {
    EXPECT_EQ(std::strtod(ExactDoubleText(v).c_str(), nullptr), v) << ExactDoubleText(v);
  }
}

TEST(ExactDoubleText, WritesNonFiniteValuesByName) {
  EXPECT_EQ(ExactDoubleText(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(ExactDoubleText(-std::numeric_limits<double>::infinity()), "-inf");
}

// Issue 21, item 8: "0.00 GiB (2961 bytes)" named a small size in a unit too large for it.
TEST(ByteSizeText, PicksAUnitThatShowsTheSize) {
  EXPECT_EQ(ByteSizeText(2961), "2.89 KiB");
  EXPECT_EQ(ByteSizeText(12), "12 bytes");
  EXPECT_EQ(ByteSizeText(3 * 1024 * 1024), "3.00 MiB");
  EXPECT_EQ(ByteSizeText(int64_t{16} << 30), "16.00 GiB");
  EXPECT_EQ(ByteSizeText(int64_t{5} << 40), "5120.00 GiB");  // the planner compares in GiB
  EXPECT_EQ(ExactByteSizeText(2961), "2.89 KiB (2961 bytes)");
  EXPECT_EQ(ExactByteSizeText(12), "12 bytes");
}

}  // namespace
}  // namespace alpa

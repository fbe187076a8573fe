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

}  // namespace
}  // namespace alpa

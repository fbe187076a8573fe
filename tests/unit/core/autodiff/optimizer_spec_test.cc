// ParseOptimizerSpec: kinds, keys landing in the config, defaults, and the errors naming the
// offending kind, key or value.
#include "core/autodiff/optimizer_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace alpa {
namespace {

TEST(OptimizerSpecTest, KindsAndDefaults) {
  Result<OptimizerConfig> adam = ParseOptimizerSpec("adam");
  ASSERT_TRUE(adam.ok()) << adam.status().message();
  EXPECT_EQ(adam.value().kind, OptimizerKind::kAdam);
  EXPECT_DOUBLE_EQ(adam.value().learning_rate, 1e-3);
  EXPECT_DOUBLE_EQ(adam.value().epsilon, 1e-8);
  EXPECT_TRUE(adam.value().master_weights);  // the zoo's default for half dtypes
  EXPECT_EQ(ParseOptimizerSpec("sgd").value().kind, OptimizerKind::kSgd);
  EXPECT_EQ(ParseOptimizerSpec("momentum").value().kind, OptimizerKind::kMomentum);
}

TEST(OptimizerSpecTest, KeysLandInTheConfig) {
  Result<OptimizerConfig> adam =
      ParseOptimizerSpec("adam:lr=3e-4,beta1=0.8,beta2=0.95,eps=1e-6,master_weights=0");
  ASSERT_TRUE(adam.ok()) << adam.status().message();
  EXPECT_DOUBLE_EQ(adam.value().learning_rate, 3e-4);
  EXPECT_DOUBLE_EQ(adam.value().beta1, 0.8);
  EXPECT_DOUBLE_EQ(adam.value().beta2, 0.95);
  EXPECT_DOUBLE_EQ(adam.value().epsilon, 1e-6);
  EXPECT_FALSE(adam.value().master_weights);
  EXPECT_DOUBLE_EQ(ParseOptimizerSpec("adam:adam_eps=1e-5").value().epsilon, 1e-5);
  EXPECT_DOUBLE_EQ(ParseOptimizerSpec("momentum:momentum=0").value().momentum, 0.0);
}

TEST(OptimizerSpecTest, ErrorsNameTheProblem) {
  const struct {
    const char* spec;
    const char* needle;
  } cases[] = {
      {"", "optimizer \"\" is not one of"},
      {"lamb:lr=1", "optimizer \"lamb\""},
      {"adam:", "\"\" is not key=value"},
      {"adam:=1", "\"=1\" is not key=value"},
      {"adam:lr=0", "lr=\"0\": expected a number > 0"},
      {"adam:lr=1x", "lr=\"1x\""},
      {"adam:lr=nan", "lr=\"nan\""},
      {"adam:lr=1e999", "lr=\"1e999\""},
      {"adam:beta2=1", "beta2=\"1\": expected a number in [0, 1)"},
      {"momentum:momentum=-0.1", "momentum=\"-0.1\""},
      {"sgd:momentum=0.9", "\"momentum\" does not apply to sgd"},
      {"momentum:beta1=0.9", "\"beta1\" does not apply to momentum"},
      {"adam:eps=1e-8,adam_eps=1e-8", "\"adam_eps\" is given twice"},
      {"adam:decay=0.1", "unknown optimizer key \"decay\""},
      {"sgd:master_weights=yes", "master_weights=\"yes\": expected 0 or 1"},
  };
  for (const auto& c : cases) {
    Result<OptimizerConfig> r = ParseOptimizerSpec(c.spec);
    ASSERT_FALSE(r.ok()) << c.spec;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos)
        << c.spec << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace alpa

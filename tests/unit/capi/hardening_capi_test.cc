// Issue 21 through the C ABI only (alpa.h): huge model specs are errors, not crashes (item 1);
// messages do not echo raw bytes, name the overflowing number, and say "aliases"; NaN and
// negative time limits and non-boolean flags are rejected (item 8).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "alpa.h"

namespace {

std::string Take(alpa_error* err) {
  if (err == nullptr) return "";
  std::string m = alpa_error_message(err);
  alpa_error_free(err);
  return m;
}

TEST(HardeningCapi, HugeModelSpecsAreInvalidGraphsNotCrashes) {
  for (const char* spec : {"mlp:hidden=2000000000,dtype=f16", "gpt:hidden=1000000000,heads=1",
                           "bert:hidden=1000000000,heads=1"}) {
    alpa_graph* g = nullptr;
    alpa_error* err = nullptr;
    EXPECT_EQ(alpa_model_build_graph(&g, spec, &err), ALPA_ERR_INVALID_GRAPH) << spec;
    EXPECT_EQ(g, nullptr);
    const std::string m = Take(err);
    EXPECT_NE(m.find("2^63"), std::string::npos) << m;
    EXPECT_NE(m.find(".w'"), std::string::npos) << m;  // names the weight
  }
}

TEST(HardeningCapi, MessagesEscapeRawBytesOfTheInput) {
  alpa_graph* g = nullptr;
  alpa_error* err = nullptr;
  EXPECT_NE(alpa_model_build_graph(&g, "gpt:hidden=\xFF\x01", &err), ALPA_OK);
  const std::string m = Take(err);
  EXPECT_EQ(m.find('\xFF'), std::string::npos) << m;
  EXPECT_EQ(m.find('\x01'), std::string::npos) << m;
  EXPECT_NE(m.find("\\xFF\\x01"), std::string::npos) << m;
}

TEST(HardeningCapi, TimeLimitsMustBeANumberOfSecondsAtLeastZero) {
  alpa_solve_options* o = nullptr;
  ASSERT_EQ(alpa_solve_options_create(&o, nullptr), ALPA_OK);
  for (double bad : {std::nan(""), -1.0, -std::numeric_limits<double>::infinity()}) {
    alpa_error* err = nullptr;
    EXPECT_EQ(alpa_solve_options_set_double(o, ALPA_OPT_TIME_LIMIT_SECONDS, bad, &err),
              ALPA_ERR_INVALID_ARGUMENT)
        << bad;
    const std::string m = Take(err);
    EXPECT_NE(m.find("time_limit_seconds"), std::string::npos) << m;
  }
  alpa_error* err = nullptr;
  EXPECT_EQ(alpa_solve_options_set_by_name(o, "time_limit_seconds", "nan", &err),
            ALPA_ERR_INVALID_ARGUMENT);
  Take(err);
  for (double good : {0.0, 2.5, std::numeric_limits<double>::infinity()}) {
    EXPECT_EQ(alpa_solve_options_set_double(o, ALPA_OPT_TIME_LIMIT_SECONDS, good, nullptr), ALPA_OK)
        << good;
  }
  alpa_solve_options_destroy(o);
}

TEST(HardeningCapi, BooleanOptionsAreZeroOrOne) {
  alpa_solve_options* o = nullptr;
  ASSERT_EQ(alpa_solve_options_create(&o, nullptr), ALPA_OK);
  alpa_error* err = nullptr;
  EXPECT_EQ(alpa_solve_options_set_int(o, ALPA_OPT_DETERMINISTIC, 2, &err),
            ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Take(err).find("deterministic"), std::string::npos);
  EXPECT_EQ(alpa_solve_options_set_by_name(o, "deterministic", "2", &err),
            ALPA_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(alpa_solve_options_set_int(o, ALPA_OPT_DETERMINISTIC, 1, nullptr), ALPA_OK);
  alpa_solve_options_destroy(o);
  const std::string request = R"({"problem": {}, "options": {"deterministic": 2}})";
  alpa_buffer* out = nullptr;
  EXPECT_EQ(alpa_problem_solve_json(&out, request.data(), request.size(), &err),
            ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Take(err).find("deterministic"), std::string::npos);
  alpa_buffer_free(out);
}

TEST(HardeningCapi, AnOverflowingNumberInAJsonRequestIsNamedAsSuch) {
  const std::string request = R"({"problem": {}, "options": {"time_limit_seconds": 1e400}})";
  alpa_buffer* out = nullptr;
  alpa_error* err = nullptr;
  EXPECT_EQ(alpa_problem_solve_json(&out, request.data(), request.size(), &err), ALPA_ERR_PARSE);
  const std::string m = Take(err);
  EXPECT_EQ(m.find("not a JSON object"), std::string::npos) << m;
  EXPECT_NE(m.find("1e400"), std::string::npos) << m;
  EXPECT_NE(m.find("out of range"), std::string::npos) << m;
  const std::string array = "[1, 2]";
  EXPECT_EQ(alpa_problem_solve_json(&out, array.data(), array.size(), &err), ALPA_ERR_PARSE);
  EXPECT_NE(Take(err).find("expected a JSON object, found array"), std::string::npos);
  alpa_buffer_free(out);
}

TEST(HardeningCapi, PairErrorsSayAliasesNotAliass) {
  alpa_problem* p = nullptr;
  ASSERT_EQ(alpa_problem_create(&p, nullptr), ALPA_OK);
  alpa_error* err = nullptr;
  EXPECT_EQ(alpa_problem_add_aliases(p, 1, nullptr, nullptr, &err), ALPA_ERR_INVALID_ARGUMENT);
  const std::string m = Take(err);
  EXPECT_EQ(m.find("aliass"), std::string::npos) << m;
  EXPECT_NE(m.find("aliases"), std::string::npos) << m;
  alpa_problem_destroy(p);
}

}  // namespace

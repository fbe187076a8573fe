#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "alpa.h"
#include "commands.h"

namespace alpa_cli {

int RunEvaluate(const std::string& file, const std::string& assignment_text) {
  // The assignment is written as IOPDDL prints it, which is a JSON array of integers.
  const nlohmann::json parsed = nlohmann::json::parse(assignment_text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    std::fprintf(stderr, "alpa: error: assignment must look like \"[0, 0, 2, 1, 0]\"\n");
    return 1;
  }
  std::vector<int32_t> assignment;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const nlohmann::json& v = parsed[i];
    if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX) {
      std::fprintf(stderr, "alpa: error: assignment entry %zu is not a strategy index\n", i);
      return 1;
    }
    assignment.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }

  alpa_error* err = nullptr;
  alpa_problem* problem = nullptr;
  if (alpa_problem_read_file(&problem, file.c_str(), ALPA_FORMAT_AUTO, &err) != ALPA_OK) {
    std::fprintf(stderr, "alpa: error: %s\n", alpa_error_message(err));
    alpa_error_free(err);
    return 1;
  }
  double cost = 0;
  const int32_t status = alpa_problem_evaluate(
      &cost, problem, static_cast<int64_t>(assignment.size()), assignment.data(), &err);
  alpa_problem_destroy(problem);
  if (status != ALPA_OK) {
    std::printf("invalid: %s\n", alpa_error_message(err));
    alpa_error_free(err);
    return 1;
  }
  if (std::fabs(cost) < 9e15 && cost == static_cast<double>(static_cast<long long>(cost))) {
    std::printf("%lld\n", static_cast<long long>(cost));
  } else {
    std::printf("%.17g\n", cost);
  }
  return 0;
}

}  // namespace alpa_cli

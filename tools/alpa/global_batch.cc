// The global batch as a searched option of `alpa plan` (global_batch.h).
#include "global_batch.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_output.h"

namespace alpa_cli {

bool ParseGlobalBatches(const std::string& text, std::vector<int64_t>* batches,
                        std::string* error) {
  batches->clear();
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::string at = "entry " + std::to_string(batches->size() + 1) + " \"" + item + "\"";
    if (item.empty() || item.size() > 18 ||
        item.find_first_not_of("0123456789") != std::string::npos) {
      *error = at + " is not a positive integer";
      return false;
    }
    const int64_t b = std::stoll(item);
    if (b < 1) {
      *error = at + " is not a positive integer";
      return false;
    }
    if (std::find(batches->begin(), batches->end(), b) != batches->end()) {
      *error = at + " repeats a batch";
      return false;
    }
    batches->push_back(b);
    if (batches->size() > kMaxGlobalBatches) {
      *error = "more than " + std::to_string(kMaxGlobalBatches) + " batches";
      return false;
    }
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

std::string SpecWithBatch(const std::string& spec, int64_t batch) {
  const size_t colon = spec.find(':');
  std::string keys;
  if (colon != std::string::npos) {
    size_t start = colon + 1;
    while (start <= spec.size()) {
      const size_t comma = spec.find(',', start);
      const std::string item =
          spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.rfind("batch=", 0) != 0 && !item.empty()) keys += item + ",";
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return spec.substr(0, colon) + ":" + keys + "batch=" + std::to_string(batch);
}

int PlanGlobalBatches(const std::string& model, const std::vector<int64_t>& batches,
                      const alpa_cluster* cluster, const alpa_plan_options* options, bool quiet,
                      alpa_plan** out, std::string* chosen) {
  *out = nullptr;
  double best_rate = 0;
  std::string skipped;
  std::vector<int64_t> ascending = batches;  // so that a tie keeps the smaller batch
  std::sort(ascending.begin(), ascending.end());
  for (int64_t b : ascending) {
    const std::string spec = SpecWithBatch(model, b);
    alpa_plan* plan = nullptr;
    alpa_error* err = nullptr;
    const int32_t rc = alpa_model_plan(&plan, spec.c_str(), cluster, options, &err);
    if (rc == ALPA_ERR_INFEASIBLE) {
      if (!quiet) std::printf("global batch %lld: no plan fits\n", static_cast<long long>(b));
      skipped += (skipped.empty() ? "" : ", ") + std::to_string(b);
      alpa_error_free(err);
      continue;
    }
    if (rc != ALPA_OK) {
      alpa_plan_destroy(*out);
      *out = nullptr;
      return ReportError(err, "--global-batch " + std::to_string(b));
    }
    const double seconds = alpa_plan_iteration_seconds(plan);
    const double rate = static_cast<double>(b) / seconds;
    if (!quiet) {
      std::printf("global batch %lld: %s per iteration, %.1f samples/s\n",
                  static_cast<long long>(b), Seconds(seconds, 2).c_str(), rate);
    }
    if (*out == nullptr || rate > best_rate) {
      alpa_plan_destroy(*out);
      *out = plan;
      best_rate = rate;
      *chosen = spec;
    } else {
      alpa_plan_destroy(plan);
    }
  }
  if (*out == nullptr) {
    std::fprintf(stderr, "alpa: no plan fits at any global batch of --global-batch (%s)\n",
                 skipped.c_str());
    return 2;
  }
  if (!quiet) std::printf("kept: %s (the most samples per second)\n", chosen->c_str());
  return 0;
}

}  // namespace alpa_cli

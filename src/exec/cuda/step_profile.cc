#include "exec/cuda/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace alpa {
namespace cuda {

void StepProfile::Add(const std::string& label, double seconds) {
  Entry& e = entries_[label];
  e.seconds += seconds;
  ++e.count;
}

void StepProfile::AddInstruction(double seconds, const std::string& text) {
  if (slowest_.size() >= kSlowest && seconds <= slowest_.begin()->first) return;
  slowest_.emplace(seconds, text);
  if (slowest_.size() > kSlowest) slowest_.erase(slowest_.begin());
}

std::string StepProfile::Table(int32_t top) const {
  std::vector<std::pair<double, const std::string*>> order;
  double total = 0;
  for (const auto& [label, e] : entries_) {
    order.push_back({e.seconds, &label});
    total += e.seconds;
  }
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text = "profile: " + std::to_string(total * 1e3) + " ms in all\n";
  for (size_t i = 0; i < order.size() && i < static_cast<size_t>(top); ++i) {
    const Entry& e = entries_.at(*order[i].second);
    char line[96];
    std::snprintf(line, sizeof(line), "%10.3f ms %5.1f%% %6lld  ", e.seconds * 1e3,
                  total > 0 ? 100.0 * e.seconds / total : 0.0, static_cast<long long>(e.count));
    text += line + *order[i].second + "\n";
  }
  text += "slowest instructions:\n";
  for (auto it = slowest_.rbegin(); it != slowest_.rend(); ++it) {
    char line[32];
    std::snprintf(line, sizeof(line), "%10.3f ms  ", it->first * 1e3);
    text += line + it->second + "\n";
  }
  return text;
}

}  // namespace cuda
}  // namespace alpa

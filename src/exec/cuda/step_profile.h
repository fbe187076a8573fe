// Where a step's GPU time goes, for finding slow kernels: with ALPA_CUDA_PROFILE set, the CUDA
// runner waits for the GPU after every instruction and adds the time to the instruction's label
// (its kind, op kind, dtype and storage types), then prints the labels that took longest. The
// waits make the step slower: a profiled step's total is no measurement of speed.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace alpa {
namespace cuda {

class StepProfile {
 public:
  // Adds an instruction's time to its label; `text` (the instruction, for the slowest list) is
  // built only when the instruction may enter that list.
  void Add(const std::string& label, double seconds);
  void AddInstruction(double seconds, const std::string& text);
  // The `top` labels by time, one line each: seconds, share of the total, count, label; then the
  // `top` slowest single instructions.
  std::string Table(int32_t top) const;
  void Clear() {
    entries_.clear();
    slowest_.clear();
  }

 private:
  struct Entry {
    double seconds = 0;
    int64_t count = 0;
  };
  std::map<std::string, Entry> entries_;
  std::multimap<double, std::string> slowest_;  // at most kSlowest, fastest first
  static constexpr size_t kSlowest = 20;
};

}  // namespace cuda
}  // namespace alpa

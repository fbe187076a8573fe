// libFuzzer target: the cluster and calibration file readers (core/cluster/cluster.h). Whatever
// parses must be a valid cluster that writes, reads back equal, and writes the same bytes again.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/cluster/cluster.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  alpa::Result<alpa::Cluster> cluster = alpa::ReadClusterBuffer(bytes);
  if (cluster.ok()) {
    alpa::Result<std::string> text = alpa::WriteCluster(cluster.value());
    if (!text.ok()) Fail("writing failed: " + text.status().message());
    alpa::Result<alpa::Cluster> back = alpa::ReadClusterBuffer(text.value());
    if (!back.ok()) Fail("reading back failed: " + back.status().message());
    if (!(back.value() == cluster.value())) Fail("the round trip changed the cluster");
    alpa::Result<std::string> again = alpa::WriteCluster(back.value());
    if (!again.ok() || again.value() != text.value()) Fail("the writer is not deterministic");
  } else if (cluster.status().message().empty()) {
    Fail("a cluster error without a message");
  }
  alpa::Result<alpa::Calibration> calibration = alpa::ReadCalibrationBuffer(bytes);
  if (calibration.ok()) {
    std::string text = alpa::WriteCalibration(calibration.value());
    alpa::Result<alpa::Calibration> back = alpa::ReadCalibrationBuffer(text);
    if (!back.ok()) Fail("calibration reading back failed: " + back.status().message());
    if (!(back.value() == calibration.value())) Fail("the calibration round trip changed it");
  } else if (calibration.status().message().empty()) {
    Fail("a calibration error without a message");
  }
  return 0;
}

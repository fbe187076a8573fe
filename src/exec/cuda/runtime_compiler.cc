// CompileToCubin: one NVRTC program per (source, architecture), compiled once per process.
#include "exec/cuda/runtime_compiler.h"

#include <nvrtc.h>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "exec/cuda/runtime_headers.h"

namespace alpa {
namespace cuda {
namespace {

Status NvrtcStatus(nvrtcResult r, const std::string& what, const std::string& step) {
  if (r == NVRTC_SUCCESS) return Status::Ok();
  return InternalError(what + ": " + step + ": " + nvrtcGetErrorString(r));
}

std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);
  return log;
}

Result<std::string> Compile(const std::string& source, int major, int minor,
                            const std::string& what) {
  nvrtcProgram program = nullptr;
  ALPA_RETURN_IF_ERROR(
      NvrtcStatus(nvrtcCreateProgram(&program, source.c_str(), "alpa_fused.cu", kRuntimeHeaderCount,
                                     kRuntimeHeaderTexts, kRuntimeHeaderNames),
                  what, "creating the NVRTC program"));
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major) + std::to_string(minor);
  // No contraction of a product and a sum into one FMA: each op of a fused chain rounds as it
  // does alone.
  const char* options[] = {arch.c_str(), "--std=c++17", "-default-device", "--fmad=false"};
  const nvrtcResult compiled = nvrtcCompileProgram(program, 4, options);
  Result<std::string> out = std::string();
  if (compiled != NVRTC_SUCCESS) {
    out = InternalError(what + ": NVRTC: " + nvrtcGetErrorString(compiled) + "\n" +
                        ProgramLog(program));
  } else {
    size_t size = 0;
    Status s = NvrtcStatus(nvrtcGetCUBINSize(program, &size), what, "the cubin's size");
    std::string cubin(size, '\0');
    if (s.ok()) s = NvrtcStatus(nvrtcGetCUBIN(program, cubin.data()), what, "the cubin");
    out = s.ok() ? Result<std::string>(std::move(cubin)) : Result<std::string>(s);
  }
  (void)nvrtcDestroyProgram(&program);
  return out;
}

}  // namespace

Result<std::string> CompileToCubin(const std::string& source, int major, int minor,
                                   const std::string& what) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, std::string> cache;
  const std::pair<std::string, int> key{source, major * 10 + minor};
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto found = cache.find(key);
    if (found != cache.end()) return found->second;
  }
  Result<std::string> cubin = Compile(source, major, minor, what);
  if (!cubin.ok()) return cubin;
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, cubin.value());
  return cubin;
}

}  // namespace cuda
}  // namespace alpa

// libFuzzer target: alpa_problem_solve_json, the one-shot JSON solve of the C ABI. Any bytes
// give ALPA_OK with a JSON answer or a status with a message; the solve gets a 10 ms time limit
// whatever the request asks, so that one execution stays short.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "alpa.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  __builtin_trap();
}

constexpr double kTimeLimitSeconds = 0.01;

// The request with options.time_limit_seconds forced to kTimeLimitSeconds (and one thread), or
// the bytes unchanged when they are not a JSON object (the C ABI must reject those itself).
std::string WithTinyTimeLimit(const std::string& bytes) {
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bytes;
  nlohmann::json& options = j["options"];
  if (!options.is_object()) options = nlohmann::json::object();
  options["time_limit_seconds"] = kTimeLimitSeconds;
  options["threads"] = 1;
  return j.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 16) return 0;
  const std::string request =
      WithTinyTimeLimit(std::string(reinterpret_cast<const char*>(data), size));
  alpa_buffer* out = nullptr;
  alpa_error* err = nullptr;
  const int32_t status = alpa_problem_solve_json(&out, request.data(), request.size(), &err);
  if (status == ALPA_OK) {
    if (out == nullptr) Fail("ALPA_OK without an answer");
    const char* answer = alpa_buffer_data(out);
    if (nlohmann::json::parse(answer, answer + std::strlen(answer), nullptr, false)
            .is_discarded()) {
      Fail(std::string("the answer is not JSON: ") + answer);
    }
  } else {
    if (err == nullptr) Fail("status " + std::to_string(status) + " without an error");
    const char* message = alpa_error_message(err);
    if (message == nullptr || message[0] == '\0') Fail("an error without a message");
  }
  alpa_buffer_free(out);
  alpa_error_free(err);
  return 0;
}

// Output helpers shared by the `alpa` subcommands (see cli_output.h).
#include "cli_output.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "input_limit.h"

namespace alpa_cli {

int ReportBadInput(const std::string& message) {
  std::fprintf(stderr, "alpa: error: %s\n", message.c_str());
  return 1;
}

int ReportError(alpa_error* err, const std::string& option) {
  const std::string message = err != nullptr ? alpa_error_message(err) : "unknown error";
  alpa_error_free(err);
  return ReportBadInput(option.empty() ? message : option + ": " + message);
}

std::string FormatNumber(double value, int significant_digits) {
  if (std::isnan(value)) return "nan";
  if (!std::isfinite(value)) return value > 0 ? "inf" : "-inf";
  char text[64];
  if (std::fabs(value) < 9e15 && value == std::floor(value)) {
    std::snprintf(text, sizeof(text), "%.0f", value);
  } else {
    std::snprintf(text, sizeof(text), "%.*g", significant_digits, value);
  }
  return text;
}

void PrintSolveProgress(const alpa_progress& progress, int significant_digits, bool with_seconds) {
  if (with_seconds)
    std::printf("# %8.3fs  ", progress.seconds);
  else
    std::printf("# ");
  std::printf("%-10s objective %s  bound %s\n", progress.phase,
              FormatNumber(progress.objective, significant_digits).c_str(),
              FormatNumber(progress.lower_bound, significant_digits).c_str());
  std::fflush(stdout);
}

std::string ScaledNumber(double x, const char* const* units, double base, int decimals) {
  int unit = 0;
  while (std::fabs(x) >= base && units[unit + 1] != nullptr) {
    x /= base;
    ++unit;
  }
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f%s", unit == 0 ? 0 : decimals, x, units[unit]);
  return text;
}

std::string Bytes(double bytes, int decimals) {
  static const char* const kUnits[] = {" B", " KiB", " MiB", " GiB", " TiB", " PiB", nullptr};
  return ScaledNumber(bytes, kUnits, 1024, decimals);
}

bool IsNoAnswer(int32_t status) {
  return status == ALPA_ERR_INFEASIBLE || status == ALPA_ERR_TIMEOUT ||
         status == ALPA_ERR_CANCELLED;
}

const char* SolveStatusName(int32_t status) {
  switch (status) {
    case ALPA_SOLVE_OPTIMAL:
      return "optimal";
    case ALPA_SOLVE_FEASIBLE:
      return "feasible";
    case ALPA_SOLVE_INFEASIBLE:
      return "infeasible";
    case ALPA_SOLVE_CANCELLED:
      return "cancelled";
    case ALPA_SOLVE_INVALID_INPUT:
      return "invalid_input";
    default:
      return "no_solution";
  }
}

// "16GiB" -> 17179869184, "1e9" -> 1000000000, "512MB" -> 512000000. Suffixes (any case):
// KB MB GB TB are powers of 1000; K M G T, KiB MiB GiB TiB powers of 1024; B is bytes.
bool ParseBytes(const std::string& text, int64_t* out) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || end == text.c_str() || !std::isfinite(value) || value < 0) {
    return false;
  }
  std::string suffix(end);
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!suffix.empty() && suffix[0] == ' ') suffix.erase(0, 1);
  static const struct {
    const char* suffix;
    double scale;
  } kScales[] = {{"", 1},
                 {"b", 1},
                 {"k", 1024.0},
                 {"kib", 1024.0},
                 {"kb", 1e3},
                 {"m", 1048576.0},
                 {"mib", 1048576.0},
                 {"mb", 1e6},
                 {"g", 1073741824.0},
                 {"gib", 1073741824.0},
                 {"gb", 1e9},
                 {"t", 1099511627776.0},
                 {"tib", 1099511627776.0},
                 {"tb", 1e12}};
  for (const auto& s : kScales) {
    if (suffix == s.suffix) {
      const double bytes = std::floor(value * s.scale);
      if (!(bytes < 9.2233720368547758e18)) return false;
      *out = static_cast<int64_t>(bytes);
      return true;
    }
  }
  return false;
}

bool IsFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  std::fclose(file);
  return true;
}

namespace {

// "" when `chunk` (whose first byte is byte `offset` of the stream) leaves the stream able to
// start a JSON document, else why not; *decided once a byte other than whitespace was seen.
std::string NotJsonReason(std::string_view chunk, size_t offset, bool* decided) {
  const size_t first = chunk.find_first_not_of(" \t\n\r");
  if (first == std::string_view::npos) return "";
  *decided = true;
  if (chunk[first] == '{' || chunk[first] == '[') return "";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(chunk[first]));
  return "not JSON: byte " + std::to_string(offset + first) + " is " + hex +
         " (a JSON document starts with '{' or '[')";
}

}  // namespace

bool ReadStream(std::FILE* stream, std::string* bytes, int64_t max_bytes, std::string* reason,
                StreamContent content) {
  bytes->clear();
  char chunk[1 << 16];
  size_t got;
  bool decided = content != StreamContent::kJson;
  try {
    while ((got = std::fread(chunk, 1, sizeof chunk, stream)) > 0) {
      if (!decided) {
        *reason = NotJsonReason(std::string_view(chunk, got), bytes->size(), &decided);
        if (!reason->empty()) return false;
      }
      if (got > static_cast<uint64_t>(max_bytes) - bytes->size()) {
        *reason = InputLimitMessage(max_bytes);
        return false;
      }
      bytes->append(chunk, got);
    }
  } catch (const std::bad_alloc&) {
    *reason = "out of memory";
    return false;
  }
  // A directory opens but does not read (EISDIR).
  if (std::ferror(stream) != 0) {
    *reason = std::strerror(errno);
    return false;
  }
  return true;
}

bool ReadFile(const std::string& path, std::string* bytes, int64_t max_bytes, std::string* reason,
              StreamContent content) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    *reason = std::strerror(errno);
    return false;
  }
  const bool read = ReadStream(file, bytes, max_bytes, reason, content);
  std::fclose(file);
  return read;
}

bool WriteFile(const std::string& path, const char* data, size_t size) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  const bool written = std::fwrite(data, 1, size, file) == size;
  return std::fclose(file) == 0 && written;
}

std::string DeviceRuns(const std::vector<int64_t>& ids) {
  std::string runs;
  for (size_t first = 0; first < ids.size();) {
    size_t last = first;
    while (last + 1 < ids.size() && ids[last + 1] == ids[last] + 1) ++last;
    if (!runs.empty()) runs += ",";
    runs += std::to_string(ids[first]);
    if (last > first) runs += "-" + std::to_string(ids[last]);
    first = last + 1;
  }
  return runs;
}

std::string Seconds(double seconds, int decimals) {
  char text[48];
  if (!std::isfinite(seconds)) return "n/a";
  if (seconds < 1e-3) {
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(text, sizeof text, "%.*f ms", decimals, seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.*f s", decimals, seconds);
  }
  return text;
}

int32_t ScheduleFromName(const std::string& name) {
  if (name == "1f1b" || name == "1F1B") return ALPA_SCHEDULE_1F1B;
  if (name == "gpipe" || name == "GPipe") return ALPA_SCHEDULE_GPIPE;
  if (name == "zb-h1" || name == "ZB-H1") return ALPA_SCHEDULE_ZB_H1;
  if (name == "interleaved-1f1b" || name == "interleaved 1F1B") {
    return ALPA_SCHEDULE_INTERLEAVED_1F1B;
  }
  return -1;
}

}  // namespace alpa_cli

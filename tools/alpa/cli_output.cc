// Output helpers shared by the `alpa` subcommands (see cli_output.h).
#include "cli_output.h"

#include <cmath>
#include <cstdio>

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

std::string ScaledNumber(double x, const char* const* units, double base, int decimals) {
  int u = 0;
  while (std::fabs(x) >= base && units[u + 1] != nullptr) {
    x /= base;
    ++u;
  }
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f%s", u == 0 ? 0 : decimals, x, units[u]);
  return text;
}

std::string Bytes(double bytes, int decimals) {
  static const char* const kUnits[] = {" B", " KiB", " MiB", " GiB", " TiB", " PiB", nullptr};
  return ScaledNumber(bytes, kUnits, 1024, decimals);
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

}  // namespace alpa_cli

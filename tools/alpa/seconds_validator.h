// The check of every option that takes seconds (time limits): a number >= 0. CLI11's
// NonNegativeNumber lets "nan" through (NaN < 0 is false), and a NaN limit would silently mean
// no limit at all.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace alpa_cli {

inline CLI::Validator NonNegativeSeconds() {
  // The same description as CLI::NonNegativeNumber, so --help reads as before.
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "Failed parsing number: (" + text + ")";
        if (std::isnan(value)) return "must be a number of seconds >= 0, not nan";
        if (value < 0) return "must be a number of seconds >= 0 (got " + text + ")";
        return std::string();
      },
      "NONNEGATIVE");
}

}  // namespace alpa_cli

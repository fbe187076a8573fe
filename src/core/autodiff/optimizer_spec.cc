// ParseOptimizerSpec: "adam:lr=0.001,eps=1e-8" -> OptimizerConfig.
#include "core/autodiff/optimizer_spec.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace alpa {
namespace {

Result<OptimizerKind> ParseKind(const std::string& kind) {
  if (kind == "sgd") return OptimizerKind::kSgd;
  if (kind == "momentum") return OptimizerKind::kMomentum;
  if (kind == "adam") return OptimizerKind::kAdam;
  return InvalidArgument("optimizer \"" + kind + "\" is not one of: sgd momentum adam");
}

// The whole of `text` as a finite number.
bool ParseNumber(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

Status BadValue(const std::string& key, const std::string& value, const std::string& expected) {
  return InvalidArgument("optimizer key " + key + "=\"" + value + "\": expected " + expected);
}

// Applies one key=value of an optimizer of config->kind.
Status ApplyKey(const std::string& key, const std::string& value, OptimizerConfig* config) {
  const bool adam = config->kind == OptimizerKind::kAdam;
  double x = 0;
  if (key == "master_weights") {
    if (value != "0" && value != "1") return BadValue(key, value, "0 or 1");
    config->master_weights = value == "1";
    return Status::Ok();
  }
  const bool known = key == "lr" || key == "momentum" || key == "beta1" || key == "beta2" ||
                     key == "eps" || key == "adam_eps";
  if (!known) {
    return InvalidArgument("unknown optimizer key \"" + key +
                           "\" (keys: lr, momentum, beta1, beta2, eps, master_weights)");
  }
  const bool applies = key == "lr" ||
                       (key == "momentum" && config->kind == OptimizerKind::kMomentum) ||
                       (key != "momentum" && adam);
  if (!applies) {
    const char* kind = config->kind == OptimizerKind::kSgd        ? "sgd"
                       : config->kind == OptimizerKind::kMomentum ? "momentum"
                                                                  : "adam";
    return InvalidArgument("optimizer key \"" + key + "\" does not apply to " + kind);
  }
  if (key == "lr" || key == "eps" || key == "adam_eps") {
    if (!ParseNumber(value, &x) || x <= 0) return BadValue(key, value, "a number > 0");
    (key == "lr" ? config->learning_rate : config->epsilon) = x;
    return Status::Ok();
  }
  if (!ParseNumber(value, &x) || x < 0 || x >= 1) return BadValue(key, value, "a number in [0, 1)");
  (key == "momentum" ? config->momentum : key == "beta1" ? config->beta1 : config->beta2) = x;
  return Status::Ok();
}

}  // namespace

Result<OptimizerConfig> ParseOptimizerSpec(const std::string& spec) {
  const size_t colon = spec.find(':');
  Result<OptimizerKind> kind = ParseKind(spec.substr(0, colon));
  if (!kind.ok()) return kind.status();
  OptimizerConfig config;
  config.kind = kind.value();
  config.master_weights = true;
  if (colon == std::string::npos) return config;
  std::set<std::string> seen;
  size_t begin = colon + 1;
  while (true) {
    const size_t comma = spec.find(',', begin);
    const std::string item = spec.substr(begin, comma == std::string::npos ? comma : comma - begin);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("optimizer spec \"" + spec + "\": \"" + item + "\" is not key=value");
    }
    const std::string key = item.substr(0, eq);
    const std::string canonical = key == "adam_eps" ? "eps" : key;
    if (!seen.insert(canonical).second) {
      return InvalidArgument("optimizer key \"" + key + "\" is given twice");
    }
    ALPA_RETURN_IF_ERROR(ApplyKey(key, item.substr(eq + 1), &config));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return config;
}

}  // namespace alpa

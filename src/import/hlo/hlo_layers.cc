// Layer markers from op_name metadata (hlo_layers.h).
#include "import/hlo/hlo_layers.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <vector>

namespace alpa {
namespace {

bool IsLayerWord(const std::string& word) {
  return word == "layers" || word == "layer" || word == "blocks" || word == "block" || word == "h";
}

// A non-negative int32 from all-digit text.
std::optional<int32_t> Index(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return static_cast<int32_t>(std::stol(text));
}

// The op_name split at everything but letters, digits and '_'.
std::vector<std::string> Words(const std::string& op_name) {
  std::vector<std::string> words;
  std::string current;
  for (char c : op_name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      current += c;
    } else if (!current.empty()) {
      words.push_back(current);
      current.clear();
    }
  }
  if (!current.empty()) words.push_back(current);
  return words;
}

}  // namespace

std::optional<int32_t> LayerMarker(const std::string& op_name) {
  std::vector<std::string> words = Words(op_name);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    size_t underscore = word.rfind('_');
    if (underscore != std::string::npos && IsLayerWord(word.substr(0, underscore))) {
      if (std::optional<int32_t> n = Index(word.substr(underscore + 1))) return n;
    }
    if (IsLayerWord(word) && i + 1 < words.size()) {
      if (std::optional<int32_t> n = Index(words[i + 1])) return n;
    }
  }
  return std::nullopt;
}

void AssignLayers(HloImport& import) {
  Graph& graph = import.graph;
  const size_t n = graph.ops.size();
  constexpr int32_t kUnset = -1;
  std::vector<int32_t> layer(n, kUnset);
  bool any = false;
  for (size_t id = 0; id < n; ++id) {
    if (std::optional<int32_t> marker = LayerMarker(import.op_names[id])) {
      layer[id] = *marker;
      any = true;
    }
  }
  if (!any) {
    for (Op& op : graph.ops) op.layer = 0;
    return;
  }
  // Unmarked ops follow their operands (the latest layer they read from)...
  for (size_t id = 0; id < n; ++id) {
    if (layer[id] != kUnset) continue;
    for (int32_t operand : graph.ops[id].operands) {
      layer[id] = std::max(layer[id], layer[static_cast<size_t>(operand)]);
    }
  }
  // ...and what reads only unmarked values (sources, optimizer-state arithmetic, broadcasts of
  // constants) their first user, users before operands so that chains follow.
  std::vector<bool> from_users(n);
  for (size_t id = 0; id < n; ++id) from_users[id] = layer[id] == kUnset;
  for (size_t id = n; id-- > 0;) {
    if (layer[id] == kUnset) continue;
    for (int32_t operand : graph.ops[id].operands) {
      auto o = static_cast<size_t>(operand);
      if (!from_users[o]) continue;
      layer[o] = layer[o] == kUnset ? layer[id] : std::min(layer[o], layer[id]);
    }
  }
  for (size_t id = 0; id < n; ++id) graph.ops[id].layer = layer[id] == kUnset ? 0 : layer[id];
}

}  // namespace alpa

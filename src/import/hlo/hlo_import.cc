// The importer's phases in order: parse, lower, roles and phases, layers, validate.
#include "import/hlo/hlo_import.h"

#include <utility>

#include "core/util/printable_text.h"

#include "import/hlo/hlo_layers.h"
#include "import/hlo/hlo_parser.h"
#include "import/hlo/hlo_to_graph.h"
#include "import/hlo/hlo_training.h"

namespace alpa {

namespace {

Result<Graph> Import(std::string_view text) {
  Result<HloModule> module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  Result<HloImport> import = LowerHloModule(module.value());
  if (!import.ok()) return import.status();
  ALPA_RETURN_IF_ERROR(AssignTrainingRoles(import.value()));
  AssignLayers(import.value());
  ALPA_RETURN_IF_ERROR(ValidateGraph(import.value().graph));
  return std::move(import.value().graph);
}

}  // namespace

Result<Graph> ImportHloText(std::string_view text) {
  Result<Graph> graph = Import(text);
  // Messages quote the text (names, attribute values): keep them printable UTF-8.
  if (!graph.ok()) return Status(graph.status().code(), PrintableText(graph.status().message()));
  return graph;
}

Result<Graph> ReadHloFile(const std::string& path, uint64_t max_input_bytes) {
  Result<std::string> bytes = ReadFileBytes(path, max_input_bytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kIo) return bytes.status();
    return Status(bytes.status().code(), path + ": " + bytes.status().message());
  }
  Result<Graph> graph = ImportHloText(bytes.value());
  if (!graph.ok()) return Status(graph.status().code(), path + ": " + graph.status().message());
  return graph;
}

}  // namespace alpa

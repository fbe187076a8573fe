// The IOPDDL contest format (REFERENCE §2):
// {"problem": {"name", "nodes": {"intervals", "costs", "usages"}, "edges": {"nodes", "costs"},
//  "usage_limit"}}.
#include <cmath>
#include <limits>
#include <string>

#include "core/problem/problem_io_internal.h"

namespace alpa::io_internal {
namespace {

constexpr std::string_view kFormat = "iopddl";
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

Status Fail(const std::string& path, const std::string& what) {
  return ErrorAt(kFormat, path, what);
}

Status ExpectArray(const Json& j, const std::string& path) {
  if (j.is_array()) return Status::Ok();
  return Fail(path, std::string("expected an array, found ") + j.type_name());
}

// A required array field of `obj` (at `path`); its own path is path + "." + key.
Status ArrayField(const Json& obj, const std::string& path, const char* key, const Json** out) {
  ALPA_RETURN_IF_ERROR(FindField(kFormat, obj, path, key, Presence::kRequired, out));
  return ExpectArray(**out, path + "." + key);
}

// row = list[i]: an array of numbers. Paths are built only on error (this is the hot loop).
Status ReadDoubles(const Json& row, const char* list, size_t i, std::vector<double>* out) {
  if (!row.is_array()) {
    return Fail(Index(list, i), std::string("expected an array, found ") + row.type_name());
  }
  out->resize(row.size());
  size_t k = 0;
  for (const Json& x : row) {
    const Conversion c = ToDouble(x, &(*out)[k]);
    if (c != Conversion::kOk) return Fail(Index(Index(list, i), k), ConversionMessage(c));
    ++k;
  }
  return Status::Ok();
}

Status ReadUsages(const Json& row, size_t i, std::vector<int64_t>* out) {
  static const char* kList = "problem.nodes.usages";
  if (!row.is_array()) {
    return Fail(Index(kList, i), std::string("expected an array, found ") + row.type_name());
  }
  out->resize(row.size());
  size_t k = 0;
  for (const Json& x : row) {
    const Conversion c = ToInt64(x, kInt64Min, kInt64Max, &(*out)[k]);
    if (c != Conversion::kOk) {
      return Fail(
          Index(Index(kList, i), k),
          std::string(ConversionMessage(c)) + " (usages are integral byte counts that fit int64)");
    }
    ++k;
  }
  return Status::Ok();
}

// row = list[i] = [a, b]: two integers in [lo, hi].
Status ReadPair(const Json& row, const char* list, size_t i, int64_t lo, int64_t hi, int64_t* a,
                int64_t* b) {
  if (!row.is_array() || row.size() != 2) {
    return Fail(Index(list, i),
                row.is_array()
                    ? "expected 2 entries, found " + std::to_string(row.size())
                    : std::string("expected an array of 2 integers, found ") + row.type_name());
  }
  int64_t* dst[2] = {a, b};
  for (size_t k = 0; k < 2; ++k) {
    const Conversion c = ToInt64(row[k], lo, hi, dst[k]);
    if (c != Conversion::kOk) return Fail(Index(Index(list, i), k), ConversionMessage(c));
  }
  return Status::Ok();
}

Status LengthMismatch(const char* field, size_t got, const char* other, size_t want) {
  return Fail("", std::string(field) + " has " + std::to_string(got) + " entries, expected " +
                      std::to_string(want) + " (one per entry of " + other + ")");
}

Status ReadNodes(const Json& problem, ShardingProblem* p) {
  const Json* nodes = nullptr;
  ALPA_RETURN_IF_ERROR(
      FindField(kFormat, problem, "problem", "nodes", Presence::kRequired, &nodes));
  const Json* intervals = nullptr;
  const Json* costs = nullptr;
  const Json* usages = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(*nodes, "problem.nodes", "intervals", &intervals));
  ALPA_RETURN_IF_ERROR(ArrayField(*nodes, "problem.nodes", "costs", &costs));
  ALPA_RETURN_IF_ERROR(ArrayField(*nodes, "problem.nodes", "usages", &usages));
  const size_t n = costs->size();
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Fail("problem.nodes.costs", "too many nodes (" + std::to_string(n) + ")");
  }
  if (intervals->size() != n) {
    return LengthMismatch("problem.nodes.intervals", intervals->size(), "problem.nodes.costs", n);
  }
  if (usages->size() != n) {
    return LengthMismatch("problem.nodes.usages", usages->size(), "problem.nodes.costs", n);
  }
  p->nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ShardingNode& node = p->nodes[i];
    ALPA_RETURN_IF_ERROR(ReadDoubles((*costs)[i], "problem.nodes.costs", i, &node.costs));
    ALPA_RETURN_IF_ERROR(ReadUsages((*usages)[i], i, &node.usages));
    ALPA_RETURN_IF_ERROR(ReadPair((*intervals)[i], "problem.nodes.intervals", i, kInt64Min,
                                  kInt64Max, &node.interval.lo, &node.interval.hi));
  }
  return Status::Ok();
}

Status ReadEdges(const Json& problem, ShardingProblem* p) {
  const Json* edges = nullptr;
  ALPA_RETURN_IF_ERROR(
      FindField(kFormat, problem, "problem", "edges", Presence::kRequired, &edges));
  const Json* ends = nullptr;
  const Json* costs = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(*edges, "problem.edges", "nodes", &ends));
  ALPA_RETURN_IF_ERROR(ArrayField(*edges, "problem.edges", "costs", &costs));
  if (costs->size() != ends->size()) {
    return LengthMismatch("problem.edges.costs", costs->size(), "problem.edges.nodes",
                          ends->size());
  }
  p->edges.resize(ends->size());
  for (size_t e = 0; e < p->edges.size(); ++e) {
    ShardingEdge& edge = p->edges[e];
    int64_t u = 0;
    int64_t v = 0;
    ALPA_RETURN_IF_ERROR(ReadPair((*ends)[e], "problem.edges.nodes", e,
                                  std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max(), &u, &v));
    edge.u = static_cast<int32_t>(u);
    edge.v = static_cast<int32_t>(v);
    ALPA_RETURN_IF_ERROR(ReadDoubles((*costs)[e], "problem.edges.costs", e, &edge.costs));
  }
  return Status::Ok();
}

}  // namespace

Result<ShardingProblem> IopddlFromJson(const Json& root) {
  ShardingProblem parsed;
  const Json* problem = nullptr;
  ALPA_RETURN_IF_ERROR(FindField(kFormat, root, "", "problem", Presence::kRequired, &problem));
  const Json* name = nullptr;
  ALPA_RETURN_IF_ERROR(FindField(kFormat, *problem, "problem", "name", Presence::kOptional, &name));
  if (name != nullptr) {
    if (!name->is_string()) {
      return Fail("problem.name", std::string("expected a string, found ") + name->type_name());
    }
    parsed.name = name->get<std::string>();
  }
  ALPA_RETURN_IF_ERROR(ReadNodes(*problem, &parsed));
  ALPA_RETURN_IF_ERROR(ReadEdges(*problem, &parsed));
  const Json* limit = nullptr;
  ALPA_RETURN_IF_ERROR(
      FindField(kFormat, *problem, "problem", "usage_limit", Presence::kOptional, &limit));
  if (limit != nullptr) {
    int64_t value = 0;
    const Conversion c = FloorToInt64(*limit, &value);
    if (c != Conversion::kOk) return Fail("problem.usage_limit", ConversionMessage(c));
    parsed.usage_limit = value;
  }
  return parsed;
}

Result<std::string> WriteIopddl(const ShardingProblem& problem) {
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    if (problem.nodes[i].follows != -1) {
      return Status(StatusCode::kUnsupported, "iopddl cannot express followers (node " +
                                                  std::to_string(i) + " follows " +
                                                  std::to_string(problem.nodes[i].follows) + ")");
    }
  }
  if (!problem.aliases.empty()) {
    return Status(StatusCode::kUnsupported, "iopddl cannot express alias pairs (the problem has " +
                                                std::to_string(problem.aliases.size()) + ")");
  }
  if (problem.uses_live_sets()) {
    return Status(StatusCode::kUnsupported,
                  "iopddl cannot express explicit live sets (only usage intervals)");
  }
  std::string out;
  size_t numbers = 0;
  for (const ShardingNode& node : problem.nodes) numbers += 2 * node.costs.size() + 2;
  for (const ShardingEdge& edge : problem.edges) numbers += edge.costs.size() + 2;
  out.reserve(numbers * 8 + problem.name.size() + 128);

  out += "{\"problem\":{\"name\":";
  AppendString(problem.name, &out);
  out += ",\"nodes\":{\"intervals\":[";
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    out += i == 0 ? "[" : ",[";
    AppendInt(problem.nodes[i].interval.lo, &out);
    out += ',';
    AppendInt(problem.nodes[i].interval.hi, &out);
    out += ']';
  }
  out += "],\"costs\":[";
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    out += i == 0 ? "[" : ",[";
    const std::vector<double>& costs = problem.nodes[i].costs;
    for (size_t s = 0; s < costs.size(); ++s) {
      if (s > 0) out += ',';
      AppendNumber(costs[s], &out);
    }
    out += ']';
  }
  out += "],\"usages\":[";
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    out += i == 0 ? "[" : ",[";
    const ShardingNode& node = problem.nodes[i];
    for (int32_t s = 0; s < node.strategy_count(); ++s) {
      if (s > 0) out += ',';
      AppendInt(node.usage(s), &out);  // empty usages are written as explicit zeros
    }
    out += ']';
  }
  out += "]},\"edges\":{\"nodes\":[";
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    out += e == 0 ? "[" : ",[";
    AppendInt(problem.edges[e].u, &out);
    out += ',';
    AppendInt(problem.edges[e].v, &out);
    out += ']';
  }
  out += "],\"costs\":[";
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    out += e == 0 ? "[" : ",[";
    const std::vector<double>& costs = problem.edges[e].costs;
    for (size_t k = 0; k < costs.size(); ++k) {
      if (k > 0) out += ',';
      AppendNumber(costs[k], &out);
    }
    out += ']';
  }
  out += "]}";
  if (problem.usage_limit) {
    out += ",\"usage_limit\":";
    AppendInt(*problem.usage_limit, &out);
  }
  out += "}}";
  return out;
}

}  // namespace alpa::io_internal

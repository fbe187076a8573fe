// Alpa's serialized solver arguments as JSON (REFERENCE §2, problem_io.h): flat arrays indexed
// by node, edge and alias, concatenated over strategies.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "core/problem/problem_io_internal.h"

namespace alpa::io_internal {
namespace {

constexpr std::string_view kFormat = "alpa";
constexpr double kAlpaInfinity = 1e13;  // Alpa's INFINITY_COST
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

Status Fail(const std::string& path, const std::string& what) {
  return ErrorAt(kFormat, path, what);
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

const Json* Field(const Json& root, const char* key) {
  const auto it = root.find(key);
  return it == root.end() || it->is_null() ? nullptr : &*it;
}

Status ArrayField(const Json& root, const char* key, const Json** out) {
  ALPA_RETURN_IF_ERROR(FindField(kFormat, root, "", key, Presence::kRequired, out));
  if ((*out)->is_array()) return Status::Ok();
  return Fail(key, std::string("expected an array, found ") + (*out)->type_name());
}

Status ExpectLength(const char* key, size_t got, uint64_t want, const char* what) {
  if (got == want) return Status::Ok();
  return Fail("", std::string(key) + " has " + std::to_string(got) + " entries, expected " + what +
                      " = " + (want == kSaturated ? "more" : std::to_string(want)));
}

// An array of integers in [lo, hi] of exactly `want` entries (`what` explains `want`).
Status ReadInts(const Json& root, const char* key, int64_t lo, int64_t hi, uint64_t want,
                const char* what, std::vector<int64_t>* out) {
  const Json* arr = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(root, key, &arr));
  if (want != kSaturated) ALPA_RETURN_IF_ERROR(ExpectLength(key, arr->size(), want, what));
  out->resize(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    const Conversion c = ToInt64((*arr)[i], lo, hi, &(*out)[i]);
    if (c != Conversion::kOk) {
      return Fail(Index(key, i), std::string(ConversionMessage(c)) + " (allowed: " +
                                     std::to_string(lo) + ".." + std::to_string(hi) + ")");
    }
  }
  return Status::Ok();
}

Status ReadDoubles(const Json& root, const char* key, uint64_t want, const char* what,
                   std::vector<double>* out) {
  const Json* arr = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(root, key, &arr));
  ALPA_RETURN_IF_ERROR(ExpectLength(key, arr->size(), want, what));
  out->resize(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    const Conversion c = ToDouble((*arr)[i], &(*out)[i]);
    if (c != Conversion::kOk) return Fail(Index(key, i), ConversionMessage(c));
  }
  return Status::Ok();
}

// Memory: integers as given, floats rounded to the nearest integer; never negative.
Status ReadMemory(const Json& root, uint64_t want, std::vector<int64_t>* out) {
  const Json* arr = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(root, "m", &arr));
  ALPA_RETURN_IF_ERROR(ExpectLength("m", arr->size(), want, "sum(s_len)"));
  out->resize(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    const Json& x = (*arr)[i];
    Conversion c = Conversion::kOk;
    if (x.is_number_float()) {
      const double d = std::round(x.get<double>());
      c = ToInt64(Json(d), 0, std::numeric_limits<int64_t>::max(), &(*out)[i]);
    } else {
      c = ToInt64(x, 0, std::numeric_limits<int64_t>::max(), &(*out)[i]);
    }
    if (c == Conversion::kOutOfRange && x.is_number() && x.get<double>() < 0) {
      return Fail(Index("m", i), "negative memory " + x.dump());
    }
    if (c != Conversion::kOk) return Fail(Index("m", i), ConversionMessage(c));
  }
  return Status::Ok();
}

// E or A: flat [u0, v0, u1, v1, ...] or pairs [[u0, v0], ...]. Endpoints must be node ids
// already here, since the lengths of r and v depend on their strategy counts.
Status ReadEndpoints(const Json& root, const char* key, int64_t n,
                     std::vector<std::array<int32_t, 2>>* out) {
  const Json* arr = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(root, key, &arr));
  const bool pairs = !arr->empty() && (*arr)[0].is_array();
  if (!pairs && arr->size() % 2 != 0) {
    return Fail("", std::string(key) + " has " + std::to_string(arr->size()) +
                        " entries, expected an even number (u0, v0, u1, v1, ...)");
  }
  out->resize(pairs ? arr->size() : arr->size() / 2);
  for (size_t e = 0; e < out->size(); ++e) {
    for (size_t k = 0; k < 2; ++k) {
      const Json* x = nullptr;
      if (pairs) {
        const Json& pair = (*arr)[e];
        if (!pair.is_array() || pair.size() != 2) {
          return Fail(Index(key, e), "expected a pair [u, v]");
        }
        x = &pair[k];
      } else {
        x = &(*arr)[2 * e + k];
      }
      int64_t id = 0;
      const Conversion c = ToInt64(*x, std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max(), &id);
      auto where = [&] { return pairs ? Index(Index(key, e), k) : Index(key, 2 * e + k); };
      if (c != Conversion::kOk) return Fail(where(), ConversionMessage(c));
      if (id < 0 || id >= n) {
        return InvalidProblem("alpa: " + where() + " = " + std::to_string(id) +
                              " is not a node id (N = " + std::to_string(n) + ")");
      }
      (*out)[e][k] = static_cast<int32_t>(id);
    }
  }
  return Status::Ok();
}

// Sum over pairs of s_u * s_v, saturating (lengths are then compared against real arrays).
uint64_t MatrixEntries(const std::vector<std::array<int32_t, 2>>& pairs,
                       const std::vector<int64_t>& s_len) {
  uint64_t total = 0;
  for (const auto& pair : pairs) {
    const uint64_t a = static_cast<uint64_t>(s_len[static_cast<size_t>(pair[0])]);
    const uint64_t b = static_cast<uint64_t>(s_len[static_cast<size_t>(pair[1])]);
    total = SaturatingAdd(total, a * b);  // each s_len <= 2^31, so a * b cannot overflow
  }
  return total;
}

Status ReadLiveSets(const Json& root, int64_t n, std::vector<std::vector<int32_t>>* sets) {
  std::vector<int64_t> flat;
  ALPA_RETURN_IF_ERROR(
      ReadInts(root, "L", std::numeric_limits<int32_t>::min(), kInt32Max, kSaturated, "", &flat));
  const size_t count = static_cast<size_t>(n);
  if (flat.size() < count) {
    return Fail("", "L has " + std::to_string(flat.size()) + " entries, expected at least N = " +
                        std::to_string(n) + " (the sizes of the N live sets come first)");
  }
  uint64_t total = count;
  for (size_t t = 0; t < count; ++t) {
    if (flat[t] < 0) {
      return Fail(Index("L", t), "live set size " + std::to_string(flat[t]) + " is negative");
    }
    total = SaturatingAdd(total, static_cast<uint64_t>(flat[t]));
  }
  ALPA_RETURN_IF_ERROR(ExpectLength("L", flat.size(), total, "N + sum of the live set sizes"));
  sets->resize(count);
  size_t pos = count;
  for (size_t t = 0; t < count; ++t) {
    const size_t size = static_cast<size_t>(flat[t]);
    (*sets)[t].reserve(size);
    for (size_t k = 0; k < size; ++k) (*sets)[t].push_back(static_cast<int32_t>(flat[pos++]));
  }
  // Trailing empty sets constrain nothing; dropping them lets a problem without live sets
  // (all sizes zero) keep using its (all-empty) intervals.
  while (!sets->empty() && sets->back().empty()) sets->pop_back();
  return Status::Ok();
}

}  // namespace

Result<ShardingProblem> AlpaFromJson(const Json& root) {
  ShardingProblem problem;
  if (!root.is_object()) {
    return Fail("top level", std::string("expected an object, found ") + root.type_name());
  }
  if (const Json* name = Field(root, "name")) {
    if (!name->is_string()) return Fail("name", "expected a string");
    problem.name = name->get<std::string>();
  }
  const Json* field = nullptr;
  int64_t n = 0;
  ALPA_RETURN_IF_ERROR(FindField(kFormat, root, "", "N", Presence::kRequired, &field));
  Conversion c = ToInt64(*field, 0, kInt32Max, &n);
  if (c != Conversion::kOk) return Fail("N", std::string(ConversionMessage(c)) + " (node count)");

  ALPA_RETURN_IF_ERROR(FindField(kFormat, root, "", "M", Presence::kRequired, &field));
  if (!field->is_number()) return Fail("M", "expected a number");
  if (field->get<double>() > 0) {
    int64_t limit = 0;
    c = FloorToInt64(*field, &limit);
    if (c != Conversion::kOk) return Fail("M", ConversionMessage(c));
    problem.usage_limit = limit;
  }

  double infinity = kAlpaInfinity;
  if (const Json* inf = Field(root, "infinity")) {
    c = ToDouble(*inf, &infinity);
    if (c != Conversion::kOk) return Fail("infinity", ConversionMessage(c));
  }
  // Costs at or above Alpa's infinity become ours; costs that are already >= 1e18 stay as
  // given, so that writing with "infinity": 1e18 and reading back is exact.
  auto map_cost = [infinity](double x) {
    return x >= infinity && x < kForbiddenCost ? kForbiddenCost : x;
  };

  std::vector<int64_t> s_len;
  std::vector<int64_t> s_follow;
  const uint64_t count = static_cast<uint64_t>(n);
  ALPA_RETURN_IF_ERROR(ReadInts(root, "s_len", 0, kInt32Max, count, "N", &s_len));
  ALPA_RETURN_IF_ERROR(ReadInts(root, "s_follow", -1, kInt32Max, count, "N", &s_follow));
  uint64_t strategies = 0;
  for (int64_t k : s_len) strategies += static_cast<uint64_t>(k);  // <= 2^31 * 2^31

  std::vector<std::array<int32_t, 2>> edges;
  std::vector<std::array<int32_t, 2>> aliases;
  ALPA_RETURN_IF_ERROR(ReadEndpoints(root, "E", n, &edges));
  ALPA_RETURN_IF_ERROR(ReadEndpoints(root, "A", n, &aliases));
  ALPA_RETURN_IF_ERROR(ReadLiveSets(root, n, &problem.live_sets));

  std::vector<double> cost_c;
  std::vector<double> cost_d;
  std::vector<int64_t> memory;
  ALPA_RETURN_IF_ERROR(ReadDoubles(root, "c", strategies, "sum(s_len)", &cost_c));
  ALPA_RETURN_IF_ERROR(ReadDoubles(root, "d", strategies, "sum(s_len)", &cost_d));
  ALPA_RETURN_IF_ERROR(ReadMemory(root, strategies, &memory));

  problem.nodes.resize(count);
  size_t offset = 0;
  for (size_t i = 0; i < problem.nodes.size(); ++i) {
    ShardingNode& node = problem.nodes[i];
    const size_t k = static_cast<size_t>(s_len[i]);
    node.follows = static_cast<int32_t>(s_follow[i]);
    node.costs.resize(k);
    node.usages.assign(memory.begin() + static_cast<std::ptrdiff_t>(offset),
                       memory.begin() + static_cast<std::ptrdiff_t>(offset + k));
    for (size_t s = 0; s < k; ++s) {
      const double sum = cost_c[offset + s] + cost_d[offset + s];
      if (!std::isfinite(sum)) {
        return Fail("", "c[" + std::to_string(offset + s) + "] + d[" + std::to_string(offset + s) +
                            "] overflows");
      }
      node.costs[s] = map_cost(sum);
    }
    offset += k;
  }

  std::vector<double> r;
  ALPA_RETURN_IF_ERROR(ReadDoubles(root, "r", MatrixEntries(edges, s_len),
                                   "sum over edges of s_len[u] * s_len[v]", &r));
  problem.edges.resize(edges.size());
  offset = 0;
  for (size_t e = 0; e < edges.size(); ++e) {
    ShardingEdge& edge = problem.edges[e];
    edge.u = edges[e][0];
    edge.v = edges[e][1];
    const size_t k = static_cast<size_t>(s_len[static_cast<size_t>(edge.u)] *
                                         s_len[static_cast<size_t>(edge.v)]);
    edge.costs.resize(k);
    for (size_t j = 0; j < k; ++j) edge.costs[j] = map_cost(r[offset + j]);
    offset += k;
  }

  std::vector<int64_t> v;
  ALPA_RETURN_IF_ERROR(ReadInts(root, "v", 0, 1, MatrixEntries(aliases, s_len),
                                "sum over aliases of s_len[u] * s_len[v]", &v));
  problem.aliases.resize(aliases.size());
  offset = 0;
  for (size_t a = 0; a < aliases.size(); ++a) {
    ShardingAlias& alias = problem.aliases[a];
    alias.u = aliases[a][0];
    alias.v = aliases[a][1];
    const size_t k = static_cast<size_t>(s_len[static_cast<size_t>(alias.u)] *
                                         s_len[static_cast<size_t>(alias.v)]);
    alias.forbidden.resize(k);
    for (size_t j = 0; j < k; ++j) alias.forbidden[j] = static_cast<uint8_t>(v[offset + j]);
    offset += k;
  }
  return problem;
}

namespace {

// Liveness as at most N sets (Alpa's L holds exactly N). From intervals: one set per time
// step when the largest hi is at most N; otherwise the maximal sets only (the live set at
// each time that some interval starts and the next event ends one), which imply all the
// others and are never more than N. Explicit live sets are written as they are.
Status LiveSetsForAlpa(const ShardingProblem& problem, std::vector<std::vector<int32_t>>* sets) {
  const size_t n = problem.nodes.size();
  if (problem.uses_live_sets()) {
    if (problem.live_sets.size() > n) {
      return Status(StatusCode::kUnsupported,
                    "alpa: the problem has " + std::to_string(problem.live_sets.size()) +
                        " live sets but Alpa's L holds at most N = " + std::to_string(n));
    }
    *sets = problem.live_sets;
    return Status::Ok();
  }
  int64_t horizon = 0;
  for (const ShardingNode& node : problem.nodes) {
    if (node.interval.hi > node.interval.lo) horizon = std::max(horizon, node.interval.hi);
  }
  if (horizon <= static_cast<int64_t>(n)) {
    sets->assign(static_cast<size_t>(horizon), {});
    for (size_t i = 0; i < n; ++i) {
      for (int64_t t = problem.nodes[i].interval.lo; t < problem.nodes[i].interval.hi; ++t) {
        (*sets)[static_cast<size_t>(t)].push_back(static_cast<int32_t>(i));
      }
    }
    return Status::Ok();
  }
  // Sweep over event times; at equal times ends (hi) come before starts (lo), as [lo, hi).
  struct Event {
    int64_t time;
    bool start;
    int32_t node;
  };
  std::vector<Event> events;
  for (size_t i = 0; i < n; ++i) {
    const UsageInterval& iv = problem.nodes[i].interval;
    if (iv.hi <= iv.lo) continue;
    events.push_back({iv.lo, true, static_cast<int32_t>(i)});
    events.push_back({iv.hi, false, static_cast<int32_t>(i)});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.start != b.start) return !a.start;
    return a.node < b.node;
  });
  sets->clear();
  std::set<int32_t> live;
  bool started = false;  // some interval started since the last set was emitted
  for (size_t i = 0; i < events.size();) {
    const int64_t time = events[i].time;
    bool any_end = false;
    for (size_t j = i; j < events.size() && events[j].time == time && !events[j].start; ++j) {
      any_end = true;
    }
    if (any_end && started) {
      sets->emplace_back(live.begin(), live.end());
      started = false;
    }
    for (; i < events.size() && events[i].time == time; ++i) {
      if (events[i].start) {
        live.insert(events[i].node);
        started = true;
      } else {
        live.erase(events[i].node);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> WriteAlpa(const ShardingProblem& problem) {
  std::vector<std::vector<int32_t>> sets;
  ALPA_RETURN_IF_ERROR(LiveSetsForAlpa(problem, &sets));
  const size_t n = problem.nodes.size();
  sets.resize(n);  // pad to exactly N sets; empty sets constrain nothing

  std::string out;
  size_t numbers = 0;
  for (const ShardingNode& node : problem.nodes) numbers += 3 * node.costs.size() + 2;
  for (const ShardingEdge& edge : problem.edges) numbers += edge.costs.size() + 2;
  for (const ShardingAlias& alias : problem.aliases) numbers += alias.forbidden.size() + 2;
  for (const auto& set : sets) numbers += set.size() + 1;
  out.reserve(numbers * 6 + problem.name.size() + 256);

  out += "{\"format\":\"alpa\",\"name\":";
  AppendString(problem.name, &out);
  out += ",\"N\":";
  AppendInt(static_cast<int64_t>(n), &out);
  // M <= 0 means "no limit" in Alpa, so a limit of 0 is written as 0.5 (read back as floor).
  out += ",\"M\":";
  if (!problem.usage_limit) {
    out += "-1";
  } else if (*problem.usage_limit == 0) {
    out += "0.5";
  } else {
    AppendInt(*problem.usage_limit, &out);
  }
  out += ",\"infinity\":1e18,\"s_len\":[";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    AppendInt(problem.nodes[i].strategy_count(), &out);
  }
  out += "],\"s_follow\":[";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ',';
    AppendInt(problem.nodes[i].follows, &out);
  }
  out += "],\"E\":[";
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    if (e > 0) out += ',';
    AppendInt(problem.edges[e].u, &out);
    out += ',';
    AppendInt(problem.edges[e].v, &out);
  }
  out += "],\"A\":[";
  for (size_t a = 0; a < problem.aliases.size(); ++a) {
    if (a > 0) out += ',';
    AppendInt(problem.aliases[a].u, &out);
    out += ',';
    AppendInt(problem.aliases[a].v, &out);
  }
  out += "],\"L\":[";
  for (size_t t = 0; t < n; ++t) {
    if (t > 0) out += ',';
    AppendInt(static_cast<int64_t>(sets[t].size()), &out);
  }
  for (const auto& set : sets) {
    for (int32_t node : set) {
      out += ',';
      AppendInt(node, &out);
    }
  }
  out += "],\"c\":[";
  bool first = true;
  for (const ShardingNode& node : problem.nodes) {
    for (double cost : node.costs) {
      if (!first) out += ',';
      first = false;
      AppendNumber(cost, &out);
    }
  }
  out += "],\"d\":[";
  first = true;
  for (const ShardingNode& node : problem.nodes) {
    for (size_t s = 0; s < node.costs.size(); ++s) {
      out += first ? "0" : ",0";
      first = false;
    }
  }
  out += "],\"m\":[";
  first = true;
  for (const ShardingNode& node : problem.nodes) {
    for (int32_t s = 0; s < node.strategy_count(); ++s) {
      if (!first) out += ',';
      first = false;
      AppendInt(node.usage(s), &out);
    }
  }
  out += "],\"r\":[";
  first = true;
  for (const ShardingEdge& edge : problem.edges) {
    for (double cost : edge.costs) {
      if (!first) out += ',';
      first = false;
      AppendNumber(cost, &out);
    }
  }
  out += "],\"v\":[";
  first = true;
  for (const ShardingAlias& alias : problem.aliases) {
    for (uint8_t f : alias.forbidden) {
      out += first ? "" : ",";
      out += f != 0 ? '1' : '0';
      first = false;
    }
  }
  out += "]}";
  return out;
}

}  // namespace alpa::io_internal

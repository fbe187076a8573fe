// The plan checker's layouts and simulated collectives (plan_check_internal.h).
#include <algorithm>
#include <string>
#include <utility>

#include "solvers/auto_sharding/plan_check_internal.h"

namespace alpa::plan_check {

bool Contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void Erase(std::vector<int32_t>& v, int32_t x) {
  v.erase(std::remove(v.begin(), v.end(), x), v.end());
}

std::vector<int32_t> SortedUnion(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

std::string MeshDimsText(const std::vector<int32_t>& dims) {
  if (dims.size() == 1) return "mesh dim " + std::to_string(dims[0]);
  std::string s = "mesh dims {";
  for (size_t i = 0; i < dims.size(); ++i) s += (i > 0 ? "," : "") + std::to_string(dims[i]);
  return s + "}";
}

std::string Quote(const ShardingSpec& spec) { return "'" + ToString(spec) + "'"; }

Status OpError(const Graph& graph, int32_t id, const std::string& what) {
  return InvalidArgument(DescribeOp(graph, id) + ": " + what);
}

// Drops mesh dims of size 1: they change nothing about the data a device holds.
ShardingSpec Canonical(const ShardingSpec& spec, const std::vector<int64_t>& mesh) {
  ShardingSpec out;
  out.dims.resize(spec.dims.size());
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    for (int32_t m : spec.dims[d]) {
      if (mesh[static_cast<size_t>(m)] > 1) out.dims[d].push_back(m);
    }
  }
  for (int32_t m : spec.partial) {
    if (mesh[static_cast<size_t>(m)] > 1) out.partial.push_back(m);
  }
  return out;
}

bool UsedAnywhere(const Layout& layout, int32_t m) {
  for (const MeshDimList& d : layout.spec.dims) {
    if (Contains(d, m)) return true;
  }
  return Contains(layout.spec.partial, m) || Contains(layout.max_pending, m);
}

// "" or a complaint naming the mesh dim used for two things.
std::string DuplicateMeshDim(const Layout& layout) {
  std::map<int32_t, std::string> where;
  auto use = [&](int32_t m, const std::string& what) -> std::string {
    auto [it, inserted] = where.emplace(m, what);
    if (inserted) return "";
    return "mesh dim " + std::to_string(m) + " would split two different things (" + it->second +
           " and " + what + ")";
  };
  for (size_t d = 0; d < layout.spec.dims.size(); ++d) {
    for (int32_t m : layout.spec.dims[d]) {
      std::string e = use(m, "result dim " + std::to_string(d));
      if (!e.empty()) return e;
    }
  }
  for (int32_t m : layout.spec.partial) {
    std::string e = use(m, "a partial sum");
    if (!e.empty()) return e;
  }
  for (int32_t m : layout.max_pending) {
    std::string e = use(m, "a partial maximum");
    if (!e.empty()) return e;
  }
  return "";
}

// ---- Collectives, simulated on a layout heading for `want` ----

// Where `want` puts mesh dim m: {tensor dim, position in its list}, or {-1, -1}.
std::pair<int32_t, int32_t> FindInSpec(const ShardingSpec& want, int32_t m) {
  for (size_t d = 0; d < want.dims.size(); ++d) {
    for (size_t i = 0; i < want.dims[d].size(); ++i) {
      if (want.dims[d][i] == m) return {static_cast<int32_t>(d), static_cast<int32_t>(i)};
    }
  }
  return {-1, -1};
}

// Appends m to the tensor dim where `want` has it. The mesh dims `want` lists before m on that
// dim are sliced locally first when the layout lacks them (free: every device keeps its piece,
// which is valid on partial sums too), so a reduce-scatter may land behind a free slice.
std::string PlaceAsWanted(Layout& layout, const ShardingSpec& want, int32_t m) {
  const auto [d, pos] = FindInSpec(want, m);
  if (d < 0) {
    return "the reader wants no tensor dim split over mesh dim " + std::to_string(m) + " (" +
           Quote(want) + ")";
  }
  MeshDimList& cur = layout.spec.dims[static_cast<size_t>(d)];
  const MeshDimList& w = want.dims[static_cast<size_t>(d)];
  if (cur.size() > static_cast<size_t>(pos) || !std::equal(cur.begin(), cur.end(), w.begin())) {
    return "tensor dim " + std::to_string(d) + " is already split as " + Quote(layout.spec) +
           ", which cannot take mesh dim " + std::to_string(m) + " where " + Quote(want) +
           " has it";
  }
  for (size_t i = cur.size(); i < static_cast<size_t>(pos); ++i) {
    if (UsedAnywhere(layout, w[i])) {
      return "mesh dim " + std::to_string(w[i]) + " must split tensor dim " + std::to_string(d) +
             " before mesh dim " + std::to_string(m) + ", but layout " + Quote(layout.spec) +
             " uses it elsewhere";
    }
    cur.push_back(w[i]);
  }
  cur.push_back(m);
  return "";
}

// Removes the mesh dims `ms` from the minor ends of the dims holding them (any order); records
// the tensor dim each came from.
std::string RemoveFromMinorEnds(Layout& layout, std::vector<int32_t> ms,
                                std::map<int32_t, int32_t>& from) {
  while (!ms.empty()) {
    bool progress = false;
    for (size_t i = 0; i < ms.size() && !progress; ++i) {
      for (size_t d = 0; d < layout.spec.dims.size(); ++d) {
        MeshDimList& list = layout.spec.dims[d];
        if (!list.empty() && list.back() == ms[i]) {
          list.pop_back();
          from[ms[i]] = static_cast<int32_t>(d);
          ms.erase(ms.begin() + static_cast<std::ptrdiff_t>(i));
          progress = true;
          break;
        }
      }
    }
    if (!progress) {
      return "no tensor dim of " + Quote(layout.spec) + " is split over mesh dim " +
             std::to_string(ms[0]) + " at its minor end";
    }
  }
  return "";
}

// Sorts mesh dims by where `want` puts them (tensor dim, then major to minor); ones it lacks
// go last (and are reported by PlaceAsWanted).
void SortByWantedPosition(std::vector<int32_t>& ms, const ShardingSpec& want) {
  std::stable_sort(ms.begin(), ms.end(), [&](int32_t a, int32_t b) {
    auto pa = FindInSpec(want, a), pb = FindInSpec(want, b);
    if (pa.first < 0) pa.first = static_cast<int32_t>(want.dims.size());
    if (pb.first < 0) pb.first = static_cast<int32_t>(want.dims.size());
    return pa < pb;
  });
}

std::string TakeFromPartial(Layout& layout, int32_t m) {
  if (Contains(layout.spec.partial, m)) {
    Erase(layout.spec.partial, m);
    return "";
  }
  if (Contains(layout.max_pending, m)) {
    Erase(layout.max_pending, m);
    return "";
  }
  return "the tensor " + Quote(layout.spec) + " is not a partial sum over mesh dim " +
         std::to_string(m);
}

// Applies one collective (its mesh dims of size 1 dropped) to `layout`; "" or what is wrong.
std::string ApplyCollective(Layout& layout, const PlannedCollective& c, const ShardingSpec& want,
                            const std::vector<int64_t>& mesh) {
  std::vector<int32_t> ms;
  for (int32_t m : c.mesh_dims) {
    if (mesh[static_cast<size_t>(m)] > 1) ms.push_back(m);
  }
  std::map<int32_t, int32_t> from;
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      for (int32_t m : ms) {
        std::string e = TakeFromPartial(layout, m);
        if (!e.empty()) return e;
      }
      return "";
    case CollectiveKind::kReduceScatter:
      for (int32_t m : ms) {
        std::string e = TakeFromPartial(layout, m);
        if (!e.empty()) return e;
      }
      SortByWantedPosition(ms, want);
      for (int32_t m : ms) {
        std::string e = PlaceAsWanted(layout, want, m);
        if (!e.empty()) return e;
      }
      return "";
    case CollectiveKind::kAllGather:
      return RemoveFromMinorEnds(layout, ms, from);
    case CollectiveKind::kAllToAll: {
      std::string e = RemoveFromMinorEnds(layout, ms, from);
      if (!e.empty()) return e;
      SortByWantedPosition(ms, want);
      for (int32_t m : ms) {
        e = PlaceAsWanted(layout, want, m);
        if (!e.empty()) return e;
        if (FindInSpec(want, m).first == from[m]) {
          return "it leaves mesh dim " + std::to_string(m) + " on tensor dim " +
                 std::to_string(from[m]);
        }
      }
      return "";
    }
    case CollectiveKind::kSendRecv:
      break;
  }
  return "send-recv is not an intra-op collective";
}

// What remains between `have` and `want` must be local: each tensor dim's mesh dims a prefix of
// the wanted ones (the rest is a free slice), and partial dims only where wanted (extra wanted
// partial dims are a zero fill).
std::string LocalDifference(const ShardingSpec& have, const ShardingSpec& want) {
  for (size_t d = 0; d < have.dims.size(); ++d) {
    const MeshDimList& h = have.dims[d];
    const MeshDimList& w = want.dims[d];
    if (h.size() > w.size() || !std::equal(h.begin(), h.end(), w.begin())) {
      return "it is laid out " + Quote(have) + " but read as " + Quote(want) + ": tensor dim " +
             std::to_string(d) + " needs communication that is not listed";
    }
  }
  for (int32_t m : have.partial) {
    if (!Contains(want.partial, m)) {
      return "it is laid out " + Quote(have) + " but read as " + Quote(want) +
             ": it is still a partial sum over mesh dim " + std::to_string(m) +
             " (no all-reduce / reduce-scatter over it is listed)";
    }
  }
  return "";
}

}  // namespace alpa::plan_check

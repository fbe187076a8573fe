// Internals of the independent plan checker (plan_check.h), shared by its files:
// plan_check.cc (the checks), plan_check_layout.cc (layouts and simulated collectives) and
// plan_check_rules.cc (the layout rules per op kind). Not an API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/sharding_spec.h"
#include "core/ir/graph.h"
#include "core/util/status.h"
#include "solvers/auto_sharding/auto_sharding.h"

namespace alpa::plan_check {

using MeshDimList = std::vector<int32_t>;

bool Contains(const std::vector<int32_t>& v, int32_t x);
void Erase(std::vector<int32_t>& v, int32_t x);
std::vector<int32_t> SortedUnion(std::vector<int32_t> a, const std::vector<int32_t>& b);
std::string MeshDimsText(const std::vector<int32_t>& dims);  // "mesh dim 0", "mesh dims 0, 1"
std::string Quote(const ShardingSpec& spec);                 // "'S0 R'"
Status OpError(const Graph& graph, int32_t id, const std::string& what);
// Drops mesh dims of size 1: they change nothing about the data a device holds.
ShardingSpec Canonical(const ShardingSpec& spec, const std::vector<int64_t>& mesh);

// A layout being derived: a spec plus the mesh dims over which a reduce_max left partial maxima
// (not sums: they can only be combined by an all-reduce / reduce-scatter with max).
struct Layout {
  ShardingSpec spec;
  std::vector<int32_t> max_pending;
};

// "" or why the layout uses a mesh dim twice.
std::string DuplicateMeshDim(const Layout& layout);
// Applies collective `c` to `layout`, heading for `want` (where a reduce-scatter or all-to-all puts
// its mesh dim); "" or why it does not apply.
std::string ApplyCollective(Layout& layout, const PlannedCollective& c, const ShardingSpec& want,
                            const std::vector<int64_t>& mesh);
// "" when `want` differs from `have` only by local work (slices at the minor end of a dim,
// zero-filled partial sums), else what differs.
std::string LocalDifference(const ShardingSpec& have, const ShardingSpec& want);

// Everything an op rule reads.
struct OpView {
  const Graph& graph;
  int32_t id;
  const Op& op;
  const std::vector<ShardingSpec>& in;  // canonical operand specs
  const ShardingSpec& claimed;          // canonical result spec
  const Dims& shape(size_t k) const { return graph.op(op.operands[k]).shape; }
};

// The layout the viewed op's local computation produces from the operand layouts it reads (rules at
// the top of plan_check_rules.cc); "" or why the operands do not fit the op.
std::string DeriveResult(const OpView& view, Layout& out);

}  // namespace alpa::plan_check

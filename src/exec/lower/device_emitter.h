// Emitting one device's share of SPMD work on a stage mesh: buffers, local ops, and the moves
// that take a value from one sharding spec to another (the plan's collectives and the local
// slices and zero-fills between them), as instructions of the device's program.
//
// A Value is a buffer plus the spec it holds its tensor in. Specs are canonical here: mesh dims
// of size 1 are dropped (a split into one piece or a sum of one addend changes nothing), so
// equal layouts compare equal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/cost_model.h"
#include "core/cluster/sharding_spec.h"
#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/program/program.h"

namespace alpa {

// A stage's logical mesh and its devices (physical ids) in row-major logical order.
struct MeshView {
  std::vector<int64_t> shape;
  std::vector<int64_t> devices;
};

struct Value {
  int32_t buffer = -1;
  ShardingSpec spec;
};

// Drops mesh dims of size 1 from `spec`.
ShardingSpec CanonicalSpec(const ShardingSpec& spec, const std::vector<int64_t>& mesh);

// What an emitted instruction is attributed to.
struct EmitTag {
  int32_t tensor = -1;
  int64_t microbatch = -1;
  InstructionOrigin origin = InstructionOrigin::kPlan;
  int32_t collective = -1;
  // Keep results unrounded (addends of a sum over microbatches; see Instruction::round).
  bool exact = false;
};

class DeviceEmitter {
 public:
  DeviceEmitter(DeviceProgram& program, const MeshView& mesh, int64_t logical_index, int32_t stage);

  DeviceProgram& program() { return program_; }
  const MeshView& mesh() const { return mesh_; }
  int64_t logical_index() const { return logical_; }
  int32_t device() const { return program_.device; }
  int64_t coord(int32_t mesh_dim) const { return coords_[static_cast<size_t>(mesh_dim)]; }

  int32_t NewBuffer(const std::string& name, const Dims& shape, DType dtype, int32_t tensor,
                    bool persistent);
  void Emit(Instruction instruction, const EmitTag& tag);

  // The local shape of a tensor of `shape` under `spec` on this mesh.
  Result<Dims> LocalShape(const ShardingSpec& spec, const Dims& shape) const;
  // The box of the global tensor this device holds under `spec`.
  void TileBox(const ShardingSpec& spec, const Dims& shape, std::vector<int64_t>& offsets,
               std::vector<int64_t>& sizes) const;
  // Physical ids of the devices that differ from this one only on `mesh_dims`, ordered
  // mixed-radix with the first mesh dim major; and this device's position among them.
  std::vector<int32_t> GroupOver(const std::vector<int32_t>& mesh_dims) const;

  // Applies one collective of `kind` over `mesh_dims` to `value` (a tensor of `shape` and
  // `dtype`), heading for layout `want` (where a reduce-scatter or all-to-all puts its mesh
  // dims), as plan_check.h defines the moves; `reduce` for all-reduce / reduce-scatter.
  Result<Value> ApplyCollective(const Value& value, const Dims& shape, DType dtype,
                                CollectiveKind kind, std::vector<int32_t> mesh_dims,
                                const ShardingSpec& want, CollectiveReduce reduce,
                                const EmitTag& tag, const std::string& name);
  // The local work from `value`'s layout to `want`: slices at the minor end of tensor dims and
  // zero-filled partial sums. kInternal when more than local work is needed.
  Result<Value> LocalTo(const Value& value, const Dims& shape, DType dtype,
                        const ShardingSpec& want, const EmitTag& tag, const std::string& name);

 private:
  Result<Value> AllGather(const Value& value, const Dims& shape, DType dtype,
                          const std::vector<int32_t>& mesh_dims, const EmitTag& tag,
                          const std::string& name);
  Result<Value> ReduceScatter(const Value& value, const Dims& shape, DType dtype,
                              const std::vector<int32_t>& mesh_dims, const ShardingSpec& want,
                              CollectiveReduce reduce, const EmitTag& tag, const std::string& name);
  Result<Value> AllToAll(const Value& value, const Dims& shape, DType dtype,
                         const std::vector<int32_t>& mesh_dims, const ShardingSpec& want,
                         const EmitTag& tag, const std::string& name);

  DeviceProgram& program_;
  const MeshView& mesh_;
  int64_t logical_;
  int32_t stage_;
  std::vector<int64_t> coords_;
};

}  // namespace alpa

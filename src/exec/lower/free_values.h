// Free values (ops computed from constants alone, made again at each use) in a reader's layout.
// A device need not make a free value whole and slice its tile: a constant's tile is the same
// splat at the tile's shape, an elementwise op's tile is the op over its operands' tiles, and a
// broadcast's tile is the broadcast of its operand's matching tile. An iota's values depend on
// where its tile lies (and other ops mix elements), so those are made whole.
#pragma once

#include <cstdint>

#include "core/cluster/sharding_spec.h"
#include "core/ir/graph.h"

namespace alpa {

// The layout of broadcast `b`'s operand (of `operand_shape`) under result layout `want`: each
// operand dim that the broadcast maps to an output dim of the same size is split as that output
// dim; a size-1 dim broadcast to more is whole. Partial sums carry over.
ShardingSpec BroadcastOperandLayout(const Op& b, const Dims& operand_shape,
                                    const ShardingSpec& want);

// Whether op `id` of `graph`, a free value, can be computed directly in layout `want` from its
// operands computed in theirs (see the top of this file): any op whole (replicated); a constant
// in every layout; an elementwise op or a broadcast where its operands can be in the layouts it
// maps `want` to. Never with partial sums.
bool FreeValueTiles(const Graph& graph, int32_t id, const ShardingSpec& want);

}  // namespace alpa

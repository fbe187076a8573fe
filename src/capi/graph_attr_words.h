// The int64 attribute words of alpa_graph_add_ops / alpa_graph_op_attrs: one encoder and one
// decoder, so that the per-kind layout documented at the ALPA_OP_* constants lives in one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa::capi {

// The words of op.attrs for op.kind. Attributes a kind does not read are not encoded.
std::vector<int64_t> EncodeAttrWords(OpKind kind, const OpAttrs& attrs);

// Sets *attrs from `count` words (plus `value` for constant and pad). Errors are
// kInvalidGraph without the op's name (the caller prefixes it): "attrs: 3 words, expected ...".
Status DecodeAttrWords(OpKind kind, const int64_t* words, size_t count, double value,
                       OpAttrs* attrs);

}  // namespace alpa::capi

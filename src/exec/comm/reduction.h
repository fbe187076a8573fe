// The one reduction every communicator uses: inputs combined in group order, element by element,
// so the same inputs give the same bits on every rank and in every run.
#pragma once

#include <cstdint>

#include "exec/comm/communicator.h"

namespace alpa {

// out[e] = in[0][e] op in[1][e] op ... op in[n-1][e] for e in [0, count), folded left in the
// order of `inputs`. `out` may alias none of the inputs except inputs[0].
void ReduceInOrder(ReduceOp op, const double* const* inputs, int64_t input_count, int64_t count,
                   double* out);

}  // namespace alpa

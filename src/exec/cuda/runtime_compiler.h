// Compiling CUDA source at run time (NVRTC) into a cubin for one GPU architecture, with the
// backend's own headers that such source may include: core/ir/op_kind.h, core/util/dtype_enum.h,
// exec/cuda/float_math.h, exec/cuda/kernel_math.h and exec/cuda/packed_elements.h, embedded in
// the library at build time (runtime_headers.h). Compiling needs no GPU. Results are cached for
// the process by source and architecture, so that the runners of one plan (and the groups of
// every layer and microbatch) compile a kernel once.
#pragma once

#include <string>

#include "core/util/status.h"

namespace alpa {
namespace cuda {

// The cubin of `source` for compute capability major.minor (e.g. 9.0), or kInternal naming
// `what` with the compiler's log.
Result<std::string> CompileToCubin(const std::string& source, int major, int minor,
                                   const std::string& what);

}  // namespace cuda
}  // namespace alpa

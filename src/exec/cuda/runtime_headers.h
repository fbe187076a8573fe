// The headers that kernels compiled at run time may include (runtime_compiler.h), as text
// embedded at build time (src/CMakeLists.txt writes their definitions from the files).
#pragma once

namespace alpa {
namespace cuda {

// kRuntimeHeaderCount names ("exec/cuda/float_math.h", ...) and their texts.
extern const int kRuntimeHeaderCount;
extern const char* const kRuntimeHeaderNames[];
extern const char* const kRuntimeHeaderTexts[];

}  // namespace cuda
}  // namespace alpa

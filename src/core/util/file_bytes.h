// Reading a whole file into memory, shared by the file readers (problems, graphs, clusters).
#pragma once

#include <string>

#include "core/util/status.h"

namespace alpa {

// The bytes of the file at `path`, read in binary mode. kIo "cannot open <path>: <reason>" or
// "cannot read <path>: <reason>"; kOutOfMemory "out of memory while reading <path>".
Result<std::string> ReadFileBytes(const std::string& path);

}  // namespace alpa

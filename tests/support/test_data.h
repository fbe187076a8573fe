// Where test inputs live: tests/golden in the checkout, and the shared IOPDDL benchmarks beside it.
#pragma once

#include <string>

namespace alpa::testing {

// Path of a file in tests/golden.
std::string GoldenPath(const std::string& name);
// Path of a file in ../shared/data/iopddl, or "" when that file is not there.
std::string SharedDataPath(const std::string& name);

}  // namespace alpa::testing

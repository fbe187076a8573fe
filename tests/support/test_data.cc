#include "support/test_data.h"

#include <fstream>

namespace alpa::testing {

std::string GoldenPath(const std::string& name) {
  return std::string(ALPA_TEST_DATA_DIR) + "/" + name;
}

std::string SharedDataPath(const std::string& name) {
  const std::string path = std::string(ALPA_SHARED_DATA_DIR) + "/" + name;
  return std::ifstream(path).good() ? path : std::string();
}

}  // namespace alpa::testing

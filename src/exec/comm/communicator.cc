#include "exec/comm/communicator.h"

namespace alpa {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
  }
  return "unknown";
}

}  // namespace alpa

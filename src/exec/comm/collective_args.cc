#include "exec/comm/collective_args.h"

#include <cstddef>
#include <limits>
#include <vector>

namespace alpa {

std::string DescribeGroup(const DeviceGroup& group) {
  std::string text = "{";
  for (size_t i = 0; i < group.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(group[i]);
  }
  return text + "}";
}

Status CheckGroup(const char* call, const DeviceGroup& group, int32_t caller, int32_t world_size,
                  int32_t* position) {
  const std::string where = std::string(call) + ": group " + DescribeGroup(group);
  if (group.empty()) return InvalidArgument(std::string(call) + ": the group is empty");
  if (group.size() > static_cast<size_t>(world_size)) {
    return InvalidArgument(where + " has " + std::to_string(group.size()) +
                           " ranks, more than the world's " + std::to_string(world_size));
  }
  std::vector<int32_t> seen_at(static_cast<size_t>(world_size), -1);
  int32_t found = -1;
  for (size_t i = 0; i < group.size(); ++i) {
    const int32_t member = group[i];
    const std::string element = where + ": [" + std::to_string(i) + "] = " + std::to_string(member);
    if (member < 0 || member >= world_size) {
      return InvalidArgument(element + " is not a rank of the world [0, " +
                             std::to_string(world_size) + ")");
    }
    if (seen_at[static_cast<size_t>(member)] >= 0) {
      return InvalidArgument(element + " repeats [" +
                             std::to_string(seen_at[static_cast<size_t>(member)]) + "]");
    }
    seen_at[static_cast<size_t>(member)] = static_cast<int32_t>(i);
    if (member == caller) found = static_cast<int32_t>(i);
  }
  if (found < 0) {
    return InvalidArgument(where + " does not contain the calling rank " + std::to_string(caller));
  }
  *position = found;
  return Status::Ok();
}

Status CheckBuffers(const char* call, int64_t count, int64_t chunks, const void* in,
                    const void* out) {
  if (count < 0) {
    return InvalidArgument(std::string(call) + ": count " + std::to_string(count) + " is negative");
  }
  constexpr int64_t kMaxValues =
      std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(double));
  if (chunks > 0 && count > kMaxValues / chunks) {
    return InvalidArgument(std::string(call) + ": count " + std::to_string(count) + " times " +
                           std::to_string(chunks) + " chunks overflows a byte count");
  }
  if (count > 0 && in == nullptr) {
    return InvalidArgument(std::string(call) + ": the input buffer is null with count " +
                           std::to_string(count));
  }
  if (count > 0 && out == nullptr) {
    return InvalidArgument(std::string(call) + ": the output buffer is null with count " +
                           std::to_string(count));
  }
  return Status::Ok();
}

Status CheckPeer(const char* call, const char* peer_role, int32_t peer, int32_t world_size,
                 int64_t tag) {
  if (peer < 0 || peer >= world_size) {
    return InvalidArgument(std::string(call) + ": " + peer_role + " rank " + std::to_string(peer) +
                           " is not a rank of the world [0, " + std::to_string(world_size) + ")");
  }
  if (tag < 0) {
    return InvalidArgument(std::string(call) + ": tag " + std::to_string(tag) + " is negative");
  }
  return Status::Ok();
}

Status RecvCountMismatch(int32_t receiver, int32_t sender, int64_t tag, int64_t expected,
                         int64_t received) {
  return InvalidArgument("Recv: rank " + std::to_string(receiver) + " expected " +
                         std::to_string(expected) + " values from rank " + std::to_string(sender) +
                         " with tag " + std::to_string(tag) + ", but the message holds " +
                         std::to_string(received));
}

Status AbortedStatus(int32_t failed_rank, const Status& cause) {
  const std::string message = cause.message().empty() ? "aborted" : cause.message();
  return Status(StatusCode::kCancelled,
                "rank " + std::to_string(failed_rank) + " failed: " + message);
}

}  // namespace alpa

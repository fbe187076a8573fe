// ALPA_RENDEZVOUS and its companions, read from the environment.
#include <cstdlib>
#include <string>

#include "exec/comm/rendezvous.h"

namespace alpa {

namespace {

constexpr const char* kExpected = "expected file:/path, tcp:host:port or mpi";

Status BadSpec(const std::string& text, const std::string& problem) {
  return InvalidArgument("ALPA_RENDEZVOUS \"" + text + "\": " + problem);
}

bool AllDigits(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Result<RendezvousSpec> ParseTcp(const std::string& text, const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return BadSpec(text, "no port: expected tcp:host:port");
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  // "[::1]:29500": an IPv6 address in brackets.
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return BadSpec(text, "the host is empty: expected tcp:host:port");
  // At most 5 digits, so the value cannot overflow before the range check.
  if (!AllDigits(port) || port.size() > 5 || std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return BadSpec(text, "port \"" + port + "\" is not a number in [1, 65535]");
  }
  RendezvousSpec spec;
  spec.kind = RendezvousKind::kTcp;
  spec.host = host;
  spec.port = static_cast<uint16_t>(std::stoi(port));
  spec.text = text;
  return spec;
}

// Open MPI, MPICH (Hydra) and PMIx launchers set these in every process they start.
bool UnderMpirun(const std::function<const char*(const char*)>& lookup) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (lookup(name) != nullptr) return true;
  }
  return false;
}

Status ParseNonNegativeInt(const char* name, const char* value, int64_t upper, int64_t* out) {
  const std::string text = value;
  if (!AllDigits(text) || text.size() > 9 || std::stoll(text) > upper) {
    return InvalidArgument(std::string(name) + " \"" + text + "\" is not an integer in [0, " +
                           std::to_string(upper) + "]");
  }
  *out = std::stoll(text);
  return Status::Ok();
}

}  // namespace

Result<RendezvousSpec> ParseRendezvousSpec(const std::string& text) {
  if (text.empty()) return InvalidArgument(std::string("ALPA_RENDEZVOUS is empty: ") + kExpected);
  if (text == "mpi") {
    RendezvousSpec spec;
    spec.kind = RendezvousKind::kMpi;
    spec.text = text;
    return spec;
  }
  const size_t colon = text.find(':');
  const std::string scheme = colon == std::string::npos ? text : text.substr(0, colon);
  if (colon == std::string::npos || (scheme != "file" && scheme != "tcp")) {
    return BadSpec(text, "unknown kind \"" + scheme + "\": " + kExpected);
  }
  const std::string rest = text.substr(colon + 1);
  if (scheme == "tcp") return ParseTcp(text, rest);
  if (rest.empty()) return BadSpec(text, "the path is empty: expected file:/path");
  RendezvousSpec spec;
  spec.kind = RendezvousKind::kFile;
  spec.path = rest;
  spec.text = text;
  return spec;
}

Result<RendezvousConfig> RendezvousConfigFromEnvironment(
    const std::function<const char*(const char*)>& lookup) {
  RendezvousConfig config;
  const char* spec_text = lookup("ALPA_RENDEZVOUS");
  if (spec_text == nullptr) {
    if (!UnderMpirun(lookup)) {
      return InvalidArgument(std::string("ALPA_RENDEZVOUS is not set (and this process does not "
                                         "run under mpirun): ") +
                             kExpected);
    }
    spec_text = "mpi";
  }
  Result<RendezvousSpec> spec = ParseRendezvousSpec(spec_text);
  if (!spec.ok()) return spec.status();
  config.spec = spec.value();
  const char* timeout = lookup("ALPA_RENDEZVOUS_TIMEOUT_S");
  if (timeout != nullptr) {
    int64_t seconds = 0;
    ALPA_RETURN_IF_ERROR(
        ParseNonNegativeInt("ALPA_RENDEZVOUS_TIMEOUT_S", timeout, 86400, &seconds));
    if (seconds == 0) return InvalidArgument("ALPA_RENDEZVOUS_TIMEOUT_S \"0\": must be at least 1");
    config.timeout = std::chrono::seconds(seconds);
  }
  if (config.spec.kind == RendezvousKind::kMpi) return config;
  const char* rank = lookup("ALPA_RANK");
  const char* size = lookup("ALPA_WORLD_SIZE");
  if (rank == nullptr || size == nullptr) {
    return InvalidArgument("ALPA_RENDEZVOUS \"" + config.spec.text + "\" needs ALPA_RANK and " +
                           "ALPA_WORLD_SIZE (" +
                           (rank == nullptr ? "ALPA_RANK" : "ALPA_WORLD_SIZE") + " is not set)");
  }
  int64_t world_size = 0;
  int64_t own_rank = 0;
  ALPA_RETURN_IF_ERROR(ParseNonNegativeInt("ALPA_WORLD_SIZE", size, 1 << 20, &world_size));
  ALPA_RETURN_IF_ERROR(ParseNonNegativeInt("ALPA_RANK", rank, 1 << 20, &own_rank));
  if (world_size < 1) return InvalidArgument("ALPA_WORLD_SIZE \"0\": must be at least 1");
  if (own_rank >= world_size) {
    return InvalidArgument("ALPA_RANK " + std::to_string(own_rank) +
                           " is not below ALPA_WORLD_SIZE " + std::to_string(world_size));
  }
  config.rank = static_cast<int32_t>(own_rank);
  config.world_size = static_cast<int32_t>(world_size);
  return config;
}

Result<RendezvousConfig> RendezvousConfigFromEnvironment() {
  return RendezvousConfigFromEnvironment([](const char* name) { return std::getenv(name); });
}

}  // namespace alpa

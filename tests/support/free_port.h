// A loopback TCP port for tests that listen (the rendezvous, its watchdog).
#pragma once

#include <cstdint>

namespace alpa::testing {

// A port nobody listens on right now (the kernel's choice for an ephemeral bind).
uint16_t FreePort();

}  // namespace alpa::testing

// NCCL opened at run time: the NCCL communicator calls NCCL through a table of function
// pointers (NcclApi) resolved with dlopen/dlsym on first use, and libalpa does not link
// libnccl.so.2. Why: a process holds one library per soname, and the first one loaded serves
// every later library that needs it. PyTorch's CUDA wheels bring their own, newer NCCL under the
// same name (libnccl.so.2); a libalpa that linked the system's NCCL loaded it at `import alpa`,
// and a later `import torch` then failed ("undefined symbol: ncclCommResume"). Loaded on first
// use, NCCL is only in the process once an NCCL communicator is created, and everything else
// (the CPU path, the CUDA backend with the thread communicator) runs where NCCL is absent.
//
// Which library:
//   - ALPA_NCCL_LIBRARY when set (a path, or a name the dynamic linker searches), else
//     libnccl.so.2 (found through LD_LIBRARY_PATH, the runpath, ldconfig's cache).
//   - An NCCL already loaded in the process (PyTorch's, say) is reused, looked for first with
//     RTLD_NOLOAD: one NCCL per process, so the library that loaded it keeps the version it
//     needs, and the two never hold separate copies of NCCL's global state (its proxy threads,
//     network plugins, environment). For a name (libnccl.so.2) glibc matches the sonames of
//     loaded libraries, so it would hand back that copy anyway; the explicit look-up lets the
//     table say so. A path matches only that very file: ALPA_NCCL_LIBRARY naming another file
//     loads a second NCCL beside the first.
//   - Opened with RTLD_LOCAL, so NCCL's symbols do not join the global scope and resolve no
//     other library's references. RTLD_LOCAL does not stop the soname match above: a library
//     loaded after the first NCCL communicator and needing libnccl.so.2 gets this copy (import
//     torch before creating one, or point ALPA_NCCL_LIBRARY at torch's NCCL).
//   - The library stays loaded for the life of the process (NCCL keeps threads and global
//     state); the table is valid from then on.
//
// Versions: the NCCL found must be 2.x with x >= 18 (ncclCommSplit with a non-blocking config,
// NCCL_SPLIT_NOCOLOR; ncclCommInitRankConfig, ncclCommFinalize and ncclGetLastError are older).
// NCCL appends fields to ncclConfig_t and reads only as much of a caller's config as it knows,
// so headers newer than the library are fine.
#pragma once

#include <nccl.h>

#include <string>

#include "core/util/status.h"

namespace alpa {
namespace cuda {

// The oldest NCCL the communicator runs on, as ncclGetVersion reports it (NCCL_VERSION(2,18,0)).
constexpr int kMinimumNcclVersion = 21800;
// NCCL 3 would be another ABI (and another soname).
constexpr int kFirstUnsupportedNcclVersion = 30000;

// The default library name, when ALPA_NCCL_LIBRARY is unset or empty.
constexpr const char* kNcclLibraryName = "libnccl.so.2";

// Every NCCL function the communicator calls, typed from nccl.h.
struct NcclApi {
  std::string library;  // what was asked for (a name or a path)
  std::string path;     // the file the dynamic linker loaded
  bool reused = false;  // already loaded in the process before alpa asked for it
  int version = 0;      // ncclGetVersion's code (2.18.0 is 21800)

  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclGetLastError) GetLastError = nullptr;
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&ncclCommSplit) CommSplit = nullptr;
  decltype(&ncclCommFinalize) CommFinalize = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
};

// The process's NCCL: the library named by ALPA_NCCL_LIBRARY (else libnccl.so.2), opened and
// checked on the first call; every later call returns the same table, or the same error.
// Thread-safe.
Result<const NcclApi*> LoadNccl();

// Opens `library` (reusing it when already loaded), resolves every function of NcclApi and
// checks the version. Not cached: each call opens the library again (a loaded library only gains
// a reference). kUnsupported, naming the library and what to install or set, when it cannot be
// opened; kUnsupported naming the symbol when one is missing, or the version when it is outside
// [kMinimumNcclVersion, kFirstUnsupportedNcclVersion). On failure the library is closed again.
Result<NcclApi> OpenNccl(const std::string& library);

// "2.18.3" for 21803 (and "2.9.9" for the codes before 2.9, 2909).
std::string NcclVersionText(int version);

}  // namespace cuda
}  // namespace alpa

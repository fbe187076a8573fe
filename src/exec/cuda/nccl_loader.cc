#include "exec/cuda/nccl_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <utility>

namespace alpa {
namespace cuda {

namespace {

constexpr const char* kInstallHint =
    "install NCCL 2.18 or newer (Debian/Ubuntu with NVIDIA's repository: libnccl2; pip: "
    "nvidia-nccl-cu12 or nvidia-nccl-cu13), make libnccl.so.2 findable (LD_LIBRARY_PATH or "
    "ldconfig), or set ALPA_NCCL_LIBRARY to its path";

// dlerror's text for the last failure, or `fallback` when it has none.
std::string LastDlError(const char* fallback) {
  const char* error = dlerror();
  return error != nullptr ? error : fallback;
}

// The file behind a handle, for messages; the name asked for when the linker does not say.
std::string LoadedPath(void* handle, const std::string& library) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return library;
}

// Already in the process (reused = true), else opened now.
Result<void*> OpenHandle(const std::string& library, bool* reused) {
  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  *reused = handle != nullptr;
  if (handle == nullptr) handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Status(StatusCode::kUnsupported, "the NCCL communicator needs NCCL: cannot load '" +
                                                library + "' (" + LastDlError("dlopen failed") +
                                                "); " + kInstallHint);
  }
  return handle;
}

template <typename Function>
Status Resolve(void* handle, const std::string& path, const char* symbol, Function* function) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    return Status(StatusCode::kUnsupported,
                  "the NCCL communicator needs NCCL 2.18 or newer: " + path + " has no symbol " +
                      symbol + " (" + LastDlError("not found") + "); " + kInstallHint);
  }
  *function = reinterpret_cast<Function>(address);
  return Status::Ok();
}

Status ResolveAll(void* handle, NcclApi* api) {
  const std::string& path = api->path;
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclGetVersion", &api->GetVersion));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclGetErrorString", &api->GetErrorString));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclGetLastError", &api->GetLastError));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclGetUniqueId", &api->GetUniqueId));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclCommInitRankConfig", &api->CommInitRankConfig));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclCommSplit", &api->CommSplit));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclCommFinalize", &api->CommFinalize));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclCommDestroy", &api->CommDestroy));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclCommAbort", &api->CommAbort));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclCommGetAsyncError", &api->CommGetAsyncError));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclAllReduce", &api->AllReduce));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclReduceScatter", &api->ReduceScatter));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclAllGather", &api->AllGather));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclSend", &api->Send));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclRecv", &api->Recv));
  ALPA_RETURN_IF_ERROR(Resolve(handle, path, "ncclGroupStart", &api->GroupStart));
  return Resolve(handle, path, "ncclGroupEnd", &api->GroupEnd);
}

Status CheckVersion(NcclApi* api) {
  const ncclResult_t asked = api->GetVersion(&api->version);
  if (asked != ncclSuccess) {
    return Status(StatusCode::kUnsupported, "the NCCL communicator cannot use " + api->path +
                                                ": ncclGetVersion failed (" +
                                                api->GetErrorString(asked) + ")");
  }
  if (api->version < kMinimumNcclVersion || api->version >= kFirstUnsupportedNcclVersion) {
    return Status(StatusCode::kUnsupported,
                  "the NCCL communicator needs NCCL 2.x with x >= 18: " + api->path + " is NCCL " +
                      NcclVersionText(api->version) + (api->reused ? " (already loaded)" : "") +
                      "; " + kInstallHint);
  }
  return Status::Ok();
}

std::string LibraryFromEnvironment() {
  const char* named = std::getenv("ALPA_NCCL_LIBRARY");
  return named != nullptr && named[0] != '\0' ? named : kNcclLibraryName;
}

}  // namespace

std::string NcclVersionText(int version) {
  // NCCL_VERSION_CODE is X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
  const int major = version >= 10000 ? version / 10000 : version / 1000;
  const int minor = version >= 10000 ? version % 10000 / 100 : version % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(version % 100);
}

Result<NcclApi> OpenNccl(const std::string& library) {
  NcclApi api;
  api.library = library;
  Result<void*> handle = OpenHandle(library, &api.reused);
  ALPA_RETURN_IF_ERROR(handle.status());
  api.path = LoadedPath(handle.value(), library);
  Status checked = ResolveAll(handle.value(), &api);
  if (checked.ok()) checked = CheckVersion(&api);
  if (!checked.ok()) {
    dlclose(handle.value());
    return checked;
  }
  return api;
}

Result<const NcclApi*> LoadNccl() {
  // Opened once per process (a function-local static: thread-safe initialisation) and never
  // closed; an error is kept too, so every caller gets the same answer.
  static const Result<NcclApi> loaded = OpenNccl(LibraryFromEnvironment());
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

}  // namespace cuda
}  // namespace alpa

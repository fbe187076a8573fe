#include "exec/cuda/nccl_loader.h"

#include <utility>

#include "exec/cuda/shared_library.h"

namespace alpa {
namespace cuda {

namespace {

constexpr const char* kInstallHint =
    "install NCCL 2.18 or newer (Debian/Ubuntu with NVIDIA's repository: libnccl2; pip: "
    "nvidia-nccl-cu12 or nvidia-nccl-cu13), make libnccl.so.2 findable (LD_LIBRARY_PATH or "
    "ldconfig), or set ALPA_NCCL_LIBRARY to its path";

const LibraryMessages& NcclMessages() {
  static const LibraryMessages messages{"the NCCL communicator needs NCCL",
                                        "the NCCL communicator needs NCCL 2.18 or newer",
                                        kInstallHint};
  return messages;
}

Status ResolveAll(const SharedLibrary& library, NcclApi* api) {
  const LibraryMessages& m = NcclMessages();
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclGetVersion", m, &api->GetVersion));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclGetErrorString", m, &api->GetErrorString));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclGetLastError", m, &api->GetLastError));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclGetUniqueId", m, &api->GetUniqueId));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclCommInitRankConfig", m, &api->CommInitRankConfig));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclCommSplit", m, &api->CommSplit));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclCommFinalize", m, &api->CommFinalize));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclCommDestroy", m, &api->CommDestroy));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclCommAbort", m, &api->CommAbort));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclCommGetAsyncError", m, &api->CommGetAsyncError));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclAllReduce", m, &api->AllReduce));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclReduceScatter", m, &api->ReduceScatter));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclAllGather", m, &api->AllGather));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclSend", m, &api->Send));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclRecv", m, &api->Recv));
  ALPA_RETURN_IF_ERROR(Resolve(library, "ncclGroupStart", m, &api->GroupStart));
  return Resolve(library, "ncclGroupEnd", m, &api->GroupEnd);
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

}  // namespace

std::string NcclVersionText(int version) {
  // NCCL_VERSION_CODE is X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
  const int major = version >= 10000 ? version / 10000 : version / 1000;
  const int minor = version >= 10000 ? version % 10000 / 100 : version % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(version % 100);
}

Result<NcclApi> OpenNccl(const std::string& library) {
  return OpenFunctionTable<NcclApi>(library, NcclMessages(), ResolveAll, CheckVersion);
}

Result<const NcclApi*> LoadNccl() {
  // Opened once per process (a function-local static: thread-safe initialisation) and never
  // closed; an error is kept too, so every caller gets the same answer.
  static const Result<NcclApi> loaded =
      OpenNccl(LibraryFromEnvironment("ALPA_NCCL_LIBRARY", kNcclLibraryName));
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

}  // namespace cuda
}  // namespace alpa

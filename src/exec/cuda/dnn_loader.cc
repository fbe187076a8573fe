#include "exec/cuda/dnn_loader.h"

#include <string>

#include "exec/cuda/shared_library.h"

namespace alpa {
namespace cuda {
namespace {

constexpr const char* kInstallHint =
    "install cuDNN 9 (Debian/Ubuntu with NVIDIA's repository: libcudnn9-cuda-12 or "
    "libcudnn9-cuda-13; pip: nvidia-cudnn-cu12 or nvidia-cudnn-cu13), make libcudnn.so.9 "
    "findable (LD_LIBRARY_PATH or ldconfig), or set ALPA_CUDNN_LIBRARY to its path";

const LibraryMessages& DnnMessages() {
  static const LibraryMessages messages{"cuDNN convolutions need cuDNN",
                                        "cuDNN convolutions need cuDNN 9", kInstallHint};
  return messages;
}

Status ResolveAll(const SharedLibrary& library, DnnApi* api) {
  const LibraryMessages& m = DnnMessages();
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnGetVersion", m, &api->GetVersion));
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnGetErrorString", m, &api->GetErrorString));
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnGetLastErrorString", m, &api->GetLastErrorString));
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnCreate", m, &api->Create));
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnDestroy", m, &api->Destroy));
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnSetStream", m, &api->SetStream));
  ALPA_RETURN_IF_ERROR(
      Resolve(library, "cudnnBackendCreateDescriptor", m, &api->BackendCreateDescriptor));
  ALPA_RETURN_IF_ERROR(
      Resolve(library, "cudnnBackendDestroyDescriptor", m, &api->BackendDestroyDescriptor));
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnBackendSetAttribute", m, &api->BackendSetAttribute));
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnBackendGetAttribute", m, &api->BackendGetAttribute));
  ALPA_RETURN_IF_ERROR(Resolve(library, "cudnnBackendFinalize", m, &api->BackendFinalize));
  return Resolve(library, "cudnnBackendExecute", m, &api->BackendExecute);
}

Status CheckVersion(DnnApi* api) {
  api->version = api->GetVersion();
  if (api->version < kMinimumDnnVersion || api->version >= kFirstUnsupportedDnnVersion) {
    return Status(StatusCode::kUnsupported,
                  "cuDNN convolutions need cuDNN 9: " + api->path + " is cuDNN " +
                      std::to_string(api->version / 10000) + "." +
                      std::to_string(api->version % 10000 / 100) + "." +
                      std::to_string(api->version % 100) +
                      (api->reused ? " (already loaded)" : "") + "; " + kInstallHint);
  }
  return Status::Ok();
}

}  // namespace

Result<DnnApi> OpenDnn(const std::string& library) {
  return OpenFunctionTable<DnnApi>(library, DnnMessages(), ResolveAll, CheckVersion);
}

Result<const DnnApi*> LoadDnn() {
  // Opened once per process and never closed; an error is kept too.
  static const Result<DnnApi> loaded =
      OpenDnn(LibraryFromEnvironment("ALPA_CUDNN_LIBRARY", kDnnLibraryName));
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

}  // namespace cuda
}  // namespace alpa

// cuDNN opened at run time, as NCCL is (nccl_loader.h, shared_library.h): the convolutions call
// cuDNN through a table of function pointers (DnnApi) resolved on first use, and libalpa does
// not link libcudnn.so.9. PyTorch's and JAX's CUDA wheels bring their own cuDNN under that
// soname; a libalpa that linked the system's would load it first and hand it to them. Loaded on
// first use (the first runner of a program with convolutions), a cuDNN already in the process
// is reused, and everything else runs where cuDNN is absent (convolutions on the direct kernel).
//
// Which library: ALPA_CUDNN_LIBRARY when set (a path, or a name the dynamic linker searches),
// else libcudnn.so.9. It must be cuDNN 9 (cudnnGetVersion 90000 and up, below 100000): the
// graph API's backend descriptors, whose ABI cuDNN keeps within a major version.
#pragma once

#include <cudnn.h>

#include <string>

#include "core/util/status.h"

namespace alpa {
namespace cuda {

constexpr size_t kMinimumDnnVersion = 90000;
constexpr size_t kFirstUnsupportedDnnVersion = 100000;
// The default library name, when ALPA_CUDNN_LIBRARY is unset or empty.
constexpr const char* kDnnLibraryName = "libcudnn.so.9";

// Every cuDNN function the convolutions call, typed from cudnn.h.
struct DnnApi {
  std::string library;  // what was asked for (a name or a path)
  std::string path;     // the file the dynamic linker loaded
  bool reused = false;  // already loaded in the process before alpa asked for it
  size_t version = 0;   // cudnnGetVersion's code (9.19.0 is 91900)

  decltype(&cudnnGetVersion) GetVersion = nullptr;
  decltype(&cudnnGetErrorString) GetErrorString = nullptr;
  decltype(&cudnnGetLastErrorString) GetLastErrorString = nullptr;
  decltype(&cudnnCreate) Create = nullptr;
  decltype(&cudnnDestroy) Destroy = nullptr;
  decltype(&cudnnSetStream) SetStream = nullptr;
  decltype(&cudnnBackendCreateDescriptor) BackendCreateDescriptor = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) BackendDestroyDescriptor = nullptr;
  decltype(&cudnnBackendSetAttribute) BackendSetAttribute = nullptr;
  decltype(&cudnnBackendGetAttribute) BackendGetAttribute = nullptr;
  decltype(&cudnnBackendFinalize) BackendFinalize = nullptr;
  decltype(&cudnnBackendExecute) BackendExecute = nullptr;
};

// The process's cuDNN: the library named by ALPA_CUDNN_LIBRARY (else libcudnn.so.9), opened and
// checked on the first call; every later call returns the same table, or the same error.
// Thread-safe.
Result<const DnnApi*> LoadDnn();

// Opens `library` (reusing it when already loaded), resolves every function of DnnApi and checks
// the version. Not cached. kUnsupported naming the library and what to install or set when it
// cannot be opened, the symbol when one is missing, the version when it is not 9.x. On failure
// the library is closed again.
Result<DnnApi> OpenDnn(const std::string& library);

}  // namespace cuda
}  // namespace alpa

// Libraries the CUDA backend opens at run time instead of linking (NCCL: nccl_loader.h, cuDNN:
// dnn_loader.h), so that a process that brings its own copy under the same soname (PyTorch's
// CUDA wheels bring both) keeps it: a process holds one library per soname, and the first one
// loaded serves every later library that needs it.
//   - A copy already loaded in the process is reused (dlopen with RTLD_NOLOAD first).
//   - Opened with RTLD_NOW | RTLD_LOCAL: its symbols do not join the global scope.
//   - Never closed once its table is in use (the callers keep it for the life of the process).
#pragma once

#include <string>

#include "core/util/status.h"

namespace alpa {
namespace cuda {

struct SharedLibrary {
  void* handle = nullptr;
  std::string library;  // what was asked for (a name or a path)
  std::string path;     // the file the dynamic linker loaded
  bool reused = false;  // already loaded in the process before alpa asked for it
};

// What messages say about a library that cannot be used: "<needs>: cannot load 'NAME' (why);
// <hint>" and "<needs_version>: PATH has no symbol S (why); <hint>".
struct LibraryMessages {
  std::string needs;          // "the NCCL communicator needs NCCL"
  std::string needs_version;  // "the NCCL communicator needs NCCL 2.18 or newer"
  std::string hint;           // what to install or set
};

// `library` as loaded in the process, else opened now. kUnsupported (messages.needs) when it
// cannot be opened.
Result<SharedLibrary> OpenSharedLibrary(const std::string& library,
                                        const LibraryMessages& messages);
// Closes a library opened by OpenSharedLibrary (a reused one only loses a reference).
void CloseSharedLibrary(const SharedLibrary& library);

// The address of `symbol`; kUnsupported (messages.needs_version) when the library lacks it.
Result<void*> FindSymbol(const SharedLibrary& library, const char* symbol,
                         const LibraryMessages& messages);

// FindSymbol into a typed function pointer.
template <typename Function>
Status Resolve(const SharedLibrary& library, const char* symbol, const LibraryMessages& messages,
               Function* function) {
  Result<void*> address = FindSymbol(library, symbol, messages);
  if (!address.ok()) return address.status();
  *function = reinterpret_cast<Function>(address.value());
  return Status::Ok();
}

// The library an environment variable names (a path, or a name the dynamic linker searches),
// else `default_name` when it is unset or empty.
std::string LibraryFromEnvironment(const char* variable, const char* default_name);

// Opens `library` into a function table (NcclApi, DnnApi: fields library, path and reused, then
// whatever `resolve` fills and `check` checks), closing it again when either fails.
template <typename Api>
Result<Api> OpenFunctionTable(const std::string& library, const LibraryMessages& messages,
                              Status (*resolve)(const SharedLibrary&, Api*),
                              Status (*check)(Api*)) {
  Result<SharedLibrary> opened = OpenSharedLibrary(library, messages);
  ALPA_RETURN_IF_ERROR(opened.status());
  Api api;
  api.library = library;
  api.path = opened.value().path;
  api.reused = opened.value().reused;
  Status checked = resolve(opened.value(), &api);
  if (checked.ok()) checked = check(&api);
  if (!checked.ok()) {
    CloseSharedLibrary(opened.value());
    return checked;
  }
  return api;
}

}  // namespace cuda
}  // namespace alpa

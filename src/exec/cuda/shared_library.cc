#include "exec/cuda/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <string>

namespace alpa {
namespace cuda {
namespace {

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

}  // namespace

Result<SharedLibrary> OpenSharedLibrary(const std::string& library,
                                        const LibraryMessages& messages) {
  SharedLibrary opened;
  opened.library = library;
  dlerror();
  opened.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  opened.reused = opened.handle != nullptr;
  if (opened.handle == nullptr) opened.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (opened.handle == nullptr) {
    return Status(StatusCode::kUnsupported, messages.needs + ": cannot load '" + library + "' (" +
                                                LastDlError("dlopen failed") + "); " +
                                                messages.hint);
  }
  opened.path = LoadedPath(opened.handle, library);
  return opened;
}

void CloseSharedLibrary(const SharedLibrary& library) {
  if (library.handle != nullptr) dlclose(library.handle);
}

std::string LibraryFromEnvironment(const char* variable, const char* default_name) {
  const char* named = std::getenv(variable);
  return named != nullptr && named[0] != '\0' ? named : default_name;
}

Result<void*> FindSymbol(const SharedLibrary& library, const char* symbol,
                         const LibraryMessages& messages) {
  dlerror();
  void* address = dlsym(library.handle, symbol);
  if (address == nullptr) {
    return Status(StatusCode::kUnsupported, messages.needs_version + ": " + library.path +
                                                " has no symbol " + symbol + " (" +
                                                LastDlError("not found") + "); " + messages.hint);
  }
  return address;
}

}  // namespace cuda
}  // namespace alpa

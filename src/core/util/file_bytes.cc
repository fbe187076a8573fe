#include "core/util/file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

namespace alpa {

Result<std::string> ReadFileBytes(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) return IoError("cannot open " + path + ": " + std::strerror(errno));
  std::string bytes;
  try {
    char buf[1 << 16];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), file.get())) > 0) bytes.append(buf, n);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while reading " + path);
  }
  if (std::ferror(file.get())) return IoError("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

}  // namespace alpa

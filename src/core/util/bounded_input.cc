#include "core/util/bounded_input.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "core/util/gzip.h"

namespace alpa {
namespace {

constexpr size_t kPiece = size_t{1} << 16;

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text),
                value == static_cast<double>(static_cast<uint64_t>(value)) ? "%.0f %s" : "%.2f %s",
                value, units[unit]);
  return text;
}

std::string HexByte(char c) {
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02x", static_cast<unsigned char>(c));
  return hex;
}

// SniffJson over a file read piece by piece: pieces of whitespace only leave it undecided.
class Sniffer {
 public:
  Status Feed(std::string_view piece) {
    if (decided_) return Status::Ok();
    size_t i = 0;
    if (offset_ == 0 && piece.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
    while (i < piece.size() && IsJsonSpace(piece[i])) ++i;
    if (i == piece.size()) {
      offset_ += piece.size();
      return Status::Ok();
    }
    decided_ = true;
    if (piece[i] == '{' || piece[i] == '[') return Status::Ok();
    return NotJson(offset_ + i, piece[i]);
  }

  static Status NotJson(uint64_t offset, char byte) {
    return ParseError("not JSON: byte " + std::to_string(offset) + " is " + HexByte(byte) +
                      " (a JSON document starts with '{' or '[')");
  }

 private:
  bool decided_ = false;
  uint64_t offset_ = 0;  // bytes of whitespace seen so far
};

}  // namespace

Status InputLimitError(uint64_t max_bytes) {
  const std::string human = max_bytes >= 1024 ? " (" + HumanBytes(max_bytes) + ")" : "";
  return ParseError("input exceeds the limit of " + std::to_string(max_bytes) + " bytes" + human +
                    "; " + kRaiseInputLimitHint);
}

Status SniffJson(std::string_view head) {
  Sniffer sniffer;
  return sniffer.Feed(head);
}

Result<std::string> ReadFileBytes(const std::string& path, uint64_t max_bytes,
                                  FileContent content) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) return IoError("cannot open " + path + ": " + std::strerror(errno));
  std::string bytes;
  try {
    char piece[kPiece];
    size_t n = std::fread(piece, 1, sizeof(piece), file.get());
    // gzip is recognised by its magic number; its text is checked once inflated.
    const bool sniff = content == FileContent::kJsonOrGzip && !IsGzip(std::string_view(piece, n));
    Sniffer sniffer;
    if (sniff) ALPA_RETURN_IF_ERROR(sniffer.Feed(std::string_view(piece, n)));
    // A regular file's size is known: refuse a file over the limit before reading it, and read
    // one that fits into a buffer of its exact size.
    struct stat info {};
    if (fstat(fileno(file.get()), &info) == 0 && S_ISREG(info.st_mode)) {
      const auto size = static_cast<uint64_t>(info.st_size);
      if (size > max_bytes) return InputLimitError(max_bytes);
      bytes.reserve(static_cast<size_t>(size));
    }
    while (n > 0) {
      if (n > max_bytes - bytes.size()) return InputLimitError(max_bytes);
      bytes.append(piece, n);
      n = std::fread(piece, 1, sizeof(piece), file.get());
      if (sniff) ALPA_RETURN_IF_ERROR(sniffer.Feed(std::string_view(piece, n)));
    }
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while reading " + path);
  }
  if (std::ferror(file.get())) return IoError("cannot read " + path + ": " + std::strerror(errno));
  return bytes;
}

Result<std::string_view> DecodeJsonInput(std::string_view bytes, uint64_t max_bytes,
                                         std::string* storage) {
  if (IsGzip(bytes)) {
    try {
      Result<std::string> text = Gunzip(bytes, max_bytes);
      if (!text.ok()) return text.status();
      *storage = std::move(text).value();
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kOutOfMemory, "out of memory while inflating gzip data");
    }
    return std::string_view(*storage);
  }
  if (bytes.size() > max_bytes) return InputLimitError(max_bytes);
  return bytes;
}

}  // namespace alpa

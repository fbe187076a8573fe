#include "core/util/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <string>

namespace alpa {
namespace {

// zlib counts in uInt (32 bits): feed and drain it in chunks of at most this size.
constexpr size_t kChunk = size_t{1} << 30;

std::string ZlibMessage(const z_stream& zs, int rc) {
  if (zs.msg != nullptr) return zs.msg;
  return "zlib error " + std::to_string(rc);
}

// Owns an inflate stream so that every return path ends it.
class Inflater {
 public:
  Inflater() = default;
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ~Inflater() {
    if (initialized_) inflateEnd(&zs_);
  }
  Status Init() {
    // 15 + 16: a gzip wrapper (not zlib, not raw deflate) with the largest window.
    const int rc = inflateInit2(&zs_, 15 + 16);
    if (rc != Z_OK) return InternalError("gzip: inflateInit2 failed: " + ZlibMessage(zs_, rc));
    initialized_ = true;
    return Status::Ok();
  }
  z_stream& stream() { return zs_; }

 private:
  z_stream zs_{};
  bool initialized_ = false;
};

}  // namespace

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

Result<std::string> Gunzip(std::string_view bytes, uint64_t max_bytes) {
  if (!IsGzip(bytes)) return ParseError("gzip: missing magic number 1f 8b");
  Inflater inflater;
  ALPA_RETURN_IF_ERROR(inflater.Init());
  z_stream& zs = inflater.stream();

  std::string out;
  // The trailer's ISIZE (size mod 2^32) is a good first guess for a single-member file; it is
  // untrusted, so the guess is bounded by deflate's best ratio (about 1032:1) and the cap.
  if (bytes.size() >= 18) {
    const auto* tail = reinterpret_cast<const unsigned char*>(bytes.data() + bytes.size() - 4);
    const uint64_t isize = uint64_t{tail[0]} | uint64_t{tail[1]} << 8 | uint64_t{tail[2]} << 16 |
                           uint64_t{tail[3]} << 24;
    const uint64_t bound = std::min<uint64_t>(uint64_t{bytes.size()} * 1032, max_bytes);
    out.reserve(static_cast<size_t>(std::min(isize, bound)));
  }

  size_t in_pos = 0;
  size_t out_len = 0;
  int rc = Z_OK;
  while (true) {
    if (zs.avail_in == 0 && in_pos < bytes.size()) {
      const size_t n = std::min(kChunk, bytes.size() - in_pos);
      // zlib's API takes a non-const pointer but does not write through next_in.
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_pos));
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    if (out_len == out.size()) {
      if (out_len >= max_bytes) {
        return ParseError("gzip: inflated data exceeds the limit of " + std::to_string(max_bytes) +
                          " bytes (decompression bomb?)");
      }
      const uint64_t grown = std::max<uint64_t>(uint64_t{out.size()} * 2, 1 << 16);
      out.resize(static_cast<size_t>(std::min(grown, max_bytes)));
    }
    const size_t room = std::min(kChunk, out.size() - out_len);
    zs.next_out = reinterpret_cast<Bytef*>(&out[out_len]);
    zs.avail_out = static_cast<uInt>(room);
    rc = inflate(&zs, Z_NO_FLUSH);
    out_len += room - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Another member may follow (concatenated .gz files); trailing zero padding is tolerated.
      const size_t consumed = in_pos - zs.avail_in;
      std::string_view rest = bytes.substr(consumed);
      if (rest.find_first_not_of('\0') == std::string_view::npos) break;
      if (!IsGzip(rest)) {
        return ParseError("gzip: trailing garbage after the compressed data at byte " +
                          std::to_string(consumed));
      }
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_pos == bytes.size() && zs.avail_out != 0) {
      return ParseError("gzip: truncated stream (ends after " + std::to_string(bytes.size()) +
                        " bytes)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      if (rc == Z_MEM_ERROR) return Status(StatusCode::kOutOfMemory, "gzip: out of memory");
      return ParseError("gzip: corrupt data: " + ZlibMessage(zs, rc));
    }
  }
  out.resize(out_len);
  return out;
}

}  // namespace alpa

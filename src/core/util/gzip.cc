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

namespace {

// Inflates `bytes` (checked to start with the magic number) in pieces of at most kPiece bytes,
// handing each piece to `sink` (which may stop the stream by returning an error). The output is
// never held here, so counting the inflated size costs no memory.
template <typename Sink>
Status InflateTo(std::string_view bytes, Sink&& sink) {
  Inflater inflater;
  ALPA_RETURN_IF_ERROR(inflater.Init());
  z_stream& zs = inflater.stream();
  constexpr size_t kPiece = size_t{1} << 16;
  unsigned char piece[kPiece];
  size_t in_pos = 0;
  while (true) {
    if (zs.avail_in == 0 && in_pos < bytes.size()) {
      const size_t n = std::min(kChunk, bytes.size() - in_pos);
      // zlib's API takes a non-const pointer but does not write through next_in.
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_pos));
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    zs.next_out = piece;
    zs.avail_out = static_cast<uInt>(kPiece);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const size_t produced = kPiece - zs.avail_out;
    if (produced > 0) {
      ALPA_RETURN_IF_ERROR(sink(std::string_view(reinterpret_cast<const char*>(piece), produced)));
    }
    if (rc == Z_STREAM_END) {
      // Another member may follow (concatenated .gz files); trailing zero padding is tolerated.
      const size_t consumed = in_pos - zs.avail_in;
      std::string_view rest = bytes.substr(consumed);
      if (rest.find_first_not_of('\0') == std::string_view::npos) return Status::Ok();
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
}

}  // namespace

Status InflatedLimitError(uint64_t max_bytes) {
  return ParseError("gzip: inflated data exceeds the limit of " + std::to_string(max_bytes) +
                    " bytes (decompression bomb?); " + kRaiseInputLimitHint);
}

Result<std::string> Gunzip(std::string_view bytes, uint64_t max_bytes) {
  if (!IsGzip(bytes)) return ParseError("gzip: missing magic number 1f 8b");
  // Two passes: the first only counts (and stops at the limit), so that a bomb costs no memory
  // and the output is allocated once at its exact size, never grown by doubling (growing a
  // multi-GiB string held the old and the new copy at once).
  uint64_t size = 0;
  ALPA_RETURN_IF_ERROR(InflateTo(bytes, [&](std::string_view piece) {
    size += piece.size();
    return size > max_bytes ? InflatedLimitError(max_bytes) : Status::Ok();
  }));
  std::string out;
  out.reserve(static_cast<size_t>(size));
  ALPA_RETURN_IF_ERROR(InflateTo(bytes, [&](std::string_view piece) {
    // The data is read again: refuse if it is not what the first pass counted.
    if (piece.size() > size - out.size()) return InternalError("gzip: input changed");
    out.append(piece);
    return Status::Ok();
  }));
  return out;
}

}  // namespace alpa

// A parsed JSON document whose cost is bounded by its text and whose release never allocates.
//
// nlohmann's json::parse grows every array by doubling (a document of small numbers peaked at
// about 24 times its text), and its destructor flattens each array onto a heap-allocated stack
// of the array's size: releasing a document after an allocation failure could itself fail inside
// a noexcept destructor and abort the process. ParseJsonDocument parses twice through the SAX
// interface: a first pass counts the entries of every array (and allocates nothing for the
// values), the second builds the document with each array reserved at its exact size. An
// allocation failure in either pass is a kOutOfMemory status, and a JsonDocument releases its
// tree bottom-up, leaves first, so that no release step needs memory.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/util/status.h"

namespace alpa {

class JsonDocument {
 public:
  JsonDocument() = default;
  JsonDocument(const JsonDocument&) = delete;
  JsonDocument& operator=(const JsonDocument&) = delete;
  JsonDocument(JsonDocument&& other) noexcept;
  JsonDocument& operator=(JsonDocument&& other) noexcept;
  ~JsonDocument();

  const nlohmann::json& root() const { return root_; }
  nlohmann::json& root() { return root_; }

 private:
  nlohmann::json root_;
};

// Empties `json` without allocating: children are released before their parents, so that no
// container is destroyed while it still holds containers. Recursion depth is the nesting depth
// (ParseJsonDocument refuses more than kMaxJsonDocumentDepth levels).
void ReleaseJson(nlohmann::json* json) noexcept;

inline constexpr int kMaxJsonDocumentDepth = 1024;

// What a reader does with a document whose root is not an object.
enum class JsonRoot {
  kAny,         // builds it like any other
  kObjectOnly,  // the reader rejects any other root by its type alone: a text that starts with
                // '[' is neither parsed nor built but given as an empty array, so that
                // "[0,0,...]" meets the reader's "expected an object, found array" at once
};

// Parses one JSON document (RFC 8259; trailing text other than whitespace is an error).
// kParse with nlohmann's message without its "[json.exception...] " prefix, e.g. "syntax error
// while parsing value - invalid literal; last read: 'x'"; kOutOfMemory "out of memory while
// parsing JSON (<n> bytes of text)".
Result<JsonDocument> ParseJsonDocument(std::string_view text, JsonRoot root = JsonRoot::kAny);

}  // namespace alpa

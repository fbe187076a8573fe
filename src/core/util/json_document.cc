#include "core/util/json_document.h"

#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/util/json_util.h"

namespace alpa {
namespace {

using Json = nlohmann::json;

// The SAX callbacks both passes share: the parse error (kept as nlohmann's message) and the
// nesting depth.
class SaxBase {
 public:
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    error_ = JsonErrorMessage(ex.what());
    return false;
  }
  const std::string& error() const { return error_; }
  bool too_deep() const { return too_deep_; }

 protected:
  // Called on every container start; false stops the parse.
  bool Enter() {
    if (++depth_ <= kMaxJsonDocumentDepth) return true;
    too_deep_ = true;
    return false;
  }
  void Leave() { --depth_; }

 private:
  std::string error_;
  int depth_ = 0;
  bool too_deep_ = false;
};

// Runs of whitespace longer than this are cut (CompactWhitespace).
constexpr size_t kLongWhitespaceRun = size_t{1} << 16;

// Pass 1, a byte scan (far cheaper than a parse): the number of entries of every array, in the
// order the arrays open: the commas at the array's own level plus one, or zero when nothing but
// whitespace comes before its ']'. Sets *long_whitespace when a run of whitespace outside
// strings is longer than kLongWhitespaceRun. Exact for valid JSON; for invalid text (which pass 2
// then rejects) a count never exceeds the commas in the text, so a reservation stays bounded by it.
std::vector<uint64_t> CountArrayEntries(std::string_view text, bool* long_whitespace) {
  *long_whitespace = false;
  size_t run_start = 0;  // where the current run of whitespace began
  std::vector<uint64_t> counts;
  // The open containers: an index into counts, or kObject.
  constexpr size_t kObject = std::numeric_limits<size_t>::max();
  std::vector<size_t> open;
  bool in_string = false;
  bool awaiting_first = false;  // just after '[': whether an entry has started
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;
      } else if (ch == '"') {
        in_string = false;
        run_start = i + 1;
      }
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      if (i - run_start >= kLongWhitespaceRun) *long_whitespace = true;
      continue;
    }
    run_start = i + 1;
    if (awaiting_first) {
      awaiting_first = false;
      if (ch != ']') counts[open.back()] = 1;
    }
    switch (ch) {
      case '"':
        in_string = true;
        break;
      case '[':
        if (open.size() >= static_cast<size_t>(kMaxJsonDocumentDepth)) return counts;
        open.push_back(counts.size());
        counts.push_back(0);
        awaiting_first = true;
        break;
      case '{':
        if (open.size() >= static_cast<size_t>(kMaxJsonDocumentDepth)) return counts;
        open.push_back(kObject);
        break;
      case ']':
      case '}':
        if (!open.empty()) open.pop_back();
        break;
      case ',':
        if (!open.empty() && open.back() != kObject) ++counts[open.back()];
        break;
      default:
        break;
    }
  }
  return counts;
}

// `text` with every run of whitespace outside strings cut to its first kLongWhitespaceRun
// bytes. nlohmann's lexer keeps each whitespace run it skips in a buffer of its own (for
// error messages): a gigabyte of spaces cost a gigabyte more, and time. Tokens are unchanged, so
// pass 1's counts stay valid; only error positions after such a run move.
template <typename Emit>
void ForEachKeptByte(std::string_view text, Emit&& emit) {
  bool in_string = false;
  size_t run = 0;  // length of the current run of whitespace
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\' && i + 1 < text.size()) {
        emit(ch);
        emit(text[++i]);
      } else {
        if (ch == '"') in_string = false;
        emit(ch);
      }
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      if (run++ < kLongWhitespaceRun) emit(ch);
      continue;
    }
    run = 0;
    if (ch == '"') in_string = true;
    emit(ch);
  }
}

std::string CompactWhitespace(std::string_view text) {
  size_t size = 0;
  ForEachKeptByte(text, [&](char) { ++size; });
  std::string out;
  out.reserve(size);  // counted first: a gigabyte of spaces must not reserve a gigabyte
  ForEachKeptByte(text, [&](char ch) { out += ch; });
  return out;
}

// Whether the text's first byte after whitespace opens an array.
bool StartsWithArray(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\n\r");
  return first != std::string_view::npos && text[first] == '[';
}

// Pass 2: the document, every array reserved at the size pass 1 counted.
class DocumentBuilder : public SaxBase {
 public:
  DocumentBuilder(Json* root, const std::vector<uint64_t>& counts) : root_(root), counts_(counts) {}

  bool null() { return Put(nullptr) != nullptr; }
  bool boolean(bool v) { return Put(v) != nullptr; }
  bool number_integer(Json::number_integer_t v) { return Put(v) != nullptr; }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(v) != nullptr; }
  bool number_float(Json::number_float_t v, const std::string& /*text*/) {
    return Put(v) != nullptr;
  }
  bool string(std::string& v) { return Put(std::move(v)) != nullptr; }
  bool binary(Json::binary_t& v) { return Put(Json::binary(std::move(v))) != nullptr; }
  bool key(std::string& k) {
    // Later duplicates replace earlier ones, as with json::parse.
    try {
      member_ = &open_.back()->get_ref<Json::object_t&>()[std::move(k)];
    } catch (const std::bad_alloc&) {
      out_of_memory_ = true;
      return false;
    }
    return true;
  }
  bool start_object(std::size_t /*size*/) {
    Json* object = Put(Json::value_t::object);
    if (object == nullptr || !Enter() || !Push(object)) return false;
    return true;
  }
  bool end_object() {
    open_.pop_back();
    Leave();
    return true;
  }
  bool start_array(std::size_t /*size*/) {
    Json* array = Put(Json::value_t::array);
    if (array == nullptr || !Enter()) return false;
    try {
      // Only invalid text (rejected later in this pass) can have more arrays than pass 1 saw.
      const uint64_t count = next_array_ < counts_.size() ? counts_[next_array_] : 0;
      ++next_array_;
      array->get_ref<Json::array_t&>().reserve(static_cast<size_t>(count));
    } catch (const std::bad_alloc&) {
      out_of_memory_ = true;
      return false;
    }
    return Push(array);
  }
  bool end_array() {
    open_.pop_back();
    Leave();
    return true;
  }

  bool out_of_memory() const { return out_of_memory_; }

 private:
  // Stores a value where the parser is (the root, the next array entry or the member whose key
  // came last); nullptr when memory ran out.
  template <typename Value>
  Json* Put(Value&& value) {
    try {
      if (open_.empty()) {
        *root_ = Json(std::forward<Value>(value));
        return root_;
      }
      Json* parent = open_.back();
      if (parent->is_array()) {
        Json::array_t& entries = parent->get_ref<Json::array_t&>();
        entries.emplace_back(std::forward<Value>(value));
        return &entries.back();
      }
      // A repeated key still holds its earlier value: release it here, where that needs no
      // memory, rather than in the assignment's destructor.
      ReleaseJson(member_);
      *member_ = Json(std::forward<Value>(value));
      return member_;
    } catch (const std::bad_alloc&) {
      out_of_memory_ = true;
      return nullptr;
    }
  }
  bool Push(Json* container) {
    try {
      open_.push_back(container);
    } catch (const std::bad_alloc&) {
      out_of_memory_ = true;
      return false;
    }
    return true;
  }

  Json* root_;
  const std::vector<uint64_t>& counts_;
  size_t next_array_ = 0;
  std::vector<Json*> open_;
  Json* member_ = nullptr;
  bool out_of_memory_ = false;
};

Status OutOfMemory(std::string_view text) {
  return Status(StatusCode::kOutOfMemory, "out of memory while parsing JSON (" +
                                              std::to_string(text.size()) + " bytes of text)");
}

Status TooDeep() {
  return ParseError("JSON nesting deeper than " + std::to_string(kMaxJsonDocumentDepth) +
                    " levels");
}

}  // namespace

JsonDocument::JsonDocument(JsonDocument&& other) noexcept : root_(std::move(other.root_)) {}

JsonDocument& JsonDocument::operator=(JsonDocument&& other) noexcept {
  if (this != &other) {
    ReleaseJson(&root_);
    root_ = std::move(other.root_);
  }
  return *this;
}

JsonDocument::~JsonDocument() { ReleaseJson(&root_); }

void ReleaseJson(Json* json) noexcept {
  if (json->is_array()) {
    Json::array_t& entries = json->get_ref<Json::array_t&>();
    for (Json& entry : entries) ReleaseJson(&entry);
    entries.clear();  // only scalars and empty containers: their destructors allocate nothing
  } else if (json->is_object()) {
    Json::object_t& members = json->get_ref<Json::object_t&>();
    for (auto& member : members) ReleaseJson(&member.second);
    members.clear();
  }
}

Result<JsonDocument> ParseJsonDocument(std::string_view text, JsonRoot root) {
  JsonDocument document;
  std::string compacted;
  std::vector<uint64_t> counts;
  try {
    if (root == JsonRoot::kObjectOnly && StartsWithArray(text)) {
      // Its type is all the caller reads: neither built nor parsed (a 1 GiB array of zeros
      // would take a minute just to be checked for syntax before being refused for its type).
      document.root() = Json::array();
      return Result<JsonDocument>(std::move(document));
    }
    bool long_whitespace = false;
    counts = CountArrayEntries(text, &long_whitespace);
    if (long_whitespace) {
      compacted = CompactWhitespace(text);
      text = compacted;
    }
  } catch (const std::bad_alloc&) {
    return OutOfMemory(text);
  }
  try {
    DocumentBuilder builder(&document.root(), counts);
    if (!Json::sax_parse(text.begin(), text.end(), &builder)) {
      if (builder.out_of_memory()) return OutOfMemory(text);
      if (builder.too_deep()) return TooDeep();
      return ParseError(builder.error());
    }
  } catch (const std::bad_alloc&) {
    return OutOfMemory(text);  // `document` is released bottom-up on the way out
  }
  return Result<JsonDocument>(std::move(document));
}

}  // namespace alpa

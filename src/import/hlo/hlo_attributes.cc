// The small grammars of HLO attribute values.
#include "import/hlo/hlo_attributes.h"

#include <cctype>
#include <limits>

namespace alpa {
namespace {

// A cursor over one attribute's text.
class TextCursor {
 public:
  explicit TextCursor(const std::string& text) : text_(text) {}
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Result<int64_t> Integer(const std::string& what) {
    SkipSpace();
    bool negative = pos_ < text_.size() && text_[pos_] == '-';
    if (negative) ++pos_;
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      return ParseError("expected an integer (" + what + ") in \"" + text_ + "\"");
    }
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        return ParseError("integer (" + what + ") does not fit int64 in \"" + text_ + "\"");
      }
      value = value * 10 + digit;
      ++pos_;
    }
    return negative ? -value : value;
  }
  std::string Word() {
    SkipSpace();
    std::string word;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '-')) {
      word += text_[pos_++];
    }
    return word;
  }
  Status Expect(char c, const std::string& what) {
    if (Consume(c)) return Status::Ok();
    return ParseError(std::string("expected '") + c + "' " + what + " in \"" + text_ + "\"");
  }
  const std::string& text() const { return text_; }

 private:
  const std::string& text_;
  size_t pos_ = 0;
};

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : text) {
    if (c == separator) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

Result<std::vector<int64_t>> ParseXList(const std::string& text, const std::string& what) {
  std::vector<int64_t> values;
  for (const std::string& part : Split(text, 'x')) {
    TextCursor cursor(part);
    Result<int64_t> value = cursor.Integer(what);
    if (!value.ok()) return value.status();
    if (!cursor.AtEnd()) return ParseError("unexpected text in " + what + " \"" + text + "\"");
    values.push_back(value.value());
  }
  return values;
}

}  // namespace

Result<std::vector<int64_t>> ParseIntList(const std::string& text) {
  TextCursor cursor(text);
  bool braced = cursor.Consume('{');
  std::vector<int64_t> values;
  if (braced && cursor.Consume('}')) return values;
  if (!braced && cursor.AtEnd()) return values;
  while (true) {
    Result<int64_t> value = cursor.Integer("a list element");
    if (!value.ok()) return value.status();
    values.push_back(value.value());
    if (!cursor.Consume(',')) break;
  }
  if (braced) ALPA_RETURN_IF_ERROR(cursor.Expect('}', "to close the list"));
  if (!cursor.AtEnd()) return ParseError("unexpected text after the list \"" + text + "\"");
  return values;
}

Result<std::vector<HloSliceDim>> ParseSliceAttribute(const std::string& text) {
  TextCursor cursor(text);
  ALPA_RETURN_IF_ERROR(cursor.Expect('{', "to open the slice"));
  std::vector<HloSliceDim> dims;
  if (cursor.Consume('}')) return dims;
  while (true) {
    ALPA_RETURN_IF_ERROR(cursor.Expect('[', "to open a slice dimension"));
    HloSliceDim dim;
    Result<int64_t> start = cursor.Integer("slice start");
    if (!start.ok()) return start.status();
    ALPA_RETURN_IF_ERROR(cursor.Expect(':', "after the slice start"));
    Result<int64_t> limit = cursor.Integer("slice limit");
    if (!limit.ok()) return limit.status();
    dim.start = start.value();
    dim.limit = limit.value();
    if (cursor.Consume(':')) {
      Result<int64_t> stride = cursor.Integer("slice stride");
      if (!stride.ok()) return stride.status();
      dim.stride = stride.value();
    }
    ALPA_RETURN_IF_ERROR(cursor.Expect(']', "to close a slice dimension"));
    dims.push_back(dim);
    if (!cursor.Consume(',')) break;
  }
  ALPA_RETURN_IF_ERROR(cursor.Expect('}', "to close the slice"));
  if (!cursor.AtEnd()) return ParseError("unexpected text after the slice \"" + text + "\"");
  return dims;
}

Result<std::vector<HloPaddingDim>> ParsePadding(const std::string& text) {
  std::vector<HloPaddingDim> dims;
  if (text.empty()) return dims;
  for (const std::string& part : Split(text, 'x')) {
    std::vector<std::string> fields = Split(part, '_');
    if (fields.size() != 2 && fields.size() != 3) {
      return ParseError("padding \"" + text + "\": expected lo_hi or lo_hi_interior per dim");
    }
    int64_t values[3] = {0, 0, 0};
    for (size_t i = 0; i < fields.size(); ++i) {
      TextCursor cursor(fields[i]);
      Result<int64_t> value = cursor.Integer("padding");
      if (!value.ok()) return value.status();
      if (!cursor.AtEnd()) return ParseError("unexpected text in padding \"" + text + "\"");
      values[i] = value.value();
    }
    dims.push_back({values[0], values[1], values[2]});
  }
  return dims;
}

Result<std::vector<HloWindowDim>> ParseWindow(const std::string& text) {
  std::string inner = text;
  if (inner.size() >= 2 && inner.front() == '{' && inner.back() == '}') {
    inner = inner.substr(1, inner.size() - 2);
  }
  std::vector<HloWindowDim> dims;
  auto ensure = [&](size_t rank, const std::string& key) -> Status {
    if (dims.empty()) dims.resize(rank);
    if (dims.size() != rank) {
      return ParseError("window \"" + text + "\": " + key + " has " + std::to_string(rank) +
                        " dims, size has " + std::to_string(dims.size()));
    }
    return Status::Ok();
  };
  bool has_size = false;
  for (const std::string& field : Split(inner, ' ')) {
    if (field.empty()) continue;
    size_t eq = field.find('=');
    if (eq == std::string::npos) return ParseError("window \"" + text + "\": expected key=value");
    std::string key = field.substr(0, eq);
    std::string value = field.substr(eq + 1);
    if (key == "pad") {
      Result<std::vector<HloPaddingDim>> pads = ParsePadding(value);
      if (!pads.ok()) return pads.status();
      ALPA_RETURN_IF_ERROR(ensure(pads.value().size(), key));
      for (size_t i = 0; i < dims.size(); ++i) {
        dims[i].pad_lo = pads.value()[i].lo;
        dims[i].pad_hi = pads.value()[i].hi;
      }
      continue;
    }
    Result<std::vector<int64_t>> values = ParseXList(value, "window " + key);
    if (!values.ok()) return values.status();
    ALPA_RETURN_IF_ERROR(ensure(values.value().size(), key));
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t v = values.value()[i];
      if (key == "size") {
        dims[i].size = v;
        has_size = true;
      } else if (key == "stride") {
        dims[i].stride = v;
      } else if (key == "lhs_dilate") {
        dims[i].lhs_dilation = v;
      } else if (key == "rhs_dilate") {
        dims[i].rhs_dilation = v;
      } else if (key == "rhs_reversal") {
        dims[i].reversal = v != 0;
      } else {
        return ParseError("window \"" + text + "\": unknown key \"" + key + "\"");
      }
    }
  }
  if (!has_size && !inner.empty()) return ParseError("window \"" + text + "\" has no size");
  return dims;
}

Result<HloConvLabels> ParseConvLabels(const std::string& text) {
  size_t arrow = text.find("->");
  size_t underscore = text.find('_');
  if (arrow == std::string::npos || underscore == std::string::npos || underscore > arrow) {
    return ParseError("dim_labels \"" + text + "\": expected input_kernel->output");
  }
  std::string input = text.substr(0, underscore);
  std::string kernel = text.substr(underscore + 1, arrow - underscore - 1);
  std::string output = text.substr(arrow + 2);
  // Each operand: two letter dims and the spatial digits 0..k-1 once each.
  auto read = [&](const std::string& labels, char first, char second, int64_t* first_at,
                  int64_t* second_at, std::vector<int64_t>* spatial) -> Status {
    *first_at = -1;
    *second_at = -1;
    spatial->assign(labels.size() >= 2 ? labels.size() - 2 : 0, -1);
    for (size_t i = 0; i < labels.size(); ++i) {
      char c = labels[i];
      auto at = static_cast<int64_t>(i);
      if (c == first && *first_at < 0) {
        *first_at = at;
      } else if (c == second && *second_at < 0) {
        *second_at = at;
      } else if (c >= '0' && c <= '9' && static_cast<size_t>(c - '0') < spatial->size() &&
                 (*spatial)[static_cast<size_t>(c - '0')] < 0) {
        (*spatial)[static_cast<size_t>(c - '0')] = at;
      } else {
        return ParseError("dim_labels \"" + text + "\": unexpected label '" + std::string(1, c) +
                          "' in \"" + labels + "\"");
      }
    }
    if (*first_at < 0 || *second_at < 0) {
      return ParseError("dim_labels \"" + text + "\": \"" + labels + "\" lacks '" +
                        std::string(1, first) + "' or '" + std::string(1, second) + "'");
    }
    return Status::Ok();
  };
  HloConvLabels labels;
  ALPA_RETURN_IF_ERROR(
      read(input, 'b', 'f', &labels.input_batch, &labels.input_feature, &labels.input_spatial));
  ALPA_RETURN_IF_ERROR(
      read(kernel, 'o', 'i', &labels.kernel_output, &labels.kernel_input, &labels.kernel_spatial));
  ALPA_RETURN_IF_ERROR(
      read(output, 'b', 'f', &labels.output_batch, &labels.output_feature, &labels.output_spatial));
  if (labels.input_spatial.size() != labels.kernel_spatial.size() ||
      labels.input_spatial.size() != labels.output_spatial.size()) {
    return ParseError("dim_labels \"" + text + "\": the operands differ in spatial rank");
  }
  return labels;
}

std::string MetadataOpName(const std::string& metadata_text) {
  const std::string key = "op_name=\"";
  size_t at = metadata_text.find(key);
  if (at == std::string::npos) return "";
  std::string name;
  for (size_t i = at + key.size(); i < metadata_text.size(); ++i) {
    char c = metadata_text[i];
    if (c == '\\' && i + 1 < metadata_text.size()) {
      name += metadata_text[++i];
    } else if (c == '"') {
      break;
    } else {
      name += c;
    }
  }
  return name;
}

Result<std::vector<HloAlias>> ParseInputOutputAlias(const std::string& text) {
  TextCursor cursor(text);
  ALPA_RETURN_IF_ERROR(cursor.Expect('{', "to open input_output_alias"));
  std::vector<HloAlias> aliases;
  if (cursor.Consume('}')) return aliases;
  while (true) {
    HloAlias alias;
    ALPA_RETURN_IF_ERROR(cursor.Expect('{', "to open an output index"));
    if (!cursor.Consume('}')) {
      while (true) {
        Result<int64_t> index = cursor.Integer("output index");
        if (!index.ok()) return index.status();
        alias.output_index.push_back(index.value());
        if (!cursor.Consume(',')) break;
      }
      ALPA_RETURN_IF_ERROR(cursor.Expect('}', "to close an output index"));
    }
    ALPA_RETURN_IF_ERROR(cursor.Expect(':', "after an output index"));
    ALPA_RETURN_IF_ERROR(cursor.Expect('(', "to open an alias"));
    Result<int64_t> parameter = cursor.Integer("parameter number");
    if (!parameter.ok()) return parameter.status();
    alias.parameter_number = parameter.value();
    ALPA_RETURN_IF_ERROR(cursor.Expect(',', "after the parameter number"));
    ALPA_RETURN_IF_ERROR(cursor.Expect('{', "to open the parameter index"));
    if (!cursor.Consume('}')) {
      return ParseError(
          "input_output_alias: parameter " + std::to_string(alias.parameter_number) +
          " is aliased inside a tuple parameter, which the importer does not support");
    }
    if (cursor.Consume(',')) cursor.Word();  // may-alias / must-alias
    ALPA_RETURN_IF_ERROR(cursor.Expect(')', "to close an alias"));
    aliases.push_back(alias);
    if (!cursor.Consume(',')) break;
  }
  ALPA_RETURN_IF_ERROR(cursor.Expect('}', "to close input_output_alias"));
  return aliases;
}

}  // namespace alpa

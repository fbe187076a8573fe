#include "core/util/json_util.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace alpa {

Status CheckJsonNesting(std::string_view bytes, int max_depth, std::string_view what) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char ch = bytes[i];
    if (in_string) {
      if (ch == '\\') {
        ++i;  // an escaped quote does not end the string
      } else if (ch == '"') {
        in_string = false;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_depth) {
        return ParseError(std::string(what) + ": JSON nesting deeper than " +
                          std::to_string(max_depth) + " levels at byte " + std::to_string(i));
      }
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return Status::Ok();
}

std::string JsonErrorMessage(const char* what) {
  std::string m(what);
  if (!m.empty() && m[0] == '[') {
    const size_t close = m.find("] ");
    if (close != std::string::npos) m.erase(0, close + 2);
  }
  return m;
}

namespace json_util {

const char* ConversionMessage(Conversion c) {
  switch (c) {
    case Conversion::kOk:
      return "ok";
    case Conversion::kNotNumber:
      return "expected a number";
    case Conversion::kNotInteger:
      return "expected an integer";
    case Conversion::kOutOfRange:
      return "number out of range";
    case Conversion::kNotFinite:
      return "expected a finite number";
  }
  return "bad value";
}

Conversion ToDouble(const Json& j, double* out) {
  if (!j.is_number()) return Conversion::kNotNumber;
  *out = j.get<double>();
  return std::isfinite(*out) ? Conversion::kOk : Conversion::kNotFinite;
}

Conversion ToInt64(const Json& j, int64_t lo, int64_t hi, int64_t* out) {
  int64_t v = 0;
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Conversion::kOutOfRange;
    }
    v = static_cast<int64_t>(u);
  } else if (j.is_number_integer()) {
    v = j.get<int64_t>();
  } else if (j.is_number_float()) {
    const double d = j.get<double>();
    if (!std::isfinite(d)) return Conversion::kNotFinite;
    if (d != std::floor(d)) return Conversion::kNotInteger;
    // [-2^63, 2^63): exactly the doubles that convert to int64 without overflow.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
      return Conversion::kOutOfRange;
    }
    v = static_cast<int64_t>(d);
  } else {
    return Conversion::kNotNumber;
  }
  if (v < lo || v > hi) return Conversion::kOutOfRange;
  *out = v;
  return Conversion::kOk;
}

Conversion FloorToInt64(const Json& j, int64_t* out) {
  if (j.is_number_float()) {
    const double d = std::floor(j.get<double>());
    if (!std::isfinite(d)) return Conversion::kNotFinite;
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
      return Conversion::kOutOfRange;
    }
    *out = static_cast<int64_t>(d);
    return Conversion::kOk;
  }
  return ToInt64(j, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), out);
}

Status ErrorAt(std::string_view format, const std::string& path, const std::string& what) {
  std::string m(format);
  m += ": ";
  if (!path.empty()) m += path + ": ";
  m += what;
  return ParseError(std::move(m));
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

Status FindField(std::string_view format, const Json& obj, const std::string& path, const char* key,
                 Presence presence, const Json** out) {
  *out = nullptr;
  if (!obj.is_object()) {
    return ErrorAt(format, path.empty() ? "top level" : path,
                   std::string("expected an object, found ") + obj.type_name());
  }
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (presence == Presence::kOptional) return Status::Ok();
    return ErrorAt(format, path.empty() ? "top level" : path,
                   std::string("missing field \"") + key + "\"");
  }
  *out = &*it;
  return Status::Ok();
}

void AppendInt(int64_t x, std::string* out) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), x);
  out->append(buf, r.ptr);
}

void AppendNumber(double x, std::string* out) {
  if (!std::isfinite(x)) {
    x = x > 0 ? std::numeric_limits<double>::max() : -std::numeric_limits<double>::max();
  }
  if (x == std::floor(x) && std::fabs(x) < 9223372036854775808.0) {
    AppendInt(static_cast<int64_t>(x), out);
    return;
  }
  char buf[32];
  // Shortest form that reads back as the same double (never longer than %.17g).
  const auto r = std::to_chars(buf, buf + sizeof(buf), x);
  out->append(buf, r.ptr);
}

Json NumberValue(long double x) {
  if (!std::isfinite(x)) return nullptr;
  constexpr long double kTwoTo63 = 9223372036854775808.0L;
  if (x == std::floor(x) && std::fabs(x) < kTwoTo63) return static_cast<int64_t>(x);
  return static_cast<double>(x);
}

void AppendString(const std::string& s, std::string* out) {
  *out += Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace json_util

}  // namespace alpa

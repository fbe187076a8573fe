#include "exec/sim/timeline_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace alpa::timeline_internal {

std::string Fixed(double v, int decimals) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v + 0.0, std::chars_format::fixed, decimals);
  std::string s(buf, r.ptr);
  if (s.size() > 1 && s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) {
    s.erase(0, 1);
  }
  return s;
}

std::string Int(int64_t v) { return std::to_string(v); }

std::u32string DecodeLabel(std::string_view s) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    char32_t cp = 0;
    size_t len = 0;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      len = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      len = 4;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    constexpr char32_t kMinForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMinForLen[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) &&
         cp != 0xFFFE && cp != 0xFFFF;
    if (!ok) {
      out.push_back(U'?');
      i += 1;
      continue;
    }
    if (cp < 0x20 && cp != U'\t') cp = U'?';
    if (cp == U'\t') cp = U' ';
    out.push_back(cp);
    i += len;
  }
  return out;
}

void AppendEscaped(std::string* out, const std::u32string& s) {
  for (char32_t cp : s) {
    switch (cp) {
      case U'&':
        *out += "&amp;";
        continue;
      case U'<':
        *out += "&lt;";
        continue;
      case U'>':
        *out += "&gt;";
        continue;
      case U'"':
        *out += "&quot;";
        continue;
      case U'\'':
        *out += "&apos;";
        continue;
      default:
        break;
    }
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
}

std::u32string Ellipsize(std::u32string s, int64_t max_chars) {
  max_chars = std::max<int64_t>(max_chars, 2);
  if (static_cast<int64_t>(s.size()) <= max_chars) return s;
  s.resize(static_cast<size_t>(max_chars - 1));
  s.push_back(U'\u2026');
  return s;
}

std::string Escaped(std::string_view s, int64_t max_chars) {
  std::string out;
  AppendEscaped(&out, Ellipsize(DecodeLabel(s), max_chars));
  return out;
}

std::string DeviceRuns(std::vector<int64_t> devices, int64_t max_chars) {
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  if (devices.empty()) return "no devices";
  std::string runs;
  for (size_t i = 0; i < devices.size();) {
    size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
    if (!runs.empty()) runs += ',';
    runs += Int(devices[i]);
    if (j > i) runs += '-' + Int(devices[j]);
    i = j + 1;
  }
  std::string full = "dev " + runs;
  if (static_cast<int64_t>(full.size()) <= max_chars) return full;
  // Cut at a run boundary so no number is left half written.
  const std::string count = Int(static_cast<int64_t>(devices.size()));
  const std::string tail = "\u2026 (" + count + ")";
  const int64_t tail_chars = 4 + static_cast<int64_t>(count.size());
  const int64_t keep = std::max<int64_t>(max_chars - tail_chars, 0);
  size_t cut = 0;
  for (size_t p = 0; p < full.size(); ++p) {
    if (full[p] == ',' && static_cast<int64_t>(p) + 1 <= keep) cut = p + 1;
  }
  if (cut == 0) return "dev " + tail;
  return full.substr(0, cut) + tail;
}

std::string Duration(double seconds) {
  struct Unit {
    double scale;
    const char* name;
  };
  constexpr Unit kUnits[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "\u00b5s"}, {1e-9, "ns"}};
  if (!(seconds > 0) || !std::isfinite(seconds)) return Fixed(0, 0) + " s";
  const Unit* u = &kUnits[3];
  for (const Unit& c : kUnits) {
    if (seconds >= c.scale * (1 - 1e-12)) {
      u = &c;
      break;
    }
  }
  const double v = seconds / u->scale;
  const int digits = v >= 1 ? static_cast<int>(std::floor(std::log10(v) + 1e-12)) : 0;
  const int decimals = std::clamp(3 - digits, 0, 3);
  return Fixed(v, decimals) + " " + u->name;
}

}  // namespace alpa::timeline_internal

#include "exec/sim/timeline_svg.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <string_view>
#include <utility>

namespace alpa {
namespace {

// What a block is drawn as. The first kStacked kinds are also the layers, bottom up, of a
// dense stretch: tasks too narrow to draw one by one (large B) become per-bin stacked shares of
// time, so that a row still shows how much of it went to forward, backward and waiting.
enum class DrawKind : int32_t {
  kForward,
  kBackward,
  kRecv,
  kSync,
  kUpdate,
  kIdle,
  kSend,
  kDense,  // legend only
};
constexpr int kNumDrawKinds = 8;
constexpr int kStacked = 5;  // forward .. update

struct KindStyle {
  const char* fill;
  const char* legend;
};

// Light blue / orange compute (black numbers read on both), red waits, purple sync, green
// update, light grey idle (the row background), mid grey sends.
constexpr KindStyle kStyles[kNumDrawKinds] = {
    {"#6baed6", "forward"},
    {"#fd8d3c", "backward"},
    {"#d62728", "communication wait"},
    {"#9467bd", "gradient sync"},
    {"#2ca02c", "update"},
    {"#ececec", "idle"},
    {"#8c8c8c", "sending (link busy)"},
    {"", "too dense for single tasks: stacked share of time"},
};

const KindStyle& Style(DrawKind k) { return kStyles[static_cast<int>(k)]; }

// Layout, in pixels.
constexpr int32_t kMinWidth = 320;
constexpr int64_t kRowPitch = 36;   // one stage row
constexpr int64_t kBarHeight = 24;  // its task bar
constexpr int64_t kSendTop = 26;    // the send strip under the bar ...
constexpr int64_t kSendHeight = 3;  // ... thin on purpose
// Tasks narrower than kNarrow px are hard to tell apart: same-kind neighbours merge, and runs
// of them become dense stretches. Wider tasks are drawn one by one with a white outline.
constexpr int64_t kNarrow = 6;
constexpr double kLabelMinWidth = 14;    // a microbatch number is written on wider blocks
constexpr double kNumberCharWidth = 6;   // digits at 10 px
constexpr double kLabelCharWidth = 7.2;  // 12 px sans-serif, generous average
constexpr double kSmallCharWidth = 6;    // 10-11 px
constexpr double kMinTickSpacing = 90;   // between time axis labels
constexpr int64_t kRightMargin = 78;     // per-row idle / wait percentages

// Fixed-point text independent of the C locale (std::to_chars), -0 printed as 0.
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

// The input as valid UTF-8 without XML-forbidden control characters: an invalid byte or a
// control character becomes '?', so any label yields a well-formed document.
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

// Escaped for XML text and attribute values.
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

// At most max_chars characters; a cut one ends in an ellipsis.
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

// "dev 0-7", "dev 0-3,8-11", "dev 5"; cut to max_chars with the device count kept:
// "dev 0,8,16,… (64)".
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

// A duration for the header: four significant digits in s, ms, µs or ns.
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

// A time axis in round steps (1, 2 or 5 times a power of ten) at least min_spacing px apart,
// labelled in the unit that suits the whole range.
struct TimeAxis {
  double step = 1;
  double unit = 1;
  const char* unit_name = "s";
  int decimals = 0;
};

TimeAxis ChooseTimeAxis(double t_end, double plot_width, double min_spacing) {
  TimeAxis a;
  const double min_step = t_end * min_spacing / std::max(plot_width, 1.0);
  const double mag = std::pow(10.0, std::floor(std::log10(min_step)));
  a.step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= min_step * (1 - 1e-9)) {
      a.step = m * mag;
      break;
    }
  }
  if (t_end >= 1) {
    a.unit = 1, a.unit_name = "s";
  } else if (t_end >= 1e-3) {
    a.unit = 1e-3, a.unit_name = "ms";
  } else if (t_end >= 1e-6) {
    a.unit = 1e-6, a.unit_name = "\u00b5s";
  } else {
    a.unit = 1e-9, a.unit_name = "ns";
  }
  a.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(a.step / a.unit) + 1e-9)));
  return a;
}

// A block of one stage row in whole pixels: [x0, x1) relative to the plot's left edge.
struct Block {
  DrawKind kind = DrawKind::kIdle;
  int64_t x0 = 0, x1 = 0;
  int64_t microbatch = -1;
  int64_t parts = 1;  // > 1: several tasks merged, drawn without number or outline
  int64_t width() const { return x1 - x0; }
};

bool IsCompute(DrawKind k) { return k == DrawKind::kForward || k == DrawKind::kBackward; }

DrawKind ToDrawKind(SimEventKind k) {
  switch (k) {
    case SimEventKind::kForward:
      return DrawKind::kForward;
    case SimEventKind::kBackward:
      return DrawKind::kBackward;
    case SimEventKind::kSend:
      return DrawKind::kSend;
    case SimEventKind::kRecv:
      return DrawKind::kRecv;
    case SimEventKind::kSync:
      return DrawKind::kSync;
    case SimEventKind::kUpdate:
      return DrawKind::kUpdate;
    case SimEventKind::kIdle:
      break;
  }
  return DrawKind::kIdle;
}

// Maps times to whole pixels; events that share a boundary time share its pixel, so a stage's
// tiling stays a tiling and sub-pixel events simply vanish between their neighbours.
struct TimeScale {
  double t_end = 1;
  int64_t width = 1;
  double X(double t) const {  // fractional pixels
    if (!(t > 0)) return 0;
    if (t >= t_end) return static_cast<double>(width);
    return t / t_end * static_cast<double>(width);
  }
  int64_t Px(double t) const {
    if (!(t > 0)) return 0;
    if (t >= t_end) return width;
    return std::llround(t / t_end * static_cast<double>(width));
  }
};

// A dense stretch: bins of whole pixels, each with the cumulative heights (bottom up, in
// pixels of the bar) of the stacked kinds; equal neighbouring bins are merged.
struct DenseBin {
  int64_t x1 = 0;  // the bin ends here; it starts where the previous one ended
  std::array<int64_t, kStacked> cum{};
};
struct DenseStretch {
  int64_t x0 = 0;
  std::vector<DenseBin> bins;
};

struct StageRow {
  std::vector<Block> blocks;  // idle is the background and not listed
  std::vector<DenseStretch> dense;
};

// An event in fractional pixels.
struct Span {
  DrawKind kind = DrawKind::kIdle;
  double x0 = 0, x1 = 0;
  int64_t microbatch = -1;
  double width() const { return x1 - x0; }
};

constexpr double kMinDenseWidth = 12;  // shorter runs of narrow tasks are drawn one by one

// Spans [i, j), all narrower than kNarrow, as stacked shares per bin. A bin holds about 16
// tasks so that the shares do not flicker with the phase of the schedule.
DenseStretch Densify(const std::vector<Span>& spans, size_t i, size_t j, int64_t x0, int64_t x1) {
  DenseStretch d;
  d.x0 = x0;
  const double avg = (spans[j - 1].x1 - spans[i].x0) / static_cast<double>(j - i);
  const int64_t bin = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(16 * avg)), 4, 32);
  size_t k = i;
  for (int64_t p = x0; p < x1;) {
    int64_t q = std::min(p + bin, x1);
    if (x1 - q < bin / 2) q = x1;  // no sliver at the end
    const double lo = std::max(static_cast<double>(p), spans[i].x0);
    const double hi = std::min(static_cast<double>(q), spans[j - 1].x1);
    std::array<double, kStacked + 1> cover{};  // the stacked kinds, then everything else
    while (k < j && spans[k].x1 <= lo) ++k;
    for (size_t m = k; m < j && spans[m].x0 < hi; ++m) {
      const double c = std::min(spans[m].x1, hi) - std::max(spans[m].x0, lo);
      const int kind = std::min(static_cast<int>(spans[m].kind), kStacked);
      if (c > 0) cover[static_cast<size_t>(kind)] += c;
    }
    DenseBin b;
    b.x1 = q;
    double acc = 0;
    for (size_t s = 0; s < kStacked; ++s) {
      acc += cover[s];
      b.cum[s] = hi > lo ? std::llround(static_cast<double>(kBarHeight) * acc / (hi - lo)) : 0;
    }
    if (!d.bins.empty() && d.bins.back().cum == b.cum) {
      d.bins.back().x1 = q;
    } else {
      d.bins.push_back(b);
    }
    p = q;
  }
  return d;
}

// The stage's blocks: tasks, waits, sync and update one by one where they are wide enough (or
// few), consecutive narrow same-kind tasks merged into one block, and long runs of narrow
// events as dense stretches.
StageRow BuildStageRow(const std::vector<const SimEvent*>& events, const TimeScale& ts) {
  std::vector<Span> spans;
  spans.reserve(events.size());
  for (const SimEvent* e : events) {
    Span sp;
    sp.kind = ToDrawKind(e->kind);
    sp.x0 = ts.X(e->start);
    sp.x1 = std::max(ts.X(e->end), sp.x0);
    sp.microbatch = IsCompute(sp.kind) ? e->microbatch : -1;
    spans.push_back(sp);
  }
  StageRow row;
  int64_t last_x1 = 0;
  const auto add_block = [&](const Span& sp) {
    Block b;
    b.kind = sp.kind;
    b.x0 = std::max<int64_t>(std::llround(sp.x0), last_x1);
    b.x1 = std::llround(sp.x1);
    b.microbatch = sp.microbatch;
    if (b.x1 <= b.x0) return;
    last_x1 = b.x1;
    if (b.kind == DrawKind::kIdle) return;
    if (!row.blocks.empty()) {
      Block& p = row.blocks.back();
      const bool narrow = (p.parts > 1 || p.width() < kNarrow) && b.width() < kNarrow;
      if (p.kind == b.kind && p.x1 == b.x0 && (!IsCompute(b.kind) || narrow)) {
        p.x1 = b.x1;
        p.parts += 1;
        p.microbatch = -1;
        return;
      }
    }
    row.blocks.push_back(b);
  };
  for (size_t i = 0; i < spans.size();) {
    size_t j = i;
    while (j < spans.size() && spans[j].width() < kNarrow) ++j;
    if (j > i && spans[j - 1].x1 - spans[i].x0 >= kMinDenseWidth) {
      const int64_t x0 = std::max<int64_t>(std::llround(spans[i].x0), last_x1);
      const int64_t x1 = std::llround(spans[j - 1].x1);
      if (x1 > x0) {
        row.dense.push_back(Densify(spans, i, j, x0, x1));
        last_x1 = x1;
      }
      i = j;
      continue;
    }
    for (const size_t end = std::max(j, i + 1); i < end; ++i) add_block(spans[i]);
  }
  return row;
}

// The union of the stage's sends in whole pixels (at least one pixel each, so that short
// transfers stay visible).
std::vector<Block> SendBlocks(const std::vector<const SimEvent*>& sends, const TimeScale& ts) {
  std::vector<Block> spans;
  for (const SimEvent* e : sends) {
    Block b;
    b.kind = DrawKind::kSend;
    b.x0 = std::min(ts.Px(e->start), ts.width - 1);
    b.x1 = std::max(ts.Px(e->end), b.x0 + 1);
    spans.push_back(b);
  }
  std::sort(spans.begin(), spans.end(), [](const Block& a, const Block& b) {
    return a.x0 != b.x0 ? a.x0 < b.x0 : a.x1 < b.x1;
  });
  std::vector<Block> merged;
  for (const Block& b : spans) {
    if (!merged.empty() && b.x0 <= merged.back().x1) {
      merged.back().x1 = std::max(merged.back().x1, b.x1);
    } else {
      merged.push_back(b);
    }
  }
  return merged;
}

void AppendRect(std::string* out, int64_t x, int64_t y, int64_t w, int64_t h) {
  *out += "<rect x=\"" + Int(x) + "\" y=\"" + Int(y) + "\" width=\"" + Int(w) + "\" height=\"" +
          Int(h) + "\"/>";
}

// A dense stretch as one step-shaped area per stacked kind, painted top layer first, each
// from the bar's bottom up to its cumulative height, so that the lower layers cover the rest.
void AppendDense(std::string* out, const DenseStretch& d, int64_t left, int64_t bottom) {
  for (int k = kStacked - 1; k >= 0; --k) {
    const auto uk = static_cast<size_t>(k);
    bool visible = false;
    for (const DenseBin& b : d.bins) visible |= b.cum[uk] > (k > 0 ? b.cum[uk - 1] : 0);
    if (!visible) continue;
    *out += "<path fill=\"" + std::string(Style(static_cast<DrawKind>(k)).fill) + "\" d=\"M" +
            Int(left + d.x0) + " " + Int(bottom);
    int64_t level = -1;
    for (size_t i = 0; i < d.bins.size(); ++i) {
      if (d.bins[i].cum[uk] != level) {
        if (i > 0) *out += "H" + Int(left + d.bins[i - 1].x1);
        level = d.bins[i].cum[uk];
        *out += "V" + Int(bottom - level);
      }
    }
    *out += "H" + Int(left + d.bins.back().x1) + "V" + Int(bottom) + "Z\"/>\n";
  }
}

// Legend entries laid out left to right, wrapping at the plot's width.
struct LegendItem {
  DrawKind kind;
  int64_t x = 0, line = 0;
};

std::vector<LegendItem> LayoutLegend(const std::vector<DrawKind>& kinds, int64_t left,
                                     int64_t right) {
  std::vector<LegendItem> items;
  int64_t x = left, line = 0;
  for (DrawKind k : kinds) {
    const auto w = static_cast<int64_t>(
        16 + kSmallCharWidth * static_cast<double>(DecodeLabel(Style(k).legend).size()) + 18);
    if (x > left && x + w > right) {
      x = left;
      ++line;
    }
    items.push_back({k, x, line});
    x += w;
  }
  return items;
}

std::string ScheduleName(PipelineScheduleKind k) {
  return k == PipelineScheduleKind::kGPipe ? "GPipe" : "1F1B";
}

// Per stage its task events in time order and its sends that moved something, with the time
// the drawing spans.
struct StageEvents {
  std::vector<std::vector<const SimEvent*>> tasks, sends;
  bool any_send = false;
  double t_end = 1;
};

StageEvents CollectStageEvents(const PipelineSimResult& result, int64_t num_stages) {
  StageEvents events;
  events.tasks.resize(static_cast<size_t>(num_stages));
  events.sends.resize(static_cast<size_t>(num_stages));
  double t_last = 0;
  for (const SimEvent& e : result.timeline) {
    if (e.stage < 0 || e.stage >= num_stages) continue;
    t_last = std::max(t_last, e.end);
    if (e.kind == SimEventKind::kSend) {
      if (!(e.end > e.start)) continue;  // zero bytes and no latency: nothing moved
      events.sends[static_cast<size_t>(e.stage)].push_back(&e);
      events.any_send = true;
    } else {
      events.tasks[static_cast<size_t>(e.stage)].push_back(&e);
    }
  }
  for (auto& v : events.tasks) {
    std::stable_sort(v.begin(), v.end(),
                     [](const SimEvent* a, const SimEvent* b) { return a->start < b->start; });
  }
  double t_end = result.iteration_seconds > 0 ? result.iteration_seconds : t_last;
  if (!(t_end > 0) || !std::isfinite(t_end)) t_end = 1;
  events.t_end = t_end;
  return events;
}

// Row labels: the caller's or "stage k", with the devices on a second line; `left` is the
// plot's left edge, wide enough for the longest label (within bounds).
struct RowLabels {
  std::vector<std::u32string> names;
  std::vector<std::string> devices;
  int64_t left = 0;
};

RowLabels LayOutRowLabels(const PipelineSimInput& input, const TimelineSvgOptions& options,
                          int64_t width) {
  const auto num_stages = static_cast<int64_t>(input.stages.size());
  const int64_t max_left = std::max<int64_t>(90, width * 3 / 10);
  const auto max_label_chars = static_cast<int64_t>((max_left - 16) / kLabelCharWidth);
  const auto max_dev_chars = static_cast<int64_t>((max_left - 16) / kSmallCharWidth);
  RowLabels labels;
  double label_px = 0;
  for (int64_t s = 0; s < num_stages; ++s) {
    const auto us = static_cast<size_t>(s);
    std::u32string name = us < options.stage_labels.size() && !options.stage_labels[us].empty()
                              ? DecodeLabel(options.stage_labels[us])
                              : DecodeLabel("stage " + Int(s));
    name = Ellipsize(std::move(name), max_label_chars);
    labels.devices.push_back(DeviceRuns(input.stages[us].devices, max_dev_chars));
    label_px = std::max(
        {label_px, kLabelCharWidth * static_cast<double>(name.size()),
         kSmallCharWidth * static_cast<double>(DecodeLabel(labels.devices.back()).size())});
    labels.names.push_back(std::move(name));
  }
  labels.left = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(label_px)) + 16, 90, max_left);
  return labels;
}

// Where everything goes, top to bottom, in pixels.
struct PageLayout {
  int64_t width = 0, height = 0;
  int64_t left = 0, plot_width = 0;
  int64_t title_y = 0, info_y = 0;
  int64_t legend_top = 0;
  std::vector<LegendItem> legend;
  int64_t rows_top = 0, rows_bottom = 0, axis_y = 0;
};

PageLayout LayOutPage(int64_t width, int64_t left, bool has_title, int64_t num_stages,
                      const std::vector<DrawKind>& legend_kinds) {
  PageLayout page;
  page.width = width;
  page.left = left;
  page.plot_width = width - left - kRightMargin;
  int64_t y = 8;
  page.title_y = y + 16;
  if (has_title) y += 26;
  page.info_y = y + 13;
  y += 22;
  page.legend = LayoutLegend(legend_kinds, left, width - 8);
  page.legend_top = y;
  y += (page.legend.empty() ? 0 : page.legend.back().line + 1) * 18 + 8;
  page.rows_top = y;
  page.rows_bottom = page.rows_top + num_stages * kRowPitch;
  page.axis_y = page.rows_bottom + 2;
  page.height = page.axis_y + 40;
  return page;
}

// The document's opening: the svg element, its title and the white background.
void AppendDocumentStart(std::string* svg, const PageLayout& page, const std::string& title) {
  *svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Int(page.width) + "\" height=\"" +
          Int(page.height) + "\" viewBox=\"0 0 " + Int(page.width) + " " + Int(page.height) +
          "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n";
  *svg += "<title>";
  *svg += title.empty() ? std::string("pipeline timeline") : Escaped(title, 400);
  *svg += "</title>\n";
  *svg += "<rect width=\"" + Int(page.width) + "\" height=\"" + Int(page.height) +
          "\" fill=\"#ffffff\"/>\n";
}

// Header: title, then the iteration time and the shape of the run.
void AppendHeader(std::string* svg, const PageLayout& page, const PipelineSimInput& input,
                  const PipelineSimResult& result, const std::string& title) {
  const auto num_stages = static_cast<int64_t>(input.stages.size());
  if (!title.empty()) {
    *svg += "<text x=\"" + Int(page.left) + "\" y=\"" + Int(page.title_y) +
            "\" font-size=\"16\" font-weight=\"bold\">" +
            Escaped(title, static_cast<int64_t>((page.width - page.left - 8) / 9.5)) + "</text>\n";
  }
  std::string info = "iteration " + Duration(result.iteration_seconds);
  if (result.closed_form_seconds > 0) {
    info += "  \u00b7  closed form " + Duration(result.closed_form_seconds);
  }
  info += "  \u00b7  " + ScheduleName(input.schedule) + "  \u00b7  " + Int(num_stages) +
          (num_stages == 1 ? " stage" : " stages") + "  \u00b7  " + Int(input.microbatches) +
          (input.microbatches == 1 ? " microbatch" : " microbatches");
  if (result.timeline.empty()) info += "  \u00b7  no timeline recorded";
  *svg += "<text x=\"" + Int(page.left) + "\" y=\"" + Int(page.info_y) + "\" font-size=\"12\">" +
          Escaped(info, 400) + "</text>\n";
}

void AppendLegend(std::string* svg, const PageLayout& page) {
  *svg += "<g font-size=\"11\">\n";
  for (const LegendItem& it : page.legend) {
    const int64_t ly = page.legend_top + it.line * 18;
    if (it.kind == DrawKind::kDense) {  // a small stack: forward, backward, wait
      for (int64_t k = 0; k < 3; ++k) {
        *svg += "<rect x=\"" + Int(it.x) + "\" y=\"" + Int(ly + 10 - 4 * k) +
                "\" width=\"12\" height=\"4\" fill=\"" + Style(static_cast<DrawKind>(k)).fill +
                "\"/>";
      }
    } else {
      *svg += "<rect x=\"" + Int(it.x) + "\" y=\"" + Int(ly + 2) +
              "\" width=\"12\" height=\"12\" stroke=\"#999999\" stroke-width=\"0.5\" fill=\"" +
              Style(it.kind).fill + "\"/>";
    }
    *svg += "<text x=\"" + Int(it.x + 16) + "\" y=\"" + Int(ly + 12) + "\">" +
            Escaped(Style(it.kind).legend, 100) + "</text>\n";
  }
  *svg += "</g>\n";
}

// Row backgrounds (idle), then the vertical grid lines at the ticks.
void AppendBackgroundAndGrid(std::string* svg, const PageLayout& page, int64_t num_stages,
                             const std::vector<int64_t>& tick_x) {
  *svg += "<g fill=\"" + std::string(Style(DrawKind::kIdle).fill) + "\">";
  for (int64_t s = 0; s < num_stages; ++s) {
    AppendRect(svg, page.left, page.rows_top + s * kRowPitch, page.plot_width, kBarHeight);
  }
  *svg += "</g>\n";
  *svg += "<g stroke=\"#bbbbbb\" stroke-width=\"1\">";
  for (int64_t x : tick_x) {
    *svg += "<line x1=\"" + Int(x) + ".5\" y1=\"" + Int(page.rows_top) + "\" x2=\"" + Int(x) +
            ".5\" y2=\"" + Int(page.rows_bottom) + "\"/>";
  }
  *svg += "</g>\n";
}

// Blocks by kind: one group per fill; tasks wide enough get a white outline so that
// neighbours stay apart.
void AppendBlocks(std::string* svg, const StageRow& row, int64_t left, int64_t ry) {
  for (int k = 0; k < kNumDrawKinds; ++k) {
    const auto kind = static_cast<DrawKind>(k);
    if (kind == DrawKind::kIdle || kind == DrawKind::kSend || kind == DrawKind::kDense) continue;
    for (int outlined = 0; outlined < 2; ++outlined) {
      std::string group;
      for (const Block& b : row.blocks) {
        const bool wide_task = IsCompute(b.kind) && b.parts == 1 && b.width() >= kNarrow;
        if (b.kind != kind || wide_task != (outlined == 1)) continue;
        AppendRect(&group, left + b.x0, ry, b.width(), kBarHeight);
      }
      if (group.empty()) continue;
      *svg += "<g fill=\"" + std::string(Style(kind).fill) + "\"";
      if (outlined) *svg += " stroke=\"#ffffff\" stroke-width=\"1\"";
      *svg += ">" + group + "</g>\n";
    }
  }
}

// Microbatch numbers, centred on the blocks wide enough to hold them.
void AppendMicrobatchNumbers(std::string* svg, const StageRow& row, int64_t left, int64_t ry) {
  std::string numbers;
  for (const Block& b : row.blocks) {
    if (!IsCompute(b.kind) || b.parts != 1 || b.microbatch < 0) continue;
    const std::string number = Int(b.microbatch);
    const double need =
        std::max(kLabelMinWidth, kNumberCharWidth * static_cast<double>(number.size()) + 4);
    if (static_cast<double>(b.width()) < need) continue;
    numbers += "<text x=\"" +
               Fixed(static_cast<double>(left) + 0.5 * static_cast<double>(b.x0 + b.x1), 1) +
               "\" y=\"" + Int(ry + 16) + "\">" + number + "</text>";
  }
  if (!numbers.empty()) {
    *svg += "<g font-size=\"10\" text-anchor=\"middle\" fill=\"#000000\">" + numbers + "</g>\n";
  }
}

// Right margin: the stage's idle and communication wait shares.
void AppendStageShares(std::string* svg, const PageLayout& page, const SimStageStats& stats,
                       double t_end, int64_t ry) {
  const double idle = 100 * stats.idle_seconds / t_end;
  const double wait = 100 * stats.communication_wait_seconds / t_end;
  const int64_t x = page.left + page.plot_width + 6;
  *svg += "<text x=\"" + Int(x) + "\" y=\"" + Int(ry + 11) +
          "\" font-size=\"10\" fill=\"#555555\">idle " + Fixed(idle, 1) + "%</text>";
  if (stats.communication_wait_seconds > 0) {
    *svg += "<text x=\"" + Int(x) + "\" y=\"" + Int(ry + 23) + "\" font-size=\"10\" fill=\"" +
            Style(DrawKind::kRecv).fill + "\">wait " + Fixed(wait, 1) + "%</text>";
  }
  *svg += "\n";
}

// One stage's group: its label and devices, blocks, dense stretches, sends, microbatch
// numbers and shares.
void AppendStage(std::string* svg, const PageLayout& page, int64_t s, const RowLabels& labels,
                 const StageRow& row, const std::vector<Block>& send_row,
                 const PipelineSimResult& result, double t_end) {
  const auto us = static_cast<size_t>(s);
  const int64_t left = page.left;
  const int64_t ry = page.rows_top + s * kRowPitch;
  *svg += "<g id=\"stage" + Int(s) + "\">\n";
  // Row label: name, then devices in grey.
  *svg += "<text x=\"" + Int(left - 8) + "\" y=\"" + Int(ry + 11) +
          "\" font-size=\"12\" text-anchor=\"end\">";
  AppendEscaped(svg, labels.names[us]);
  *svg += "</text><text x=\"" + Int(left - 8) + "\" y=\"" + Int(ry + 23) +
          "\" font-size=\"10\" fill=\"#555555\" text-anchor=\"end\">" +
          Escaped(labels.devices[us], 400) + "</text>\n";
  AppendBlocks(svg, row, left, ry);
  for (const DenseStretch& d : row.dense) AppendDense(svg, d, left, ry + kBarHeight);
  if (!send_row.empty()) {
    *svg += "<g fill=\"" + std::string(Style(DrawKind::kSend).fill) + "\">";
    for (const Block& b : send_row) {
      AppendRect(svg, left + b.x0, ry + kSendTop, b.width(), kSendHeight);
    }
    *svg += "</g>\n";
  }
  AppendMicrobatchNumbers(svg, row, left, ry);
  if (us < result.stages.size()) AppendStageShares(svg, page, result.stages[us], t_end, ry);
  *svg += "</g>\n";
}

void AppendTimeAxis(std::string* svg, const PageLayout& page, const TimeAxis& axis,
                    const std::vector<int64_t>& tick_x) {
  const int64_t axis_y = page.axis_y;
  *svg += "<g stroke=\"#333333\" stroke-width=\"1\"><line x1=\"" + Int(page.left) + "\" y1=\"" +
          Int(axis_y) + ".5\" x2=\"" + Int(page.left + page.plot_width) + "\" y2=\"" + Int(axis_y) +
          ".5\"/>";
  for (int64_t x : tick_x) {
    *svg += "<line x1=\"" + Int(x) + ".5\" y1=\"" + Int(axis_y) + "\" x2=\"" + Int(x) +
            ".5\" y2=\"" + Int(axis_y + 6) + "\"/>";
  }
  *svg += "</g>\n<g font-size=\"11\" text-anchor=\"middle\">";
  for (size_t k = 0; k < tick_x.size(); ++k) {
    const double v = static_cast<double>(k) * axis.step / axis.unit;
    *svg += "<text x=\"" + Int(tick_x[k]) + "\" y=\"" + Int(axis_y + 19) + "\">" +
            Fixed(v, axis.decimals) + " " + axis.unit_name + "</text>";
  }
  *svg += "</g>\n<text x=\"" + Int(page.left + page.plot_width / 2) + "\" y=\"" + Int(axis_y + 35) +
          "\" font-size=\"11\" fill=\"#555555\" text-anchor=\"middle\">time</text>\n";
}

}  // namespace

std::string TimelineSvg(const PipelineSimInput& input, const PipelineSimResult& result,
                        const TimelineSvgOptions& options) {
  const int64_t width = std::max(options.width, kMinWidth);
  const auto num_stages = static_cast<int64_t>(input.stages.size());
  const StageEvents events = CollectStageEvents(result, num_stages);
  const double t_end = events.t_end;
  const RowLabels labels = LayOutRowLabels(input, options, width);
  const TimeScale ts{t_end, width - labels.left - kRightMargin};

  std::vector<StageRow> rows(static_cast<size_t>(num_stages));
  std::vector<std::vector<Block>> send_rows(static_cast<size_t>(num_stages));
  bool any_dense = false;
  for (size_t s = 0; s < rows.size(); ++s) {
    rows[s] = BuildStageRow(events.tasks[s], ts);
    send_rows[s] = SendBlocks(events.sends[s], ts);
    any_dense |= !rows[s].dense.empty();
  }
  std::vector<DrawKind> legend_kinds = {DrawKind::kForward, DrawKind::kBackward, DrawKind::kRecv,
                                        DrawKind::kSync,    DrawKind::kUpdate,   DrawKind::kIdle};
  if (events.any_send) legend_kinds.push_back(DrawKind::kSend);
  if (any_dense) legend_kinds.push_back(DrawKind::kDense);
  const PageLayout page =
      LayOutPage(width, labels.left, !options.title.empty(), num_stages, legend_kinds);

  const TimeAxis axis =
      ChooseTimeAxis(t_end, static_cast<double>(page.plot_width), kMinTickSpacing);
  const auto num_ticks = static_cast<int64_t>(std::floor(t_end / axis.step + 1e-9)) + 1;
  std::vector<int64_t> tick_x;
  for (int64_t k = 0; k < num_ticks; ++k) tick_x.push_back(page.left + ts.Px(axis.step * k));

  std::string svg;
  svg.reserve(8192);
  AppendDocumentStart(&svg, page, options.title);
  AppendHeader(&svg, page, input, result, options.title);
  AppendLegend(&svg, page);
  AppendBackgroundAndGrid(&svg, page, num_stages, tick_x);
  for (int64_t s = 0; s < num_stages; ++s) {
    const auto us = static_cast<size_t>(s);
    AppendStage(&svg, page, s, labels, rows[us], send_rows[us], result, t_end);
  }
  AppendTimeAxis(&svg, page, axis, tick_x);
  svg += "</svg>";
  return svg;
}

}  // namespace alpa

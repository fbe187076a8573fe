#include "exec/sim/timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

#include "exec/sim/timeline_rows.h"
#include "exec/sim/timeline_text.h"

namespace alpa {
namespace {

using namespace timeline_internal;  // NOLINT: the renderer's own internals

// How each kind is drawn and named in the legend.
struct KindStyle {
  const char* fill;
  const char* legend;
};

// Light blue / orange / light orange compute (black numbers read on all; the weight gradient a
// paler shade of the backward it belongs to), red waits, purple sync, green update, light grey
// idle (the row background), mid grey sends.
constexpr KindStyle kStyles[kNumDrawKinds] = {
    {"#6baed6", "forward"},
    {"#fd8d3c", "backward"},
    {"#fdd0a2", "weight gradient"},
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
constexpr int64_t kRowPitch = 36;        // one stage (or device group) row
constexpr int64_t kSendTop = 26;         // the send strip under the bar ...
constexpr int64_t kSendHeight = 3;       // ... thin on purpose
constexpr double kLabelMinWidth = 14;    // a microbatch number is written on wider blocks
constexpr double kNumberCharWidth = 6;   // digits at 10 px
constexpr double kLabelCharWidth = 7.2;  // 12 px sans-serif, generous average
constexpr double kSmallCharWidth = 6;    // 10-11 px
constexpr double kMinTickSpacing = 90;   // between time axis labels
constexpr int64_t kRightMargin = 78;     // per-row idle / wait percentages

// A time axis in round steps (1, 2 or 5 times a power of ten) at least min_spacing px apart,
// labelled in the unit that suits the whole range.
struct TimeAxis {
  double step = 1;
  double unit = 1;
  const char* unit_name = "s";
  int decimals = 0;
};

TimeAxis ChooseTimeAxis(double t_end, double plot_width, double min_spacing) {
  TimeAxis axis;
  const double min_step = t_end * min_spacing / std::max(plot_width, 1.0);
  const double mag = std::pow(10.0, std::floor(std::log10(min_step)));
  axis.step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= min_step * (1 - 1e-9)) {
      axis.step = m * mag;
      break;
    }
  }
  if (t_end >= 1) {
    axis.unit = 1, axis.unit_name = "s";
  } else if (t_end >= 1e-3) {
    axis.unit = 1e-3, axis.unit_name = "ms";
  } else if (t_end >= 1e-6) {
    axis.unit = 1e-6, axis.unit_name = "\u00b5s";
  } else {
    axis.unit = 1e-9, axis.unit_name = "ns";
  }
  axis.decimals =
      std::max(0, -static_cast<int>(std::floor(std::log10(axis.step / axis.unit) + 1e-9)));
  return axis;
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

// The rows: one per stage, or under interleaved 1F1B one per device group (row g: stages g,
// g + P, ...; its stats are result.stages[g], the group's).
int64_t NumRows(const PipelineSimInput& input) {
  const auto num_stages = static_cast<int32_t>(input.stages.size());
  const int32_t groups = PipelineGroups(num_stages, input.virtual_stages);
  return input.virtual_stages > 1 && groups > 0 ? groups : num_stages;
}

// The default label of row r: "stage r", or "group r: stages r, r + P, ...".
std::string DefaultRowLabel(int64_t num_stages, int64_t num_rows, int64_t r) {
  if (num_rows == num_stages) return "stage " + Int(r);
  std::string label = "group " + Int(r) + ": stages ";
  for (int64_t s = r; s < num_stages; s += num_rows) label += (s == r ? "" : ", ") + Int(s);
  return label;
}

// Row labels: the caller's or the default, with the devices on a second line; `left` is the
// plot's left edge, wide enough for the longest label (within bounds).
struct RowLabels {
  std::vector<std::u32string> names;
  std::vector<std::string> devices;
  int64_t left = 0;
};

RowLabels LayOutRowLabels(const PipelineSimInput& input, const TimelineSvgOptions& options,
                          int64_t width, int64_t num_rows) {
  const auto num_stages = static_cast<int64_t>(input.stages.size());
  const int64_t max_left = std::max<int64_t>(90, width * 3 / 10);
  const auto max_label_chars = static_cast<int64_t>((max_left - 16) / kLabelCharWidth);
  const auto max_dev_chars = static_cast<int64_t>((max_left - 16) / kSmallCharWidth);
  RowLabels labels;
  double label_px = 0;
  for (int64_t s = 0; s < num_rows; ++s) {
    const auto us = static_cast<size_t>(s);
    std::u32string name = us < options.stage_labels.size() && !options.stage_labels[us].empty()
                              ? DecodeLabel(options.stage_labels[us])
                              : DecodeLabel(DefaultRowLabel(num_stages, num_rows, s));
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

PageLayout LayOutPage(int64_t width, int64_t left, bool has_title, int64_t num_rows,
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
  page.rows_bottom = page.rows_top + num_rows * kRowPitch;
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
                  const PipelineSimResult& result, const std::string& title, int64_t num_rows) {
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
  info += "  \u00b7  " + std::string(ScheduleDisplayName(input.schedule)) + "  \u00b7  " +
          Int(num_stages) + (num_stages == 1 ? " stage" : " stages");
  if (num_rows != num_stages) info += " on " + Int(num_rows) + " device groups";
  info += "  \u00b7  " + Int(input.microbatches) +
          (input.microbatches == 1 ? " microbatch" : " microbatches");
  if (num_rows != num_stages) info += "  \u00b7  tasks read stage:microbatch";
  if (result.timeline.empty()) info += "  \u00b7  no timeline recorded";
  *svg += "<text x=\"" + Int(page.left) + "\" y=\"" + Int(page.info_y) + "\" font-size=\"12\">" +
          Escaped(info, 400) + "</text>\n";
}

void AppendLegend(std::string* svg, const PageLayout& page) {
  *svg += "<g font-size=\"11\">\n";
  for (const LegendItem& it : page.legend) {
    const int64_t ly = page.legend_top + it.line * 18;
    if (it.kind == DrawKind::kDense) {  // a small stack: forward, backward, wait
      int64_t y = ly + 10;
      for (DrawKind k : {DrawKind::kForward, DrawKind::kBackward, DrawKind::kRecv}) {
        *svg += "<rect x=\"" + Int(it.x) + "\" y=\"" + Int(y) +
                "\" width=\"12\" height=\"4\" fill=\"" + Style(k).fill + "\"/>";
        y -= 4;
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
void AppendBackgroundAndGrid(std::string* svg, const PageLayout& page, int64_t num_rows,
                             const std::vector<int64_t>& tick_x) {
  *svg += "<g fill=\"" + std::string(Style(DrawKind::kIdle).fill) + "\">";
  for (int64_t s = 0; s < num_rows; ++s) {
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

// Microbatch numbers, centred on the blocks wide enough to hold them; on a device group's row
// (with_stage) "stage:microbatch", since the row holds the tasks of several stages.
void AppendMicrobatchNumbers(std::string* svg, const StageRow& row, int64_t left, int64_t ry,
                             bool with_stage) {
  std::string numbers;
  for (const Block& b : row.blocks) {
    if (!IsCompute(b.kind) || b.parts != 1 || b.microbatch < 0) continue;
    const std::string number =
        with_stage ? Int(b.stage) + ":" + Int(b.microbatch) : Int(b.microbatch);
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

// One row's SVG group ("stage<s>", or "group<g>" for a device group's row): its label and
// devices, blocks, dense stretches, sends, microbatch numbers and shares.
void AppendStage(std::string* svg, const PageLayout& page, int64_t s, bool group_row,
                 const RowLabels& labels, const StageRow& row, const std::vector<Block>& send_row,
                 const PipelineSimResult& result, double t_end) {
  const auto us = static_cast<size_t>(s);
  const int64_t left = page.left;
  const int64_t ry = page.rows_top + s * kRowPitch;
  *svg += "<g id=\"" + std::string(group_row ? "group" : "stage") + Int(s) + "\">\n";
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
  AppendMicrobatchNumbers(svg, row, left, ry, group_row);
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
  const int64_t num_rows = NumRows(input);
  const bool group_rows = num_rows != num_stages;
  const StageEvents events = CollectStageEvents(result, num_stages, num_rows);
  const double t_end = events.t_end;
  const RowLabels labels = LayOutRowLabels(input, options, width, num_rows);
  const TimeScale ts{t_end, width - labels.left - kRightMargin};

  std::vector<StageRow> rows(static_cast<size_t>(num_rows));
  std::vector<std::vector<Block>> send_rows(static_cast<size_t>(num_rows));
  bool any_dense = false;
  for (size_t s = 0; s < rows.size(); ++s) {
    rows[s] = BuildStageRow(events.tasks[s], ts);
    send_rows[s] = SendBlocks(events.sends[s], ts);
    any_dense |= !rows[s].dense.empty();
  }
  std::vector<DrawKind> legend_kinds = {DrawKind::kForward, DrawKind::kBackward};
  if (SplitsBackward(input.schedule)) legend_kinds.push_back(DrawKind::kWeightGradient);
  legend_kinds.insert(legend_kinds.end(),
                      {DrawKind::kRecv, DrawKind::kSync, DrawKind::kUpdate, DrawKind::kIdle});
  if (events.any_send) legend_kinds.push_back(DrawKind::kSend);
  if (any_dense) legend_kinds.push_back(DrawKind::kDense);
  const PageLayout page =
      LayOutPage(width, labels.left, !options.title.empty(), num_rows, legend_kinds);

  const TimeAxis axis =
      ChooseTimeAxis(t_end, static_cast<double>(page.plot_width), kMinTickSpacing);
  const auto num_ticks = static_cast<int64_t>(std::floor(t_end / axis.step + 1e-9)) + 1;
  std::vector<int64_t> tick_x;
  for (int64_t k = 0; k < num_ticks; ++k) tick_x.push_back(page.left + ts.Px(axis.step * k));

  std::string svg;
  svg.reserve(8192);
  AppendDocumentStart(&svg, page, options.title);
  AppendHeader(&svg, page, input, result, options.title, num_rows);
  AppendLegend(&svg, page);
  AppendBackgroundAndGrid(&svg, page, num_rows, tick_x);
  for (int64_t s = 0; s < num_rows; ++s) {
    const auto us = static_cast<size_t>(s);
    AppendStage(&svg, page, s, group_rows, labels, rows[us], send_rows[us], result, t_end);
  }
  AppendTimeAxis(&svg, page, axis, tick_x);
  svg += "</svg>";
  return svg;
}

}  // namespace alpa

// The timeline picture: well-formed SVG with one labelled row per stage, microbatch numbers on
// the compute blocks, a legend, escaped labels, bounded size for large runs; and a headless
// Chromium rendering of it to PNG (skipped when no Chromium is on PATH).
#include "exec/sim/timeline_svg.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "exec/sim/pipeline_simulator.h"

namespace alpa {
namespace {

// Stage s holds devices {2s, 2s + 1}; forward 1 s, backward 2 s; zero-byte transfers.
PipelineSimInput SmallPipeline(int32_t num_stages, int64_t microbatches) {
  PipelineSimInput in;
  in.hosts = 1;
  in.devices_per_host = 2 * num_stages;
  in.intra_host = {1e9, 0};
  in.inter_host = {1e9, 0};
  in.schedule = PipelineScheduleKind::kOneFOneB;
  in.microbatches = microbatches;
  for (int32_t s = 0; s < num_stages; ++s) {
    PipelineSimStage st;
    st.devices = std::vector<int64_t>{2 * s, 2 * s + 1};
    st.forward_seconds = 1;
    st.backward_seconds = 2;
    in.stages.push_back(st);
  }
  for (int32_t s = 0; s + 1 < num_stages; ++s) {
    PipelineSimTransfer f;
    f.from_stage = s;
    f.to_stage = s + 1;
    f.direction = SimTransferDirection::kForward;
    in.transfers.push_back(f);
    PipelineSimTransfer b = f;
    b.from_stage = s + 1;
    b.to_stage = s;
    b.direction = SimTransferDirection::kBackward;
    in.transfers.push_back(b);
  }
  return in;
}

PipelineSimResult Simulate(const PipelineSimInput& in) {
  Result<PipelineSimResult> r = SimulatePipeline(in);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : PipelineSimResult{};
}

int64_t Count(const std::string& hay, const std::string& needle) {
  int64_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// A small XML checker for what TimelineSvg writes: tags nest, attribute values are quoted,
// text holds no raw '<' and only the five predefined entities. Returns "" when well-formed.
std::string CheckXml(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  const auto check_entities = [](const std::string& text) -> std::string {
    for (size_t p = text.find('&'); p != std::string::npos; p = text.find('&', p + 1)) {
      const size_t semi = text.find(';', p);
      if (semi == std::string::npos) return "unterminated entity";
      const std::string ent = text.substr(p, semi - p + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;") {
        return "unknown entity " + ent;
      }
    }
    return "";
  };
  while (i < xml.size()) {
    const size_t lt = xml.find('<', i);
    const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (text.find('>') != std::string::npos) return "raw '>' in text: " + text;
    if (std::string e = check_entities(text); !e.empty()) return e;
    if (lt == std::string::npos) break;
    if (open.empty() && lt != 0 && text.find_first_not_of(" \n") != std::string::npos) {
      return "text outside the root";
    }
    // The tag, honouring quotes.
    size_t j = lt + 1;
    char quote = 0;
    for (; j < xml.size(); ++j) {
      if (quote) {
        if (xml[j] == quote) quote = 0;
        if (xml[j] == '<') return "raw '<' in an attribute";
      } else if (xml[j] == '"' || xml[j] == '\'') {
        quote = xml[j];
      } else if (xml[j] == '>') {
        break;
      }
    }
    if (j >= xml.size()) return "unterminated tag";
    const std::string tag = xml.substr(lt + 1, j - lt - 1);
    if (std::string e = check_entities(tag); !e.empty()) return e;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
    } else {
      const size_t end = tag.find_first_of(" \n/");
      const std::string name = tag.substr(0, end);
      if (name.empty()) return "tag without name";
      if (open.empty() && lt != 0) return "second root <" + name + ">";
      if (tag.back() != '/') open.push_back(name);
    }
    i = j + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return "";
}

bool StartsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool EndsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

void ExpectWellFormed(const std::string& svg) {
  EXPECT_TRUE(StartsWith(svg, "<svg")) << svg.substr(0, 80);
  EXPECT_TRUE(EndsWith(svg, "</svg>"));
  EXPECT_EQ(CheckXml(svg), "");
  // Every rect closes itself; every text element is closed.
  EXPECT_EQ(Count(svg, "</rect>"), 0);
  int64_t self_closed_rects = 0;
  for (size_t p = svg.find("<rect"); p != std::string::npos; p = svg.find("<rect", p + 1)) {
    const size_t gt = svg.find('>', p);
    self_closed_rects += gt != std::string::npos && svg[gt - 1] == '/';
  }
  EXPECT_EQ(self_closed_rects, Count(svg, "<rect"));
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<g ") + Count(svg, "<g>"), Count(svg, "</g>"));
}

TEST(TimelineSvg, SmallOneFOneBPicture) {
  const PipelineSimInput in = SmallPipeline(3, 4);
  const PipelineSimResult r = Simulate(in);
  ASSERT_EQ(r.iteration_seconds, 18.0);  // (S - 1 + B) * (f + b)
  TimelineSvgOptions opt;
  opt.title = "3 stages, 1F1B";
  const std::string svg = TimelineSvg(in, r, opt);
  ExpectWellFormed(svg);

  // One row label and one device label per stage.
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(Count(svg, ">stage " + std::to_string(s) + "</text>"), 1) << s;
    EXPECT_EQ(
        Count(svg, ">dev " + std::to_string(2 * s) + "-" + std::to_string(2 * s + 1) + "</text>"),
        1)
        << s;
  }
  // Every microbatch number on its forward and backward block of every stage.
  for (int m = 0; m < 4; ++m) {
    EXPECT_EQ(Count(svg, ">" + std::to_string(m) + "</text>"), 2 * 3) << "microbatch " << m;
  }
  EXPECT_EQ(Count(svg, ">4</text>"), 0);
  // Legend, title, iteration time, axis labels with units.
  EXPECT_EQ(Count(svg, ">forward</text>"), 1);
  EXPECT_EQ(Count(svg, ">backward</text>"), 1);
  EXPECT_EQ(Count(svg, ">communication wait</text>"), 1);
  EXPECT_NE(svg.find(">3 stages, 1F1B</text>"), std::string::npos);
  EXPECT_NE(svg.find("iteration 18.00 s"), std::string::npos);
  EXPECT_NE(svg.find(">0 s</text>"), std::string::npos);
  EXPECT_NE(svg.find(">18 s</text>"), std::string::npos);
  // No sends without communication, nothing dense at this scale.
  EXPECT_EQ(svg.find("sending"), std::string::npos);
  EXPECT_EQ(svg.find("<path"), std::string::npos);
  EXPECT_NE(svg.find("width=\"1600\""), std::string::npos);

  // Deterministic.
  EXPECT_EQ(svg, TimelineSvg(in, r, opt));
}

TEST(TimelineSvg, EscapesLabelsAndTitle) {
  const PipelineSimInput in = SmallPipeline(3, 4);
  const PipelineSimResult r = Simulate(in);
  TimelineSvgOptions opt;
  opt.title = "title <&> \"q\" 'a'";
  opt.stage_labels = {"first <&> stage", "", std::string("bad \x01 byte \xff")};
  const std::string svg = TimelineSvg(in, r, opt);
  ExpectWellFormed(svg);
  EXPECT_NE(svg.find(">first &lt;&amp;&gt; stage</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<&>"), std::string::npos);
  EXPECT_NE(svg.find("title &lt;&amp;&gt; &quot;q&quot; &apos;a&apos;"), std::string::npos);
  EXPECT_EQ(Count(svg, ">stage 1</text>"), 1);  // empty label: the default
  EXPECT_NE(svg.find(">bad ? byte ?</text>"), std::string::npos);
}

TEST(TimelineSvg, LongLabelsAreCutAndDevicesCompressed) {
  PipelineSimInput in = SmallPipeline(2, 2);
  in.devices_per_host = 200;
  in.stages[0].devices = std::vector<int64_t>{7, 0, 1, 2, 3, 5};
  in.stages[1].devices.clear();
  for (int64_t d = 8; d < 200; d += 2) in.stages[1].devices.push_back(d);
  const PipelineSimResult r = Simulate(in);
  TimelineSvgOptions opt;
  opt.stage_labels = {std::string(500, 'x'), "s1"};
  const std::string svg = TimelineSvg(in, r, opt);
  ExpectWellFormed(svg);
  EXPECT_NE(svg.find(">dev 0-3,5,7</text>"), std::string::npos);
  EXPECT_NE(svg.find("\u2026 (96)</text>"), std::string::npos);  // 96 devices, list cut
  EXPECT_EQ(svg.find(std::string(500, 'x')), std::string::npos);
  EXPECT_NE(svg.find("xxxx\u2026</text>"), std::string::npos);
}

TEST(TimelineSvg, CommunicationShowsWaitsAndSends) {
  PipelineSimInput in = SmallPipeline(4, 8);
  in.intra_host = {1e3, 0.05};  // 500-byte moves: 0.5 s plus latency
  for (PipelineSimTransfer& t : in.transfers) t.bytes = 1000;
  in.stages.back().gradient_sync_seconds = 1;
  in.stages.back().update_seconds = 0.5;
  const PipelineSimResult r = Simulate(in);
  const std::string svg = TimelineSvg(in, r);
  ExpectWellFormed(svg);
  EXPECT_NE(svg.find(">sending (link busy)</text>"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#d62728\"><rect"), std::string::npos);  // a wait block
  EXPECT_NE(svg.find("fill=\"#9467bd\"><rect"), std::string::npos);  // sync
  EXPECT_NE(svg.find("fill=\"#2ca02c\"><rect"), std::string::npos);  // update
  EXPECT_NE(svg.find(">wait "), std::string::npos);
}

TEST(TimelineSvg, LargeRunStaysSmall) {
  for (bool comm : {false, true}) {
    PipelineSimInput in = SmallPipeline(50, 1024);
    if (comm) {
      in.intra_host = {1e4, 0.01};
      for (PipelineSimTransfer& t : in.transfers) t.bytes = 1000;
    }
    const PipelineSimResult r = Simulate(in);
    const std::string svg = TimelineSvg(in, r);
    ExpectWellFormed(svg);
    EXPECT_LT(svg.size(), size_t{1} << 20) << "comm " << comm;
    EXPECT_EQ(Count(svg, ">stage 49</text>"), 1);
    // The steady state is too dense for single tasks: stacked shares instead.
    EXPECT_NE(svg.find("<path fill="), std::string::npos);
    EXPECT_NE(svg.find(">too dense for single tasks"), std::string::npos);
  }
}

TEST(TimelineSvg, WithoutTimeline) {
  PipelineSimInput in = SmallPipeline(2, 2);
  in.record_timeline = false;
  const PipelineSimResult r = Simulate(in);
  const std::string svg = TimelineSvg(in, r, {});
  ExpectWellFormed(svg);
  EXPECT_NE(svg.find("no timeline recorded"), std::string::npos);
  EXPECT_EQ(Count(svg, ">stage 1</text>"), 1);
}

// --- Rendering with headless Chromium ------------------------------------------------------

std::string FindOnPath(const std::vector<std::string>& names) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    for (const std::string& n : names) {
      const std::string p = dir + "/" + n;
      if (access(p.c_str(), X_OK) == 0) return p;
    }
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

uint32_t BigEndian32(const std::string& s, size_t at) {
  return (uint32_t{static_cast<unsigned char>(s[at])} << 24) |
         (uint32_t{static_cast<unsigned char>(s[at + 1])} << 16) |
         (uint32_t{static_cast<unsigned char>(s[at + 2])} << 8) |
         uint32_t{static_cast<unsigned char>(s[at + 3])};
}

TEST(TimelineSvg, RendersToPngWithHeadlessChromium) {
  const std::string browser = FindOnPath({"chromium", "chromium-browser"});
  if (browser.empty()) {
    GTEST_SKIP() << "no chromium or chromium-browser on PATH (scripts/install-deps.sh installs it)";
  }
  std::string dir_template = ::testing::TempDir() + "timeline_svg_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
  const std::string dir = dir_template;
  const std::string svg_path = dir + "/timeline.svg";
  const std::string png_path = dir + "/timeline.png";

  PipelineSimInput in = SmallPipeline(3, 4);
  const PipelineSimResult r = Simulate(in);
  TimelineSvgOptions opt;
  opt.title = "headless rendering";
  {
    std::ofstream f(svg_path, std::ios::binary);
    f << TimelineSvg(in, r, opt);
  }
  constexpr uint32_t kWidth = 1600, kHeight = 400;
  // --headless=new is the current mode; older versions only know --headless. Root needs
  // --no-sandbox; an own profile directory keeps parallel runs apart.
  std::string log;
  for (const char* mode : {"--headless=new", "--headless"}) {
    const std::string cmd =
        "timeout 60 '" + browser + "' " + mode +
        " --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars"
        " --force-device-scale-factor=1 --no-first-run"
        " --user-data-dir='" +
        dir + "/profile' --screenshot='" + png_path + "' --window-size=" + std::to_string(kWidth) +
        "," + std::to_string(kHeight) + " 'file://" + svg_path + "' > '" + dir + "/log.txt' 2>&1";
    const int rc = std::system(cmd.c_str());
    log = ReadFile(dir + "/log.txt");
    if (rc == 0 && !ReadFile(png_path).empty()) break;
  }
  const std::string png = ReadFile(png_path);
  ASSERT_GE(png.size(), size_t{33}) << "no PNG from " << browser << "; its output:\n" << log;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  EXPECT_EQ(BigEndian32(png, 16), kWidth);
  EXPECT_EQ(BigEndian32(png, 20), kHeight);
  RecordProperty("png_bytes", static_cast<int>(png.size()));
  // A blank 1600 x 400 page compresses to about 3 KB; the picture is well above that.
  EXPECT_GT(png.size(), size_t{8000});
  EXPECT_LT(png.size(), size_t{5} << 20);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace alpa

#include "core/problem/problem_io.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/util/gzip.h"
#include "fuzz/problem_compare.h"
#include "support/test_data.h"

namespace alpa {
namespace {

using ::alpa::testing::DiffProblems;

// gmock's HasSubstr without linking gmock.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

// Writes `bytes` gzip-compressed with zlib's own file API.
void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

ShardingProblem Example() {
  Result<ShardingProblem> p = ReadProblemFile(alpa::testing::GoldenPath("iopddl_example.json"));
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p.value() : ShardingProblem{};
}

// The status of reading `text` as `format`, which must fail with `code` and mention every
// one of `parts`.
void ExpectError(const std::string& text, ProblemFormat format, StatusCode code,
                 const std::vector<std::string>& parts) {
  Result<ShardingProblem> p = ReadProblemBuffer(text, format);
  ASSERT_FALSE(p.ok()) << text;
  EXPECT_EQ(p.status().code(), code) << p.status().message();
  for (const std::string& part : parts) EXPECT_TRUE(Contains(p.status().message(), part));
}

// ---------------------------------------------------------------- IOPDDL reading

TEST(ProblemIoTest, ExampleIsReadExactly) {
  const ShardingProblem p = Example();
  EXPECT_EQ(p.name, "example");
  ASSERT_EQ(p.nodes.size(), 5u);
  ASSERT_EQ(p.edges.size(), 5u);
  ASSERT_TRUE(p.usage_limit.has_value());
  EXPECT_EQ(*p.usage_limit, 50);
  EXPECT_TRUE(p.aliases.empty());
  EXPECT_FALSE(p.uses_live_sets());
  EXPECT_EQ(p.nodes[2].costs, (std::vector<double>{25, 45, 35}));
  EXPECT_EQ(p.nodes[2].usages, (std::vector<int64_t>{15, 20, 15}));
  EXPECT_EQ(p.nodes[2].interval.lo, 50);
  EXPECT_EQ(p.nodes[2].interval.hi, 120);
  EXPECT_EQ(p.nodes[4].costs, (std::vector<double>{95}));
  EXPECT_EQ(p.nodes[4].interval.hi, 150);
  for (const ShardingNode& n : p.nodes) EXPECT_EQ(n.follows, -1);
  EXPECT_EQ(p.edges[2].u, 1);
  EXPECT_EQ(p.edges[2].v, 3);
  EXPECT_EQ(p.edges[2].costs, (std::vector<double>{90, 10, 20, 80}));
  EXPECT_EQ(p.edges[4].costs, (std::vector<double>{70, 60}));
}

TEST(ProblemIoTest, GzipIsDetectedByMagicNotByName) {
  const std::string text = ReadText(alpa::testing::GoldenPath("iopddl_example.json"));
  const std::string gz = TempPath("problem_io_example.json.gz");
  const std::string disguised = TempPath("problem_io_example_gz.json");
  WriteGzip(gz, text);
  WriteGzip(disguised, text);
  for (const std::string& path : {gz, disguised}) {
    Result<ShardingProblem> p = ReadProblemFile(path);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(DiffProblems(p.value(), Example(), true), "");
  }
  // Two concatenated members inflate to their concatenation, as with gzip(1): here that is
  // two JSON documents in a row, which the JSON parser then rejects.
  const std::string member = ReadText(gz);
  ExpectError(member + member, ProblemFormat::kIopddl, StatusCode::kParse, {"json"});
  Result<std::string> twice = Gunzip(member + member);
  ASSERT_TRUE(twice.ok()) << twice.status().message();
  EXPECT_EQ(twice.value(), text + text);
}

TEST(ProblemIoTest, BadGzipIsAParseError) {
  const std::string gz = TempPath("problem_io_trunc.json.gz");
  WriteGzip(gz, ReadText(alpa::testing::GoldenPath("iopddl_example.json")));
  const std::string member = ReadText(gz);
  ExpectError(member.substr(0, member.size() / 2), ProblemFormat::kAuto, StatusCode::kParse,
              {"gzip", "truncated"});
  std::string corrupt = member;
  corrupt[12] = static_cast<char>(corrupt[12] ^ 0x55);
  corrupt[13] = static_cast<char>(corrupt[13] ^ 0x55);
  Result<ShardingProblem> p = ReadProblemBuffer(corrupt);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kParse);
  // The decompression cap: 693 bytes of JSON do not fit in 100.
  Result<std::string> capped = Gunzip(member, 100);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().code(), StatusCode::kParse);
  EXPECT_TRUE(Contains(capped.status().message(), "limit of 100 bytes"));
  ExpectError(member + "xyz", ProblemFormat::kAuto, StatusCode::kParse, {"trailing garbage"});
}

TEST(ProblemIoTest, SharedBenchmarkG) {
  const std::string path = alpa::testing::SharedDataPath("asplos-2025-iopddl-G.json.gz");
  if (path.empty()) GTEST_SKIP() << "shared data absent";
  Result<ShardingProblem> p = ReadProblemFile(path);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p.value().nodes.size(), 816u);
  EXPECT_EQ(p.value().edges.size(), 1023u);
  ASSERT_TRUE(p.value().usage_limit.has_value());
  for (ProblemFormat format : {ProblemFormat::kIopddl, ProblemFormat::kAlpa}) {
    Result<std::string> text = WriteProblem(p.value(), format);
    ASSERT_TRUE(text.ok()) << text.status().message();
    Result<ShardingProblem> back = ReadProblemBuffer(text.value());
    ASSERT_TRUE(back.ok()) << back.status().message();
    if (format == ProblemFormat::kIopddl) {
      EXPECT_EQ(DiffProblems(p.value(), back.value(), true), "");
    } else {
      // Liveness comes back as live sets: compare the constraints they imply.
      EXPECT_TRUE(back.value().uses_live_sets());
      EXPECT_EQ(DiffProblems(p.value(), back.value(), false), "");
    }
  }
}

// ---------------------------------------------------------------- IOPDDL errors

// The example with one piece of text replaced (which must occur exactly once).
std::string ExampleWith(const std::string& from, const std::string& to) {
  std::string text = ReadText(alpa::testing::GoldenPath("iopddl_example.json"));
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ProblemIoTest, IopddlParseErrorsNameTheElement) {
  const auto kIopddl = ProblemFormat::kIopddl;
  const auto kParse = StatusCode::kParse;
  ExpectError("{\"problem\": {", kIopddl, kParse, {"json", "parse error", "column 14"});
  ExpectError("", kIopddl, kParse, {"json"});
  ExpectError("[1, 2]", kIopddl, kParse, {"iopddl: top level: expected an object"});
  ExpectError("{}", kIopddl, kParse, {"missing field \"problem\""});
  ExpectError(ExampleWith("[55, 65]", "[55, \"65\"]"), kIopddl, kParse,
              {"iopddl: problem.nodes.costs[1][1]: expected a number"});
  ExpectError(ExampleWith("[55, 65]", "55"), kIopddl, kParse,
              {"problem.nodes.costs[1]: expected an array"});
  ExpectError(ExampleWith("[15, 20, 15]", "[15, 20.5, 15]"), kIopddl, kParse,
              {"problem.nodes.usages[2][1]: expected an integer"});
  ExpectError(ExampleWith("[15, 20, 15]", "[15, 1e19, 15]"), kIopddl, kParse,
              {"problem.nodes.usages[2][1]: number out of range"});
  ExpectError(ExampleWith("[15, 20, 15]", "[15, 9223372036854775808, 15]"), kIopddl, kParse,
              {"problem.nodes.usages[2][1]: number out of range"});
  ExpectError(ExampleWith("[110, 140]", "[110]"), kIopddl, kParse,
              {"problem.nodes.intervals[3]: expected 2 entries, found 1"});
  ExpectError(ExampleWith("[110, 140]", "[110, 1.5]"), kIopddl, kParse,
              {"problem.nodes.intervals[3][1]: expected an integer"});
  ExpectError(ExampleWith("[1, 3]", "[1, 3000000000]"), kIopddl, kParse,
              {"problem.edges.nodes[2][1]: number out of range"});
  ExpectError(ExampleWith("\"usage_limit\": 50", "\"usage_limit\": \"50\""), kIopddl, kParse,
              {"problem.usage_limit: expected a number"});
  ExpectError(ExampleWith("\"name\": \"example\"", "\"name\": 7"), kIopddl, kParse,
              {"problem.name: expected a string"});
  // Wrong lengths.
  ExpectError(ExampleWith("[10, 10],\n        [15]", "[10, 10]"), kIopddl, kParse,
              {"problem.nodes.usages has 4 entries, expected 5"});
  ExpectError(ExampleWith(",\n        [70, 60]", ""), kIopddl, kParse,
              {"problem.edges.costs has 4 entries, expected 5"});
  // Missing fields and wrong types of whole sections.
  ExpectError(ExampleWith("\"usages\"", "\"usage\""), kIopddl, kParse,
              {"problem.nodes: missing field \"usages\""});
  ExpectError(ExampleWith("\"edges\"", "\"edge\""), kIopddl, kParse,
              {"problem: missing field \"edges\""});
  ExpectError(ExampleWith("\"intervals\": [", "\"intervals\": {\"a\": 1}, \"x\": ["), kIopddl,
              kParse, {"problem.nodes.intervals: expected an array, found object"});
  // Pathological nesting is refused before parsing.
  ExpectError(std::string(100000, '[') + std::string(100000, ']'), kIopddl, kParse,
              {"nesting deeper than"});
}

TEST(ProblemIoTest, IopddlStructuralErrorsNameTheElement) {
  const auto kIopddl = ProblemFormat::kIopddl;
  const auto kInvalid = StatusCode::kInvalidProblem;
  ExpectError(ExampleWith("[3, 4]", "[3, 7]"), kIopddl, kInvalid,
              {"edge 4", "endpoint 7 is not a node id"});
  ExpectError(ExampleWith("[95]", "[]"), kIopddl, kInvalid, {"node 4 has no strategies"});
  ExpectError(ExampleWith("[95]", "[1e18]"), kIopddl, kInvalid,
              {"node 4: every strategy is forbidden"});
  ExpectError(ExampleWith("[110, 150]", "[110, 100]"), kIopddl, kInvalid,
              {"node 4: usage interval [110, 100)"});
  ExpectError(ExampleWith("[15, 20, 15]", "[15, -20, 15]"), kIopddl, kInvalid,
              {"node 2 strategy 1: negative usage -20"});
  ExpectError(ExampleWith("[15, 20, 15]", "[15, 20]"), kIopddl, kInvalid,
              {"node 2 has 3 strategies but 2 usages"});
  ExpectError(ExampleWith("[70, 60]", "[70]"), kIopddl, kInvalid,
              {"edge 4 (3, 4) has 1 costs, expected 2"});
  ExpectError(ExampleWith("\"usage_limit\": 50", "\"usage_limit\": -1"), kIopddl, kInvalid,
              {"usage limit -1 is negative"});
}

TEST(ProblemIoTest, IopddlOptionalPartsAndNumberForms) {
  // No limit, no name, float forms of integers, forbidden and fractional costs.
  Result<ShardingProblem> p = ReadProblemBuffer(
      R"({"problem": {"nodes": {"intervals": [[0, 2e0]], "costs": [[1.5, 1e18, -2, 3e20]],
          "usages": [[1e3, 0, 0, 7]]}, "edges": {"nodes": [], "costs": []},
          "usage_limit": null}})");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p.value().name, "");
  EXPECT_FALSE(p.value().usage_limit.has_value());
  EXPECT_EQ(p.value().nodes[0].interval.hi, 2);
  EXPECT_EQ(p.value().nodes[0].costs, (std::vector<double>{1.5, 1e18, -2, 3e20}));
  EXPECT_EQ(p.value().nodes[0].usages, (std::vector<int64_t>{1000, 0, 0, 7}));
  // A fractional limit means its floor.
  Result<ShardingProblem> q =
      ReadProblemBuffer(ExampleWith("\"usage_limit\": 50", "\"usage_limit\": 50.9"));
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q.value().usage_limit, std::optional<int64_t>(50));
}

TEST(ProblemIoTest, FileErrorsNameThePath) {
  const std::string missing = TempPath("no_such_dir/no_such_problem.json");
  Result<ShardingProblem> p = ReadProblemFile(missing);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kIo);
  EXPECT_TRUE(Contains(p.status().message(), missing));
  Result<ShardingProblem> dir = ReadProblemFile(::testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kIo);
  // Parse errors from a file carry its path as well.
  const std::string bad = TempPath("problem_io_bad.json");
  std::ofstream(bad) << "{\"problem\": 3}";
  Result<ShardingProblem> b = ReadProblemFile(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kParse);
  EXPECT_TRUE(Contains(b.status().message(), bad));
}

// ---------------------------------------------------------------- Alpa reading

// Four nodes: 2 follows 1, an edge 0-1 with one forbidden entry (>= infinity 100), an alias
// 1-3, node 3's first strategy forbidden through c + d, two live sets out of four.
constexpr const char* kAlpaSmall = R"({
  "format": "alpa", "name": "small", "N": 4, "M": 12.7, "infinity": 100,
  "s_len": [2, 3, 3, 2], "s_follow": [-1, -1, 1, -1],
  "E": [0, 1, 2, 3], "A": [1, 3],
  "L": [2, 0, 3, 0,  0, 1,  1, 2, 3],
  "c": [1, 2,  3, 4, 5,  6, 7, 8,  60, 10],
  "d": [0.5, 0,  0, 0, 0,  0, 0, 0,  40, -1],
  "m": [1, 2,  3, 4, 5.4,  0, 0, 0,  7, 7.6],
  "r": [0, 1, 2, 3, 4, 100,  1, 2, 3, 4, 5, 6],
  "v": [0, 1, 0, 0, 1, 0],
  "s_init": [0, 1, 1]
})";

TEST(ProblemIoTest, AlpaFormatIsRead) {
  Result<ShardingProblem> r = ReadProblemBuffer(kAlpaSmall);  // kAuto sees "format": "alpa"
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ShardingProblem& p = r.value();
  EXPECT_EQ(p.name, "small");
  ASSERT_EQ(p.nodes.size(), 4u);
  EXPECT_EQ(p.usage_limit, std::optional<int64_t>(12));
  EXPECT_EQ(p.nodes[0].costs, (std::vector<double>{1.5, 2}));
  EXPECT_EQ(p.nodes[3].costs, (std::vector<double>{kForbiddenCost, 9}));
  EXPECT_EQ(p.nodes[1].usages, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(p.nodes[3].usages, (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(p.nodes[2].follows, 1);
  EXPECT_EQ(p.nodes[1].follows, -1);
  ASSERT_EQ(p.edges.size(), 2u);
  EXPECT_EQ(p.edges[0].u, 0);
  EXPECT_EQ(p.edges[0].v, 1);
  EXPECT_EQ(p.edges[0].costs, (std::vector<double>{0, 1, 2, 3, 4, kForbiddenCost}));
  EXPECT_EQ(p.edges[1].u, 2);
  EXPECT_EQ(p.edges[1].costs, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(p.aliases.size(), 1u);
  EXPECT_EQ(p.aliases[0].u, 1);
  EXPECT_EQ(p.aliases[0].v, 3);
  EXPECT_EQ(p.aliases[0].forbidden, (std::vector<uint8_t>{0, 1, 0, 0, 1, 0}));
  // Four sets with sizes 2, 0, 3, 0: the trailing empty one is dropped.
  EXPECT_EQ(p.live_sets, (std::vector<std::vector<int32_t>>{{0, 1}, {}, {1, 2, 3}}));

  // The same as pairs, and with the default infinity (1e13): 100 is then an ordinary cost.
  std::string pairs = kAlpaSmall;
  pairs.replace(pairs.find("[0, 1, 2, 3]"), 12, "[[0, 1], [2, 3]]");
  pairs.replace(pairs.find("[1, 3]"), 6, "[[1, 3]]");
  pairs.replace(pairs.find("\"infinity\": 100,"), 16, "");
  Result<ShardingProblem> q = ReadProblemBuffer(pairs, ProblemFormat::kAlpa);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q.value().edges[1].v, 3);
  EXPECT_EQ(q.value().aliases[0].v, 3);
  EXPECT_EQ(q.value().edges[0].costs[5], 100);
  EXPECT_EQ(q.value().nodes[3].costs[0], 100);
}

TEST(ProblemIoTest, AlpaMemoryLimitForms) {
  auto limit_for = [](const std::string& m) {
    std::string text = kAlpaSmall;
    text.replace(text.find("12.7"), 4, m);
    Result<ShardingProblem> p = ReadProblemBuffer(text);
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? p.value().usage_limit : std::optional<int64_t>(-99);
  };
  EXPECT_EQ(limit_for("0"), std::nullopt);
  EXPECT_EQ(limit_for("-1"), std::nullopt);
  EXPECT_EQ(limit_for("0.5"), std::optional<int64_t>(0));
  EXPECT_EQ(limit_for("40000000000"), std::optional<int64_t>(40000000000));
}

TEST(ProblemIoTest, AlpaErrorsNameTheField) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string text = kAlpaSmall;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
  };
  const auto kAlpa = ProblemFormat::kAlpa;
  const auto kParse = StatusCode::kParse;
  ExpectError(with("\"c\": [1, 2,", "\"c\": ["), kAlpa, kParse,
              {"alpa: c has 8 entries, expected sum(s_len) = 10"});
  ExpectError(with("\"s_follow\": [-1, -1, 1, -1]", "\"s_follow\": [-1, -1, 1]"), kAlpa, kParse,
              {"alpa: s_follow has 3 entries, expected N = 4"});
  ExpectError(with("4, 5, 6]", "4, 5]"), kAlpa, kParse,
              {"alpa: r has 11 entries, expected sum over edges of s_len[u] * s_len[v] = 12"});
  ExpectError(with("\"v\": [0, 1,", "\"v\": [0, 2,"), kAlpa, kParse, {"alpa: v[1]"});
  ExpectError(with("\"E\": [0, 1, 2, 3]", "\"E\": [0, 1, 2]"), kAlpa, kParse,
              {"E has 3 entries, expected an even number"});
  ExpectError(with("\"E\": [0, 1, 2, 3]", "\"E\": [0, 1, 2, 9]"), kAlpa,
              StatusCode::kInvalidProblem, {"alpa: E[3] = 9 is not a node id (N = 4)"});
  ExpectError(with("\"L\": [2, 0, 3, 0,", "\"L\": [2, 0, 4, 0,"), kAlpa, kParse,
              {"alpa: L has 9 entries, expected N + sum of the live set sizes = 10"});
  ExpectError(with("1, 2, 3],\n  \"c\"", "1, 2, 7],\n  \"c\""), kAlpa, StatusCode::kInvalidProblem,
              {"live set of time step 2 names node 7"});
  ExpectError(with("\"m\": [1, 2,", "\"m\": [1, -2,"), kAlpa, kParse,
              {"alpa: m[1]: negative memory -2"});
  ExpectError(with("\"m\": [1, 2,", "\"m\": [1, \"x\","), kAlpa, kParse,
              {"alpa: m[1]: expected a number"});
  ExpectError(with("\"s_len\": [2, 3, 3, 2]", "\"s_len\": [2, 3, 3, -2]"), kAlpa, kParse,
              {"alpa: s_len[3]: number out of range"});
  ExpectError(with("\"s_follow\": [-1, -1, 1, -1]", "\"s_follow\": [-1, -1, 3, -1]"), kAlpa,
              StatusCode::kInvalidProblem, {"node 2 follows node 3 but has 3 strategies"});
  ExpectError(with("\"r\":", "\"rr\":"), kAlpa, kParse, {"alpa: top level: missing field \"r\""});
  ExpectError(with("\"N\": 4", "\"N\": \"4\""), kAlpa, kParse, {"alpa: N: expected a number"});
  std::string overflow = with("\"c\": [1, 2,", "\"c\": [1e308, 2,");
  overflow.replace(overflow.find("[0.5,"), 5, "[1e308,");
  ExpectError(overflow, kAlpa, kParse, {"alpa: c[0] + d[0] overflows"});
  ExpectError(with("\"alpa\"", "\"alpha\""), ProblemFormat::kAuto, kParse,
              {"unknown format \"alpha\""});
}

// ---------------------------------------------------------------- writers

TEST(ProblemIoTest, IopddlWriterIsCompactAndExact) {
  Result<std::string> text = WriteProblem(Example(), ProblemFormat::kIopddl);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(text.value(),
            "{\"problem\":{\"name\":\"example\",\"nodes\":{\"intervals\":[[30,70],[40,70],"
            "[50,120],[110,140],[110,150]],\"costs\":[[15],[55,65],[25,45,35],[85,75],[95]],"
            "\"usages\":[[10],[25,25],[15,20,15],[10,10],[15]]},\"edges\":{\"nodes\":[[0,1],"
            "[0,2],[1,3],[2,4],[3,4]],\"costs\":[[30,40],[50,10,40],[90,10,20,80],[60,20,30],"
            "[70,60]]},\"usage_limit\":50}}");
  // Non-integral and huge values keep every bit.
  ShardingProblem p;
  p.name = "odd \"name\"\n";
  p.nodes.resize(1);
  p.nodes[0].costs = {
      0.1, 1e18, 1e20, -3.5, 9223372036854775808.0, 4.9e-324, -0.0, 1.0000000000000002};
  Result<std::string> odd = WriteProblem(p, ProblemFormat::kIopddl);
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE(Contains(odd.value(), "[0.1,1000000000000000000,1e+20,-3.5,"));
  Result<ShardingProblem> back = ReadProblemBuffer(odd.value());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(DiffProblems(p, back.value(), true), "");
}

TEST(ProblemIoTest, AlpaWriterTurnsIntervalsIntoLiveSets) {
  // Largest hi (150) > N (5): only the maximal live sets, at t = 50 and t = 110.
  Result<std::string> text = WriteProblem(Example(), ProblemFormat::kAlpa);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_TRUE(Contains(text.value(), "\"L\":[3,3,0,0,0,0,1,2,2,3,4]"));
  EXPECT_TRUE(Contains(text.value(), "\"M\":50,"));
  EXPECT_TRUE(Contains(text.value(), "\"infinity\":1e18"));
  Result<ShardingProblem> back = ReadProblemBuffer(text.value());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().live_sets, (std::vector<std::vector<int32_t>>{{0, 1, 2}, {2, 3, 4}}));
  EXPECT_EQ(DiffProblems(Example(), back.value(), false), "");

  // Largest hi <= N: one set per time step.
  ShardingProblem small = Example();
  const int64_t intervals[5][2] = {{0, 2}, {1, 3}, {2, 3}, {3, 5}, {4, 4}};
  for (size_t i = 0; i < 5; ++i) small.nodes[i].interval = {intervals[i][0], intervals[i][1]};
  small.usage_limit = 0;  // Alpa's M = 0 would mean "no limit": written as 0.5
  Result<std::string> dense = WriteProblem(small, ProblemFormat::kAlpa);
  ASSERT_TRUE(dense.ok());
  EXPECT_TRUE(Contains(dense.value(), "\"L\":[1,2,2,1,1,0,0,1,1,2,3,3]"));
  EXPECT_TRUE(Contains(dense.value(), "\"M\":0.5,"));
  Result<ShardingProblem> dense_back = ReadProblemBuffer(dense.value());
  ASSERT_TRUE(dense_back.ok()) << dense_back.status().message();
  EXPECT_EQ(dense_back.value().usage_limit, std::optional<int64_t>(0));
  EXPECT_EQ(DiffProblems(small, dense_back.value(), false), "");
}

TEST(ProblemIoTest, WritersRefuseWhatTheFormatCannotHold) {
  Result<ShardingProblem> alpa = ReadProblemBuffer(kAlpaSmall);
  ASSERT_TRUE(alpa.ok());
  Result<std::string> text = WriteProblem(alpa.value(), ProblemFormat::kIopddl);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(Contains(text.status().message(), "node 2 follows 1"));

  ShardingProblem many = Example();
  many.live_sets.assign(6, {0});
  Result<std::string> sets = WriteProblem(many, ProblemFormat::kAlpa);
  ASSERT_FALSE(sets.ok());
  EXPECT_EQ(sets.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(Contains(sets.status().message(), "6 live sets"));

  ShardingProblem invalid = Example();
  invalid.edges[0].v = 9;
  Result<std::string> bad = WriteProblem(invalid, ProblemFormat::kIopddl);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidProblem);
  EXPECT_EQ(WriteProblem(Example(), ProblemFormat::kAuto).status().code(),
            StatusCode::kInvalidArgument);
}

// A random valid problem; with `alpa_only` it also has followers, aliases and live sets.
ShardingProblem RandomProblem(std::mt19937_64& rng, bool alpa_only) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto cost = [&]() -> double {
    switch (uniform(0, 5)) {
      case 0:
        return static_cast<double>(uniform(-1000, 1000));
      case 1:
        return std::ldexp(static_cast<double>(uniform(1, 1LL << 52)),
                          static_cast<int>(uniform(-60, 80)));
      case 2:
        return kForbiddenCost * static_cast<double>(uniform(1, 3));
      case 3:
        return std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
      default:
        return static_cast<double>(uniform(0, 1LL << 40));
    }
  };
  ShardingProblem p;
  p.name = "random " + std::to_string(uniform(0, 1000000)) + " \xc3\xa9\t";
  const size_t n = static_cast<size_t>(uniform(0, 12));
  p.nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ShardingNode& node = p.nodes[i];
    const int64_t k = uniform(1, 4);
    for (int64_t s = 0; s < k; ++s) node.costs.push_back(cost());
    node.costs[static_cast<size_t>(uniform(0, k - 1))] = static_cast<double>(uniform(-50, 50));
    if (uniform(0, 3) != 0) {
      for (int64_t s = 0; s < k; ++s) node.usages.push_back(uniform(0, 1LL << uniform(1, 62)));
    }
    node.interval.lo = uniform(0, 30);
    node.interval.hi = node.interval.lo + uniform(0, 10);
    if (alpa_only && i > 0 && uniform(0, 3) == 0) {
      const size_t target = static_cast<size_t>(uniform(0, static_cast<int64_t>(i) - 1));
      node.follows = static_cast<int32_t>(target);
      node.costs.resize(p.nodes[target].costs.size(), 1.0);
      node.costs[0] = -1.0;  // keep one allowed strategy
      if (!node.usages.empty()) node.usages.resize(node.costs.size(), 0);
    }
  }
  if (n > 0) {
    const int64_t edges = uniform(0, 20);
    for (int64_t e = 0; e < edges; ++e) {
      ShardingEdge edge;
      edge.u = static_cast<int32_t>(uniform(0, static_cast<int64_t>(n) - 1));
      edge.v = static_cast<int32_t>(uniform(0, static_cast<int64_t>(n) - 1));
      const size_t size = p.nodes[static_cast<size_t>(edge.u)].costs.size() *
                          p.nodes[static_cast<size_t>(edge.v)].costs.size();
      for (size_t k = 0; k < size; ++k) edge.costs.push_back(cost());
      p.edges.push_back(edge);
    }
    if (alpa_only) {
      const int64_t aliases = uniform(0, 3);
      for (int64_t a = 0; a < aliases; ++a) {
        ShardingAlias alias;
        alias.u = static_cast<int32_t>(uniform(0, static_cast<int64_t>(n) - 1));
        alias.v = static_cast<int32_t>(uniform(0, static_cast<int64_t>(n) - 1));
        const size_t size = p.nodes[static_cast<size_t>(alias.u)].costs.size() *
                            p.nodes[static_cast<size_t>(alias.v)].costs.size();
        for (size_t k = 0; k < size; ++k) alias.forbidden.push_back(uniform(0, 1) != 0);
        p.aliases.push_back(alias);
      }
      const int64_t sets = uniform(0, static_cast<int64_t>(n));
      for (int64_t t = 0; t < sets; ++t) {
        std::vector<int32_t> set;
        for (size_t i = 0; i < n; ++i) {
          if (uniform(0, 2) == 0) set.push_back(static_cast<int32_t>(i));
        }
        p.live_sets.push_back(set);
      }
      while (!p.live_sets.empty() && p.live_sets.back().empty()) p.live_sets.pop_back();
      for (ShardingNode& node : p.nodes) node.interval = {};  // Alpa keeps live sets only
    }
  }
  if (uniform(0, 2) != 0) p.usage_limit = uniform(0, 1LL << uniform(0, 62));
  return p;
}

TEST(ProblemIoTest, RandomProblemsSurviveRoundTrips) {
  std::mt19937_64 rng(20250101);
  for (int round = 0; round < 300; ++round) {
    const bool alpa_only = round % 2 == 1;
    const ShardingProblem p = RandomProblem(rng, alpa_only);
    ASSERT_TRUE(ValidateProblem(p).ok()) << ValidateProblem(p).message();
    for (ProblemFormat format : {ProblemFormat::kIopddl, ProblemFormat::kAlpa}) {
      if (alpa_only && format == ProblemFormat::kIopddl) continue;
      Result<std::string> text = WriteProblem(p, format);
      ASSERT_TRUE(text.ok()) << text.status().message();
      Result<ShardingProblem> back = ReadProblemBuffer(text.value());
      ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << text.value();
      const bool exact = format == ProblemFormat::kIopddl || alpa_only;
      EXPECT_EQ(DiffProblems(p, back.value(), exact), "") << "round " << round << "\n"
                                                          << text.value();
    }
  }
}

// ---------------------------------------------------------------- assignments

TEST(ProblemIoTest, AssignmentsParseAndPrint) {
  Result<std::vector<int32_t>> a = ParseAssignment("[0, 0, 2, 1, 0]");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value(), (std::vector<int32_t>{0, 0, 2, 1, 0}));
  Result<std::vector<int32_t>> b = ParseAssignment(" \n[ 3,\n\t4 ]\r\n");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value(), (std::vector<int32_t>{3, 4}));
  Result<std::vector<int32_t>> empty = ParseAssignment("[ ]");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value().empty());
  EXPECT_EQ(FormatAssignment({0, 0, 2, 1, 0}), "[0, 0, 2, 1, 0]");
  EXPECT_EQ(FormatAssignment({}), "[]");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "expected '['"},
      {"0, 1", "expected '['"},
      {"[0, 1", "expected ',' or ']' after entry 1"},
      {"[0,, 1]", "entry 1: expected a non-negative integer"},
      {"[0, -1]", "entry 1: expected a non-negative integer"},
      {"[0, 1,]", "entry 2: expected a non-negative integer"},
      {"[1.5]", "expected ',' or ']' after entry 0"},
      {"[0] x", "unexpected text after ']'"},
      {"[99999999999]", "entry 0: 99999999999 is out of range"},
  };
  for (const auto& [text, message] : bad) {
    Result<std::vector<int32_t>> r = ParseAssignment(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kParse);
    EXPECT_TRUE(Contains(r.status().message(), message)) << text;
  }
}

}  // namespace
}  // namespace alpa

#include "core/util/bounded_input.h"

#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/problem/problem_io.h"
#include "core/util/gzip.h"
#include "support/test_data.h"

namespace alpa {
namespace {

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("bounded_input_" + name)).string();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// gzip of `text` (one member).
std::string GzipOf(const std::string& text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, text.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(SniffJson, AcceptsWhitespaceThenAnObjectOrArray) {
  EXPECT_TRUE(SniffJson("{}").ok());
  EXPECT_TRUE(SniffJson(" \n\t\r[1]").ok());
  EXPECT_TRUE(SniffJson("\xEF\xBB\xBF{}").ok());
  EXPECT_TRUE(SniffJson("   ").ok());  // undecided: the rest decides
  const Status garbage = SniffJson(std::string("\0\0\0", 3));
  EXPECT_EQ(garbage.code(), StatusCode::kParse);
  EXPECT_EQ(garbage.message(), "not JSON: byte 0 is 0x00 (a JSON document starts with '{' or '[')");
  EXPECT_TRUE(Contains(SniffJson("  x").message(), "byte 2 is 0x78"));
}

TEST(ReadFileBytes, GarbageFailsAtByteZeroWithoutReadingTheFile) {
  // 2 GiB (sparse): reading it whole would take many seconds and 2 GiB of memory.
  const std::string path = TempPath("garbage.bin");
  {
    std::ofstream out(path, std::ios::binary);
    out << "\x7f"
           "ELF garbage";
  }
  std::filesystem::resize_file(path, uint64_t{2} << 30);
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> bytes = ReadFileBytes(path, uint64_t{4} << 30, FileContent::kJsonOrGzip);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::filesystem::remove(path);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kParse);
  EXPECT_TRUE(Contains(bytes.status().message(), "byte 0 is 0x7f")) << bytes.status().message();
  EXPECT_LT(seconds, 1.0);
}

TEST(ReadFileBytes, DevZeroFailsAtByteZero) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  Result<std::string> bytes =
      ReadFileBytes("/dev/zero", kDefaultMaxInputBytes, FileContent::kJsonOrGzip);
  ASSERT_FALSE(bytes.ok());
  EXPECT_TRUE(Contains(bytes.status().message(), "byte 0 is 0x00"));
}

TEST(ReadFileBytes, AStreamStopsAtTheLimit) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  // Not a regular file: its size is unknown, so the limit is met while reading.
  Result<std::string> bytes = ReadFileBytes("/dev/zero", 1 << 20, FileContent::kAny);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kParse);
  EXPECT_TRUE(Contains(bytes.status().message(), "limit of 1048576 bytes (1 MiB)"));
}

TEST(ReadFileBytes, AFileOverTheLimitSaysTheLimitAndHowToRaiseIt) {
  const std::string path = TempPath("big.json");
  WriteText(path, "{\"a\": [" + std::string(5000, ' ') + "]}");
  Result<std::string> bytes = ReadFileBytes(path, 4096, FileContent::kJsonOrGzip);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message(),
            "input exceeds the limit of 4096 bytes (4 KiB); raise the limit with the "
            "max_input_bytes option (ALPA_OPT_MAX_INPUT_BYTES; CLI: --max-input-bytes)");
  EXPECT_TRUE(ReadFileBytes(path, 8192, FileContent::kJsonOrGzip).ok());
  std::filesystem::remove(path);
}

TEST(Gunzip, TheInflateLimitIsTheInputLimit) {
  const std::string bomb = GzipOf("[" + std::string(1 << 20, ' ') + "0]");
  Result<std::string> text = Gunzip(bomb, 1 << 16);
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), "limit of 65536 bytes"));
  EXPECT_TRUE(Contains(text.status().message(), "--max-input-bytes"));
  Result<std::string> whole = Gunzip(bomb, 2 << 20);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole.value().size(), (1u << 20) + 3);
  EXPECT_EQ(whole.value().capacity(), whole.value().size());  // allocated once, exactly
}

TEST(ReadProblem, WhitespaceAroundAValidProblemCostsOnlyItsText) {
  const std::string problem = ReadText(testing::GoldenPath("iopddl_example.json"));
  const std::string padded = std::string(8 << 20, ' ') + problem + std::string(8 << 20, '\n');
  Result<ShardingProblem> read = ReadProblemBuffer(GzipOf(padded));
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read.value().nodes.size(), 5u);
  // The same problem under a limit below its padded size: refused, naming the limit.
  Result<ShardingProblem> limited =
      ReadProblemBuffer(GzipOf(padded), ProblemFormat::kAuto, 1 << 20);
  ASSERT_FALSE(limited.ok());
  EXPECT_TRUE(Contains(limited.status().message(), "limit of 1048576 bytes"));
}

TEST(ReadProblem, AFileOverTheLimitIsRefusedWithItsPath) {
  const std::string path = TempPath("problem.json");
  WriteText(path, ReadText(testing::GoldenPath("iopddl_example.json")));
  Result<ShardingProblem> read = ReadProblemFile(path, ProblemFormat::kAuto, 100);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kParse);
  EXPECT_TRUE(Contains(read.status().message(), path + ": input exceeds the limit of 100 bytes"))
      << read.status().message();
  EXPECT_TRUE(ReadProblemFile(path).ok());
  std::filesystem::remove(path);
}

TEST(ReadProblem, AHugeArrayIsRefusedForItsTypeWithoutBeingBuilt) {
  // 64 MiB of "0," would be about 1 GiB as a JSON document.
  std::string text = "[";
  text.reserve(64 << 20);
  while (text.size() < (64u << 20)) text += "0,";
  text += "0]";
  const auto start = std::chrono::steady_clock::now();
  Result<ShardingProblem> read = ReadProblemBuffer(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "iopddl: top level: expected an object, found array");
  EXPECT_LT(seconds, 2.0);
}

}  // namespace
}  // namespace alpa

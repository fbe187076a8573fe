#include "core/util/json_document.h"

#include <string>

#include <gtest/gtest.h>

#include "core/util/json_util.h"

namespace alpa {
namespace {

TEST(JsonDocument, ParsesLikeJsonParse) {
  const std::string text =
      R"({"a": [1, -2, 3.5, "x", true, null, [], {}], "b": {"c": [[1, 2], [3]]}, "a2": 18446744073709551615})";
  Result<JsonDocument> document = ParseJsonDocument(text);
  ASSERT_TRUE(document.ok()) << document.status().message();
  EXPECT_EQ(document.value().root(), nlohmann::json::parse(text));
  // Arrays are reserved at their exact size.
  EXPECT_EQ(document.value().root()["a"].get_ref<const nlohmann::json::array_t&>().capacity(), 8u);
  EXPECT_EQ(
      document.value().root()["b"]["c"][1].get_ref<const nlohmann::json::array_t&>().capacity(),
      1u);
}

TEST(JsonDocument, CountsIgnoreCommasAndBracketsInsideStrings) {
  const std::string text = R"([",[,]", "a\",b", [","], []])";
  Result<JsonDocument> document = ParseJsonDocument(text);
  ASSERT_TRUE(document.ok()) << document.status().message();
  EXPECT_EQ(document.value().root(), nlohmann::json::parse(text));
  EXPECT_EQ(document.value().root().get_ref<const nlohmann::json::array_t&>().capacity(), 4u);
}

TEST(JsonDocument, DuplicateKeysKeepTheLastValueAsJsonParseDoes) {
  Result<JsonDocument> document = ParseJsonDocument(R"({"k": 1, "k": [2]})");
  ASSERT_TRUE(document.ok());
  EXPECT_EQ(document.value().root()["k"], nlohmann::json::parse("[2]"));
}

TEST(JsonDocument, SyntaxErrorsKeepNlohmannsMessage) {
  for (const std::string text : {"{\"a\": [1, 2}", "{} x", "", "[1,2", "nul"}) {
    std::string expected;
    try {
      const nlohmann::json parsed = nlohmann::json::parse(text);
      ADD_FAILURE() << "json::parse accepted " << parsed.dump();
    } catch (const nlohmann::json::exception& e) {
      expected = JsonErrorMessage(e.what());
    }
    Result<JsonDocument> document = ParseJsonDocument(text);
    ASSERT_FALSE(document.ok()) << text;
    EXPECT_EQ(document.status().code(), StatusCode::kParse);
    EXPECT_EQ(document.status().message(), expected) << text;
  }
}

TEST(JsonDocument, ObjectOnlyGivesAnArrayRootEmptyAndUnparsed) {
  Result<JsonDocument> document = ParseJsonDocument("  [0, 0, 0, oops", JsonRoot::kObjectOnly);
  ASSERT_TRUE(document.ok());
  EXPECT_TRUE(document.value().root().is_array());
  EXPECT_TRUE(document.value().root().empty());
  // Any other root is parsed as usual.
  EXPECT_FALSE(ParseJsonDocument("oops", JsonRoot::kObjectOnly).ok());
  EXPECT_TRUE(ParseJsonDocument("{\"a\": [1]}", JsonRoot::kObjectOnly).ok());
}

TEST(JsonDocument, RefusesDeepNesting) {
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  Result<JsonDocument> document = ParseJsonDocument(deep);
  ASSERT_FALSE(document.ok());
  EXPECT_EQ(document.status().code(), StatusCode::kParse);
  EXPECT_EQ(document.status().message(), "JSON nesting deeper than 1024 levels");
}

TEST(JsonDocument, LongRunsOfWhitespaceParseTheSame) {
  // nlohmann's lexer keeps every skipped run of whitespace in a buffer: long runs are cut first.
  const std::string spaces(1 << 20, ' ');
  const std::string text = spaces + "{\"a\":" + spaces + "[1," + std::string(1 << 17, '\n') +
                           "2], \"s\": \"" + std::string(1 << 17, ' ') + "\"}" + spaces;
  Result<JsonDocument> document = ParseJsonDocument(text);
  ASSERT_TRUE(document.ok()) << document.status().message();
  EXPECT_EQ(document.value().root(), nlohmann::json::parse(text));
  // Whitespace inside strings is data: kept whole.
  EXPECT_EQ(document.value().root()["s"].get_ref<const std::string&>().size(), 1u << 17);
  EXPECT_FALSE(ParseJsonDocument(spaces + "{\"a\": x}").ok());
}

TEST(ReleaseJson, EmptiesNestedContainers) {
  nlohmann::json j = nlohmann::json::parse(R"({"a": [[1, [2, {"b": [3]}]], {}], "c": "x"})");
  ReleaseJson(&j);
  EXPECT_TRUE(j.is_object());
  EXPECT_TRUE(j.empty());
}

}  // namespace
}  // namespace alpa

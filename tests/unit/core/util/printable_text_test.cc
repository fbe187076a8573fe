// Issue 21, item 8: messages that quote input must not echo raw binary or invalid UTF-8.
#include "core/util/printable_text.h"

#include <gtest/gtest.h>

#include <string>

namespace alpa {
namespace {

TEST(PrintableText, KeepsAsciiValidUtf8NewlinesAndTabs) {
  EXPECT_EQ(PrintableText("gpt:hidden=12"), "gpt:hidden=12");
  EXPECT_EQ(PrintableText("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(PrintableText("a\nb\tc"), "a\nb\tc");
}

TEST(PrintableText, EscapesControlBytesAndInvalidUtf8) {
  EXPECT_EQ(PrintableText(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(PrintableText("\x01\x1B[2J\x7F"), "\\x01\\x1B[2J\\x7F");
  EXPECT_EQ(PrintableText("\xFF\xFE"), "\\xFF\\xFE");
  EXPECT_EQ(PrintableText("\xC3"), "\\xC3");                             // truncated sequence
  EXPECT_EQ(PrintableText("\xC0\xAF"), "\\xC0\\xAF");                    // overlong '/'
  EXPECT_EQ(PrintableText("\xED\xA0\x80"), "\\xED\\xA0\\x80");           // a surrogate
  EXPECT_EQ(PrintableText("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // past U+10FFFF
}

}  // namespace
}  // namespace alpa

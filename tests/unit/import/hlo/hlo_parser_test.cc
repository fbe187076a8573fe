// The HLO text parser: every syntax element it reads, and its errors with line and column.
#include "import/hlo/hlo_parser.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "unit/import/hlo/hlo_fixture_util.h"

namespace alpa {
namespace {

using ::testing::HasSubstr;

constexpr const char* kModule =
    R"(HloModule jit_f, input_output_alias={ {1}: (0, {}, may-alias) }, entry_computation_layout={(f32[2,3]{1,0})->(f32[], f32[2,3]{1,0})}

FileNames
1 "f.py"

StackFrames
1 {file_location_id=1 parent_frame_id=1}

%region_0.1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add.1 = f32[] add(f32[] %a, f32[] %b)
}

ENTRY main.2 {
  w.1 = f32[2,3]{1,0} parameter(0), metadata={op_name="params[\'w\']"}
  c.1 = f32[] constant(0)
  s.1 = f32[] reduce(w.1, c.1), dimensions={0,1}, to_apply=region_0.1, metadata={op_name="jit(f)/layers_2/reduce_sum" stack_frame_id=1}
  t.1 = (f32[], /*index=1*/f32[2,3]{1,0}) tuple(s.1, w.1)
  ROOT g.1 = f32[2,3]{1,0} slice(w.1), slice={[0:2:1], [0:3]}
}
)";

TEST(HloParserTest, ReadsHeaderComputationsInstructionsAndAttributes) {
  Result<HloModule> parsed = ParseHloModule(kModule);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const HloModule& module = parsed.value();
  EXPECT_EQ(module.name, "jit_f");
  ASSERT_NE(module.FindAttribute("input_output_alias"), nullptr);
  EXPECT_EQ(module.FindAttribute("input_output_alias")->value, "{ {1}: (0, {}, may-alias) }");
  ASSERT_NE(module.FindAttribute("entry_computation_layout"), nullptr);
  // The debug blocks are skipped: two computations, the signature and '%' dropped.
  ASSERT_EQ(module.computations.size(), 2u);
  EXPECT_EQ(module.computations[0].name, "region_0.1");
  EXPECT_FALSE(module.computations[0].is_entry);
  EXPECT_EQ(module.computations[0].root().name, "add.1");
  // Operands printed with their shapes keep only the names.
  EXPECT_EQ(module.computations[0].root().operands, (std::vector<std::string>{"a", "b"}));
  const HloComputation* entry = module.entry();
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->name, "main.2");
  ASSERT_EQ(entry->instructions.size(), 5u);
  const HloInstruction& w = entry->instructions[0];
  EXPECT_EQ(w.opcode, "parameter");
  EXPECT_EQ(w.literal, "0");
  EXPECT_EQ(w.shape.element_type, "f32");
  EXPECT_EQ(w.shape.dims, (Dims{2, 3}));
  EXPECT_EQ(w.location.line, 16);
  EXPECT_EQ(w.location.column, 3);
  const HloInstruction& reduce = entry->instructions[2];
  EXPECT_EQ(reduce.operands, (std::vector<std::string>{"w.1", "c.1"}));
  ASSERT_NE(reduce.FindAttribute("dimensions"), nullptr);
  EXPECT_EQ(reduce.FindAttribute("dimensions")->value, "{0,1}");
  EXPECT_EQ(reduce.FindAttribute("to_apply")->value, "region_0.1");
  EXPECT_THAT(reduce.FindAttribute("metadata")->value, HasSubstr("layers_2"));
  const HloInstruction& tuple = entry->instructions[3];
  ASSERT_TRUE(tuple.shape.is_tuple);
  ASSERT_EQ(tuple.shape.elements.size(), 2u);
  EXPECT_EQ(tuple.shape.elements[1].dims, (Dims{2, 3}));
  EXPECT_TRUE(entry->instructions[4].is_root);
  EXPECT_EQ(entry->root().FindAttribute("slice")->value, "{[0:2:1], [0:3]}");
}

TEST(HloParserTest, ParsesEveryJaxFixture) {
  for (const char* name : {"sgd_step", "adam_step", "conv", "scan", "gather_axis1"}) {
    Result<HloModule> parsed = ParseHloModule(ReadHloFixture(std::string(name) + ".hlo"));
    EXPECT_TRUE(parsed.ok()) << name << ": " << parsed.status().message();
  }
}

std::string ParseError(const std::string& text) {
  Result<HloModule> parsed = ParseHloModule(text);
  EXPECT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kParse);
  return parsed.status().message();
}

TEST(HloParserTest, ErrorsNameLineColumnAndWhatWasExpected) {
  EXPECT_THAT(ParseError("{\"format\": \"alpa-graph\"}"),
              HasSubstr("line 1, column 1: expected \"HloModule\""));
  EXPECT_EQ(ParseError("HloModule m\n\nENTRY e {\n  x.1 f32[] parameter(0)\n}\n"),
            "line 4, column 7: expected '=' after the instruction name \"x.1\", found 'f'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  x.1 = f32[2 parameter(0)\n}\n"),
            "line 3, column 15: expected ']' to close the dimensions, found 'p'");
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  x.1 = f32[] parameter(0), dims={1,2]\n}\n"),
            "line 3, column 38: unbalanced ']'");
  // An attribute left open swallows the rest of the text.
  EXPECT_EQ(ParseError("HloModule m\nENTRY e {\n  x.1 = f32[] parameter(0), dims={1,2\n}\n"),
            "line 2, column 1: computation \"e\" has no closing '}'");
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  x.1 = f32[] parameter(0)\n"),
              HasSubstr("line 2, column 1: computation \"e\" has no closing '}'"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  x.1 = f32[] parameter(0)\n  x.1 = f32[] "
                         "parameter(1)\n}\n"),
              HasSubstr("line 4, column 3: instruction \"x.1\" is defined twice"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  x.1 = f32[?] parameter(0)\n}\n"),
              HasSubstr("dynamic dimensions are not supported"));
  EXPECT_THAT(ParseError("HloModule m\n/* open"),
              HasSubstr("line 2, column 1: unterminated comment"));
  EXPECT_THAT(ParseError("HloModule m\n"), HasSubstr("the module has no computation"));
  EXPECT_THAT(
      ParseError("HloModule m\nENTRY e {\n  x.1 = f32[] parameter(0), metadata={op_name=\"a}\n}\n"),
      HasSubstr("line 3, column 47: unterminated string"));
}

TEST(HloParserTest, HostileNestingIsAnErrorNotACrash) {
  std::string deep_tuple = "HloModule m\nENTRY e {\n  x.1 = " + std::string(100000, '(') + "f32[]" +
                           std::string(100000, ')') + " parameter(0)\n}\n";
  EXPECT_THAT(ParseError(deep_tuple), HasSubstr("tuple shapes nested deeper than 64 levels"));
  std::string deep_attribute =
      "HloModule m\nENTRY e {\n  x.1 = f32[] parameter(0), a=" + std::string(100000, '{') + "\n}\n";
  EXPECT_THAT(ParseError(deep_attribute), HasSubstr("nesting deeper than 64 levels"));
}

}  // namespace
}  // namespace alpa

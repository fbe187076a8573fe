// The invariant every fuzz target of a problem reader checks: whatever parses is valid and
// survives write -> read in both formats (exactly in its own format, up to the liveness
// representation across formats), and writing is deterministic. A break aborts through
// __builtin_trap so that libFuzzer records the input.
#pragma once

#include <cstdio>
#include <string>

#include "core/problem/problem_io.h"
#include "core/problem/sharding_problem.h"
#include "problem_compare.h"

namespace alpa::fuzz {

[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  __builtin_trap();
}

// MaximalLiveSets is quadratic: compare liveness across formats only on small problems.
inline bool SmallEnough(const ShardingProblem& p) {
  return p.nodes.size() <= 256 && p.live_sets.size() <= 256;
}

inline void CheckRoundTrip(const ShardingProblem& p, ProblemFormat source) {
  const Status valid = ValidateProblem(p);
  if (!valid.ok()) Fail("a reader returned an invalid problem: " + valid.message());
  for (ProblemFormat format : {ProblemFormat::kIopddl, ProblemFormat::kAlpa}) {
    const char* name = format == ProblemFormat::kAlpa ? "alpa" : "iopddl";
    Result<std::string> text = WriteProblem(p, format);
    if (!text.ok()) {
      // IOPDDL cannot hold followers, aliases or live sets; Alpa cannot hold more than N
      // explicit live sets. Anything else is a writer bug.
      if (text.status().code() == StatusCode::kUnsupported) continue;
      Fail(std::string("writing ") + name + " failed: " + text.status().message());
    }
    Result<ShardingProblem> back = ReadProblemBuffer(text.value(), ProblemFormat::kAuto);
    if (!back.ok()) {
      Fail(std::string("reading back ") + name + " failed: " + back.status().message() + "\n" +
           text.value().substr(0, 2000));
    }
    const bool same_format = format == source;
    if (!same_format && !SmallEnough(p)) continue;
    const std::string diff = testing::DiffProblems(p, back.value(), same_format);
    if (!diff.empty()) Fail(std::string(name) + " round trip changed the problem: " + diff);
    Result<std::string> again = WriteProblem(back.value(), format);
    if (same_format && (!again.ok() || again.value() != text.value())) {
      Fail(std::string(name) + " writer is not deterministic over a round trip");
    }
  }
}

// Reads `data` as `format`; parsing failures are fine (they must just not crash).
inline void FuzzReader(const uint8_t* data, size_t size, ProblemFormat format) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Result<ShardingProblem> p = ReadProblemBuffer(bytes, format);
  if (!p.ok()) {
    if (p.status().message().empty()) Fail("an error without a message");
    return;
  }
  CheckRoundTrip(p.value(), format);
}

}  // namespace alpa::fuzz

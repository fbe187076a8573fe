// The CUDA runner's host-side parts, which run without a GPU: the storage codec (doubles to a
// buffer's storage elements and back, rounding as RoundToDType), the storage dtype each buffer
// gets (storage_policy.h) and the allocator's size classes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "exec/cpu/interpreter.h"
#include "exec/cuda/device_allocator.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/storage_codec.h"
#include "exec/cuda/storage_policy.h"
#include "support/small_plans.h"

namespace alpa::cuda {
namespace {

std::vector<double> RoundTrip(const std::vector<double>& values, DType round_to, DType storage) {
  std::vector<unsigned char> bytes;
  EncodeStorage(values.data(), static_cast<int64_t>(values.size()), round_to, storage, bytes);
  EXPECT_EQ(bytes.size(), values.size() * static_cast<size_t>(DTypeBytes(storage)));
  std::vector<double> back(values.size());
  DecodeStorage(bytes.data(), static_cast<int64_t>(values.size()), storage, back.data());
  return back;
}

// Random magnitudes over every binade of the 16-bit formats, subnormals and overflow included.
std::vector<double> Samples() {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           65504.0,
                           65520.0,
                           1e6,
                           5.96e-8,
                           2.98e-8,
                           6.1e-5,
                           1.0 / 3,
                           3.0e38,
                           1e39,
                           -1e39,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
  for (int i = 0; i < 2000; ++i) v.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  return v;
}

// The bf16 feed path (a branch-free encoding for normal values, EncodeBf16 for the rest) gives
// EncodeFloat's bits over every binade a double can reach in bf16, its subnormals, the rounding
// ties, overflow to infinity and NaN.
TEST(StorageCodecTest, Bf16FeedsGiveTheKernelsBitsInEveryBinade) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::vector<double> values = {0.0,
                                -0.0,
                                std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                1.0 + 1.0 / 256,
                                1.0 + 3.0 / 256,
                                3.3895313892515355e38,
                                3.4e38,
                                1e-310};
  for (int e = -160; e <= 130; ++e) {
    for (int k = 0; k < 16; ++k) {
      const double v = std::ldexp(mantissa(rng), e);
      values.push_back(k % 2 == 0 ? v : -v);
    }
  }
  std::vector<unsigned char> bytes;
  EncodeStorage(values.data(), static_cast<int64_t>(values.size()), DType::kBF16, DType::kBF16,
                bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t got = 0;
    std::memcpy(&got, bytes.data() + 2 * i, sizeof(got));
    EXPECT_EQ(got, EncodeFloat(values[i], kBF16Format)) << values[i];
  }
}

TEST(StorageCodecTest, EveryFloatStorageHoldsExactlyWhatRoundToDTypeGives) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    const std::vector<double> values = Samples();
    const std::vector<double> back = RoundTrip(values, dtype, dtype);
    for (size_t i = 0; i < values.size(); ++i) {
      const double want = RoundToDType(values[i], dtype);
      EXPECT_EQ(back[i], want) << DTypeName(dtype) << " of " << values[i];
      EXPECT_EQ(std::signbit(back[i]), std::signbit(want))
          << DTypeName(dtype) << " of " << values[i];
    }
  }
}

// Enough values for several parallel chunks, with the ties of every float format (half an ulp
// above values with odd and even last bits, in every binade) and the values around each
// format's largest finite one: the bit-operation rounding of normal values and its fallback.
TEST(StorageCodecTest, ManyValuesWithEveryTieRoundAsRoundToDType) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::uniform_int_distribution<int> fraction(0, 1 << 12);
  std::vector<double> values;
  for (int mantissa_bits : {7, 10, 23}) {
    for (int i = 0; i < 120000; ++i) {
      const double tie = 1.0 + std::ldexp(2.0 * fraction(rng) + 1.0, -(mantissa_bits + 1));
      values.push_back((i % 2 == 0 ? 1.0 : -1.0) * std::ldexp(tie, exponent(rng)));
    }
  }
  for (double top : {65504.0, 65520.0, 3.3895313892515355e38, 3.4028234663852886e38}) {
    for (double f : {1.0 - 1e-9, 1.0, 1.0 + 1e-9, 1.0 + 1e-3}) values.push_back(top * f);
  }
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const std::vector<double> back = RoundTrip(values, dtype, dtype);
    int64_t wrong = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const double want = RoundToDType(values[i], dtype);
      if (back[i] != want && wrong++ < 5) {
        ADD_FAILURE() << DTypeName(dtype) << " of " << values[i] << ": " << back[i] << ", expected "
                      << want;
      }
    }
    EXPECT_EQ(wrong, 0) << DTypeName(dtype);
  }
}

TEST(StorageCodecTest, AHalfValueKeptInF32IsRoundedOnlyWhereAsked) {
  const std::vector<double> values = {1.0 + 1.0 / 1024 + 1.0 / 4096, 3.14159265358979};
  // Unrounded (a partial sum): f32 precision.
  const std::vector<double> kept = RoundTrip(values, DType::kF32, DType::kF32);
  EXPECT_EQ(kept[0], values[0]);
  EXPECT_EQ(kept[1], RoundToDType(values[1], DType::kF32));
  // Rounded to its bf16 dtype, held in f32: exactly bf16's value.
  const std::vector<double> rounded = RoundTrip(values, DType::kBF16, DType::kF32);
  EXPECT_EQ(rounded[0], RoundToDType(values[0], DType::kBF16));
  EXPECT_EQ(rounded[1], RoundToDType(values[1], DType::kBF16));
}

TEST(StorageCodecTest, IntegersWrapAndPredicatesAreZeroOrOne) {
  const std::vector<double> values = {0, 1, -1, 127.9, 128, -129, 3e9, -7.5};
  for (DType dtype : {DType::kS8, DType::kS32, DType::kS64, DType::kPred}) {
    const std::vector<double> back = RoundTrip(values, dtype, dtype);
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(back[i], RoundToDType(values[i], dtype)) << DTypeName(dtype) << " of " << values[i];
    }
  }
}

TEST(StorageCodecTest, NanStaysNanInEveryFloatStorage) {
  const std::vector<double> values = {std::nan("")};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    EXPECT_TRUE(std::isnan(RoundTrip(values, dtype, dtype)[0])) << DTypeName(dtype);
  }
}

// A program of the shapes the lowering emits: a sharded contraction's partial sum (round
// false) all-reduced, a microbatch gradient accumulated unrounded then scaled, a slice of an
// unrounded value, a received boundary tensor.
DeviceProgram PolicyProgram(DType dtype) {
  DeviceProgram p;
  testing::AddBuffers(p, 9, {4}, dtype);
  p.buffers[8].dtype = DType::kF32;
  auto add = [&](InstructionKind kind, int32_t out, std::vector<int32_t> in, bool round) {
    testing::AddInstruction(p, kind, out, std::move(in), -1, round);
  };
  add(InstructionKind::kFeed, 0, {}, true);          // b0: data, rounded
  add(InstructionKind::kRun, 1, {0}, false);         // b1: partial sum
  add(InstructionKind::kAllReduce, 2, {1}, true);    // b2: completed, rounded
  add(InstructionKind::kZero, 3, {}, true);          // b3: accumulator
  add(InstructionKind::kAccumulate, 3, {2}, false);  //     unrounded addends
  add(InstructionKind::kScale, 4, {3}, true);        // b4: mean, rounded
  add(InstructionKind::kSlice, 5, {3}, true);        // b5: a slice of b3 (unrounded)
  add(InstructionKind::kCopy, 6, {5}, true);         // b6: a copy of b5
  add(InstructionKind::kZero, 7, {}, true);          // b7: a receive buffer
  add(InstructionKind::kRecv, 7, {}, true);          //
  add(InstructionKind::kRun, 8, {2}, false);         // b8: f32 partial
  return p;
}

TEST(StoragePolicyTest, SixteenBitBuffersThatHoldUnroundedValuesAreKeptInF32) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const std::vector<DType> storage = StorageDTypes(PolicyProgram(dtype));
    const std::vector<DType> want = {dtype,       DType::kF32, dtype,       DType::kF32, dtype,
                                     DType::kF32, DType::kF32, DType::kF32, DType::kF32};
    ASSERT_EQ(storage.size(), want.size());
    for (size_t b = 0; b < want.size(); ++b) {
      EXPECT_EQ(storage[b], want[b]) << DTypeName(dtype) << " buffer " << b;
    }
  }
}

TEST(StoragePolicyTest, OtherDTypesAreKeptAsTheyAre) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kS32}) {
    const DeviceProgram p = PolicyProgram(dtype);
    const std::vector<DType> storage = StorageDTypes(p);
    for (size_t b = 0; b < storage.size(); ++b) EXPECT_EQ(storage[b], p.buffers[b].dtype);
  }
}

TEST(DeviceAllocatorTest, SizeClassesCoverTheRequestWithinAQuarter) {
  EXPECT_EQ(DeviceAllocator::SizeClass(1), 256u);
  EXPECT_EQ(DeviceAllocator::SizeClass(256), 256u);
  EXPECT_EQ(DeviceAllocator::SizeClass(257), 512u);
  EXPECT_EQ(DeviceAllocator::SizeClass(4096), 4096u);
  EXPECT_EQ(DeviceAllocator::SizeClass(4097), 5120u);
  for (size_t bytes = 1; bytes < (size_t{1} << 34); bytes = bytes * 3 + 7) {
    const size_t size = DeviceAllocator::SizeClass(bytes);
    EXPECT_GE(size, bytes);
    EXPECT_EQ(size % 256, 0u) << bytes;
    if (bytes > 4096) {
      EXPECT_LE(static_cast<double>(size), 1.25 * static_cast<double>(bytes));
    }
  }
}

}  // namespace
}  // namespace alpa::cuda

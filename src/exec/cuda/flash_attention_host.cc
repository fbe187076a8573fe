// The fused attention kernels on the host: flash_attention_body.h's blocks run one after the
// other, each on kAttentionThreads host threads that meet at a barrier for every Sync(). A warp's
// tile operations (WMMA's) run on its first thread over whole 16x16 tiles held as floats, in
// the order the others reach only after a Sync(), as on the GPU. The shared memory is filled
// with NaNs before every block, so a body that reads what it did not write shows in the results.
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "exec/cuda/flash_attention.h"
#include "exec/cuda/flash_attention_body.h"
#include "exec/cuda/kernel_math.h"

namespace alpa {
namespace cuda {
namespace {

// A reusable barrier of `count` threads.
class HostBarrier {
 public:
  explicit HostBarrier(int count) : count_(count) {}

  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const int count_;
  int waiting_ = 0;
  int64_t generation_ = 0;
};

// Holds the block's threads until all of them exist (run) or one could not start (abandon).
class StartGate {
 public:
  // Whether to run.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return state_ != State::kPending; });
    return state_ == State::kRun;
  }
  void Run() { Set(State::kRun); }
  void Abandon() { Set(State::kAbandon); }

 private:
  enum class State { kPending, kRun, kAbandon };
  void Set(State state) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = state;
    changed_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  State state_ = State::kPending;
};

constexpr int kTileElements = kAttentionFragment * kAttentionFragment;

struct HostAccumulator {
  float x[kTileElements];  // row-major
};

// A WMMA operand tile (A: m x k, B: k x n), row-major whatever its memory layout L.
template <class S, class L, bool kIsA>
struct HostOperand {
  float x[kTileElements];
};

// flash_attention_body.h's target on the host.
class HostTarget {
 public:
  using Accumulator = HostAccumulator;
  template <class S, class L>
  using MatrixA = HostOperand<S, L, true>;
  template <class S, class L>
  using MatrixB = HostOperand<S, L, false>;

  HostTarget(int thread, int64_t block, unsigned char* shared, HostBarrier* barrier)
      : thread_(thread), block_(block), shared_(shared), barrier_(barrier) {}

  int Thread() const { return thread_; }
  int64_t Block() const { return block_; }
  unsigned char* Shared() const { return shared_; }
  void Sync() const { barrier_->Wait(); }

  static float Decode(Bf16Storage, uint16_t bits) {
    return FloatOfBits(static_cast<uint32_t>(bits) << 16);
  }
  static float Decode(F16Storage, uint16_t bits) {
    return static_cast<float>(DecodeFloat(bits, kF16Format));
  }
  static void CopyPack(uint16_t* dst, const uint16_t* src) {
    std::memcpy(dst, src, kAttentionPack * sizeof(uint16_t));
  }
  static void ZeroPack(uint16_t* dst) { std::memset(dst, 0, kAttentionPack * sizeof(uint16_t)); }
  static uint16_t Encode(Bf16Storage, float v) { return Bf16BitsOf(v); }
  static uint16_t Encode(F16Storage, float v) {
    return static_cast<uint16_t>(EncodeFloat(static_cast<double>(v), kF16Format));
  }

  void Zero(Accumulator& c) const {
    if (!WarpLeader()) return;
    for (float& x : c.x) x = 0.0f;
  }
  void Load(Accumulator& c, const float* p, int ld) const {
    if (!WarpLeader()) return;
    for (int r = 0; r < kAttentionFragment; ++r) {
      for (int col = 0; col < kAttentionFragment; ++col) {
        c.x[r * kAttentionFragment + col] = p[r * ld + col];
      }
    }
  }
  void Store(float* p, int ld, const Accumulator& c) const {
    if (!WarpLeader()) return;
    for (int r = 0; r < kAttentionFragment; ++r) {
      for (int col = 0; col < kAttentionFragment; ++col) {
        p[r * ld + col] = c.x[r * kAttentionFragment + col];
      }
    }
  }
  template <class S, class L, bool kIsA>
  void LoadOperand(S, HostOperand<S, L, kIsA>& f, const uint16_t* p, int ld) const {
    if (!WarpLeader()) return;
    for (int r = 0; r < kAttentionFragment; ++r) {
      for (int col = 0; col < kAttentionFragment; ++col) {
        f.x[r * kAttentionFragment + col] = Decode(S{}, p[ElementAt<L>(r, col, ld)]);
      }
    }
  }
  template <class S, class LA, class LB>
  void Mma(Accumulator& c, const HostOperand<S, LA, true>& a,
           const HostOperand<S, LB, false>& b) const {
    if (!WarpLeader()) return;
    for (int m = 0; m < kAttentionFragment; ++m) {
      for (int n = 0; n < kAttentionFragment; ++n) {
        float sum = c.x[m * kAttentionFragment + n];
        for (int k = 0; k < kAttentionFragment; ++k) {
          sum += a.x[m * kAttentionFragment + k] * b.x[k * kAttentionFragment + n];
        }
        c.x[m * kAttentionFragment + n] = sum;
      }
    }
  }

 private:
  bool WarpLeader() const { return thread_ % kAttentionWarpSize == 0; }

  int thread_;
  int64_t block_;
  unsigned char* shared_;
  HostBarrier* barrier_;
};

// Runs body(target) for every thread of blocks 0 .. blocks - 1, one block after the other.
template <class Body>
Status RunHostGrid(int64_t blocks, int64_t shared_bytes, const std::string& what,
                   const Body& body) {
  constexpr size_t kAlign = 256;  // as the layouts' regions
  std::vector<unsigned char> memory(static_cast<size_t>(shared_bytes) + kAlign);
  const uintptr_t address = reinterpret_cast<uintptr_t>(memory.data());
  unsigned char* shared = memory.data() + (kAlign - address % kAlign) % kAlign;
  HostBarrier barrier(kAttentionThreads);
  StartGate gate;
  std::vector<std::thread> threads;
  threads.reserve(kAttentionThreads);
  auto run_thread = [&](int thread) {
    if (!gate.Wait()) return;
    for (int64_t block = 0; block < blocks; ++block) {
      if (thread == 0) std::memset(shared, 0xff, static_cast<size_t>(shared_bytes));
      barrier.Wait();
      body(HostTarget(thread, block, shared, &barrier));
      barrier.Wait();  // the block is done before the next one's NaNs
    }
  };
  std::string failure;
  try {
    for (int thread = 0; thread < kAttentionThreads; ++thread) {
      threads.emplace_back(run_thread, thread);
    }
  } catch (const std::system_error& e) {
    failure = e.what();
  }
  if (failure.empty()) {
    gate.Run();
  } else {
    gate.Abandon();
  }
  for (std::thread& t : threads) t.join();
  if (!failure.empty()) {
    return InternalError(what + ": could not start the host threads (" + failure + ")");
  }
  return Status::Ok();
}

template <class S>
Status RunForward(const AttentionParams& p) {
  return RunHostGrid(ForwardGridOf(p), ForwardShared(p.head_dim).bytes, "attention forward",
                     [&](const HostTarget& t) { AttentionForwardBlock<S>(t, p); });
}

template <class S>
Status RunBackward(const AttentionParams& p) {
  const int64_t shared = BackwardShared(p.head_dim).bytes;
  ALPA_RETURN_IF_ERROR(RunHostGrid(RowDotGridOf(p), 0, "attention backward (sum of dO * O)",
                                   [&](const HostTarget& t) { AttentionRowDotBlock<S>(t, p); }));
  ALPA_RETURN_IF_ERROR(
      RunHostGrid(KeyValueGradGridOf(p), shared, "attention backward (dK, dV)",
                  [&](const HostTarget& t) { AttentionKeyValueGradBlock<S>(t, p); }));
  return RunHostGrid(QueryGradGridOf(p), shared, "attention backward (dQ)",
                     [&](const HostTarget& t) { AttentionQueryGradBlock<S>(t, p); });
}

}  // namespace

Status RunAttentionForwardOnHost(const AttentionForwardArgs& args) {
  const Result<AttentionParams> checked = CheckedForwardParams(args);
  if (!checked.ok()) return checked.status();
  const AttentionParams& p = checked.value();
  return args.shape.storage == DType::kBF16 ? RunForward<Bf16Storage>(p)
                                            : RunForward<F16Storage>(p);
}

Status RunAttentionBackwardOnHost(const AttentionBackwardArgs& args) {
  const Result<AttentionParams> checked = CheckedBackwardParams(args);
  if (!checked.ok()) return checked.status();
  const AttentionParams& p = checked.value();
  return args.shape.storage == DType::kBF16 ? RunBackward<Bf16Storage>(p)
                                            : RunBackward<F16Storage>(p);
}

}  // namespace cuda
}  // namespace alpa

// The fused attention kernels of flash_attention.h, written once over an execution target: the
// GPU (flash_attention.cu: threadIdx, __syncthreads, WMMA tensor-core tiles) and the host
// (flash_attention_host.cc: every block in turn, its threads as host threads, the tiles
// emulated). A body runs as one thread of one block and sees its target only through:
//
//   int Thread(), int64_t Block()          this thread in [0, kAttentionThreads), the block
//   unsigned char* Shared()                the block's shared memory (the layouts below)
//   void Sync()                            every thread of the block waits for the others
//   static float Decode(S, uint16_t)       a 16-bit storage element as float (S: the storage tag)
//   static uint16_t Encode(S, float)       rounded to nearest even
//   static CopyPack(dst, src), ZeroPack(dst)  8 elements (16 bytes, both 16-byte aligned)
//   Accumulator, MatrixA<S, L>, MatrixB<S, L>   16x16 tiles held by a warp (L: the memory layout)
//   Zero(acc), Load(acc, p, ld), Store(p, ld, acc), LoadOperand(S, frag, p, ld), Mma(acc, a, b)
//                                          WMMA's fill / load / store / mma_sync: every thread of
//                                          a warp calls them together, with the same arguments
//
// A fragment's elements are opaque (their thread mapping is the hardware's), so the scores and
// the forward's output accumulator live in shared memory as f32, and the per-row softmax runs on
// plain threads there; reductions go through shared memory (no warp shuffles). P and dS reach
// the tensor cores rounded to the storage type, as FlashAttention-2 does.
//
// Tiling: a block of kAttentionThreads (4 warps) takes kAttentionTile (64) query rows (forward,
// dQ) or keys (dK / dV) and walks the other sequence in steps of 64; warp w owns the rows
// [16 w, 16 w + 16) of each 64 x 64 score tile and of the 64 x head_dim products. Rows past the
// sequence's end are zeros in shared memory and masked; causal blocks skip the key blocks above
// the diagonal and the 16 x 16 tiles above it inside the diagonal block.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "exec/cuda/flash_attention.h"
#include "exec/cuda/float_math.h"

#if defined(__CUDACC__)
#define ALPA_ATTENTION_BODY __device__ inline
#define ALPA_ATTENTION_UNROLL _Pragma("unroll")
#else
#define ALPA_ATTENTION_BODY inline
#define ALPA_ATTENTION_UNROLL
#endif

namespace alpa {
namespace cuda {

constexpr int kAttentionTile = 64;  // query rows and keys of a block's step
constexpr int kAttentionThreads = 128;
constexpr int kAttentionWarpSize = 32;
constexpr int kAttentionFragment = 16;                                // WMMA's m = n = k
constexpr int kAttentionSteps = kAttentionTile / kAttentionFragment;  // 16-tiles across a tile
constexpr int kAttentionMaxHeadDim = 128;
constexpr int kAttentionPack = 8;  // 16-bit elements per 16-byte load
constexpr int kAttentionMaxDimTiles = kAttentionMaxHeadDim / kAttentionFragment;
// Leading dimensions (elements) of the shared tiles; the padding staggers the rows across memory
// banks, and keeps each 16 x 16 tile 32-byte aligned (WMMA's rule).
constexpr int kScoreLd = kAttentionTile + 4;                  // f32 64 x 64 scores
constexpr int kProbLd = kAttentionTile + 8;                   // 16-bit 64 x 64 P and dS
ALPA_HD int RowTileLd(int head_dim) { return head_dim + 8; }  // 16-bit 64 x head_dim rows
ALPA_HD int SumTileLd(int head_dim) { return head_dim + 4; }  // f32 64 x head_dim sums

// The storage tags, and the memory layouts of a WMMA operand.
struct Bf16Storage {};
struct F16Storage {};
struct RowMajor {
  static constexpr bool kRowMajor = true;
};
struct ColMajor {
  static constexpr bool kRowMajor = false;
};

// Element (row, col) of a matrix held in layout L with leading dimension ld.
template <class L>
ALPA_HD int ElementAt(int row, int col, int ld) {
  return L::kRowMajor ? row * ld + col : col * ld + row;
}

// A view as the kernels read it: 16-bit elements, strides in elements.
struct AttentionTensor {
  uint16_t* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};
  // Rows read 8 elements (16 bytes) at a time: AttentionViewPacked.
  bool packed = false;
};

struct AttentionParams {
  AttentionTensor q, k, v, o, d_o, dq, dk, dv;
  float* lse = nullptr;      // forward: written; backward: read
  float* row_dot = nullptr;  // backward: sum_d dO * O per query row
  int64_t batch = 1, heads = 1, q_seq = 0, k_seq = 0;
  int head_dim = 0;
  float scale = 1.0f;
  bool causal = false;
};

inline AttentionTensor TensorOf(const AttentionView& view, int64_t head_dim) {
  AttentionTensor t;
  t.data = static_cast<uint16_t*>(view.data);
  for (int i = 0; i < 4; ++i) t.stride[i] = view.stride[i];
  t.packed = AttentionViewPacked(view, head_dim);
  return t;
}

// The shape and the views both passes read.
inline AttentionParams ParamsOf(const AttentionShape& shape, const AttentionView& q,
                                const AttentionView& k, const AttentionView& v,
                                const AttentionView& o) {
  AttentionParams p;
  p.batch = shape.batch;
  p.heads = shape.heads;
  p.q_seq = shape.q_seq;
  p.k_seq = shape.k_seq;
  p.head_dim = static_cast<int>(shape.head_dim);
  p.scale = shape.scale;
  p.causal = shape.causal;
  p.q = TensorOf(q, shape.head_dim);
  p.k = TensorOf(k, shape.head_dim);
  p.v = TensorOf(v, shape.head_dim);
  p.o = TensorOf(o, shape.head_dim);
  return p;
}

// The kernels' parameters of a pass, or kInvalidArgument naming the pass and what the kernels do
// not compute (AttentionUnsupportedReason) or the pointer that is null: the launchers' and the
// host runs' one check, before any kernel runs.
inline Result<AttentionParams> CheckedForwardParams(const AttentionForwardArgs& a) {
  std::string problem = AttentionUnsupportedReason(a.shape);
  const void* pointers[] = {a.q.data, a.k.data, a.v.data, a.o.data, a.lse};
  const char* names[] = {"q.data", "k.data", "v.data", "o.data", "lse"};
  for (int i = 0; i < 5 && problem.empty(); ++i) {
    if (pointers[i] == nullptr) problem = std::string(names[i]) + " is null";
  }
  if (!problem.empty()) return InvalidArgument("attention forward: " + problem);
  AttentionParams p = ParamsOf(a.shape, a.q, a.k, a.v, a.o);
  p.lse = a.lse;
  return p;
}

inline Result<AttentionParams> CheckedBackwardParams(const AttentionBackwardArgs& a) {
  std::string problem = AttentionUnsupportedReason(a.shape);
  const void* pointers[] = {a.q.data,  a.k.data,  a.v.data,  a.o.data, a.d_o.data,
                            a.dq.data, a.dk.data, a.dv.data, a.lse,    a.scratch};
  const char* names[] = {"q.data",  "k.data",  "v.data",  "o.data", "d_o.data",
                         "dq.data", "dk.data", "dv.data", "lse",    "scratch"};
  for (int i = 0; i < 10 && problem.empty(); ++i) {
    if (pointers[i] == nullptr) problem = std::string(names[i]) + " is null";
  }
  if (!problem.empty()) return InvalidArgument("attention backward: " + problem);
  AttentionParams p = ParamsOf(a.shape, a.q, a.k, a.v, a.o);
  p.d_o = TensorOf(a.d_o, a.shape.head_dim);
  p.dq = TensorOf(a.dq, a.shape.head_dim);
  p.dk = TensorOf(a.dk, a.shape.head_dim);
  p.dv = TensorOf(a.dv, a.shape.head_dim);
  p.lse = const_cast<float*>(a.lse);  // read only by the backward
  p.row_dot = static_cast<float*>(a.scratch);
  return p;
}

ALPA_HD int64_t AttentionBlocksOf(int64_t seq) {
  return (seq + kAttentionTile - 1) / kAttentionTile;
}

// Grids (one dimension of blocks; AttentionUnsupportedReason keeps them within int32).
inline int64_t ForwardGridOf(const AttentionParams& p) {
  return p.batch * p.heads * AttentionBlocksOf(p.q_seq);
}
inline int64_t RowDotGridOf(const AttentionParams& p) {
  return (p.batch * p.heads * p.q_seq + kAttentionThreads - 1) / kAttentionThreads;
}
inline int64_t KeyValueGradGridOf(const AttentionParams& p) {
  return p.batch * p.heads * AttentionBlocksOf(p.k_seq);
}
inline int64_t QueryGradGridOf(const AttentionParams& p) { return ForwardGridOf(p); }

// Carves 256-byte-aligned regions out of a block's shared memory.
struct SharedCarver {
  int64_t bytes = 0;
  ALPA_HD int64_t Add(int64_t size) {
    const int64_t at = bytes;
    bytes += (size + 255) / 256 * 256;
    return at;
  }
};

ALPA_HD int64_t RowTileBytes(int head_dim) {
  return int64_t{kAttentionTile} * RowTileLd(head_dim) * 2;
}
ALPA_HD int64_t SumTileBytes(int head_dim) {
  return int64_t{kAttentionTile} * SumTileLd(head_dim) * 4;
}
constexpr int64_t kScoreBytes = int64_t{kAttentionTile} * kScoreLd * 4;
constexpr int64_t kProbBytes = int64_t{kAttentionTile} * kProbLd * 2;
constexpr int64_t kRowBytes = int64_t{kAttentionTile} * 4;

// Shared memory of the forward: Q, K, V tiles, the scores, P, the f32 output accumulator, and
// the rows' running max and sum with the two half-rows' partial max and sum.
struct ForwardShared {
  int64_t q, k, v, scores, probs, out, row_max, row_sum, part_max, part_sum, bytes;
  ALPA_HD explicit ForwardShared(int head_dim) {
    SharedCarver c;
    q = c.Add(RowTileBytes(head_dim));
    k = c.Add(RowTileBytes(head_dim));
    v = c.Add(RowTileBytes(head_dim));
    scores = c.Add(kScoreBytes);
    probs = c.Add(kProbBytes);
    out = c.Add(SumTileBytes(head_dim));
    row_max = c.Add(kRowBytes);
    row_sum = c.Add(kRowBytes);
    part_max = c.Add(2 * kRowBytes);
    part_sum = c.Add(2 * kRowBytes);
    bytes = c.bytes;
  }
};

// Shared memory of the backward kernels: the resident tiles (K, V for dK / dV; Q, dO for dQ)
// and the streamed ones, the scores S and dP (f32), P and dS (16-bit), the rows' lse and
// sum_d dO * O. The f32 results are staged over S and dP once the loop is done.
struct BackwardShared {
  int64_t q, k, v, d_o, scores, d_scores, probs, d_probs, row_lse, row_dot, staging, bytes;
  ALPA_HD explicit BackwardShared(int head_dim) {
    SharedCarver c;
    q = c.Add(RowTileBytes(head_dim));
    k = c.Add(RowTileBytes(head_dim));
    v = c.Add(RowTileBytes(head_dim));
    d_o = c.Add(RowTileBytes(head_dim));
    scores = c.Add(kScoreBytes);
    d_scores = c.Add(kScoreBytes);
    probs = c.Add(kProbBytes);
    d_probs = c.Add(kProbBytes);
    row_lse = c.Add(kRowBytes);
    row_dot = c.Add(kRowBytes);
    staging = scores;  // SumTileBytes(head_dim) <= 2 * kScoreBytes for head_dim <= 128
    bytes = c.bytes;
  }
};

// The largest of any head_dim: what the launcher allows every kernel (one attribute value, so
// that launches of different head_dims on other threads never lower it under each other).
ALPA_HD int64_t AttentionMaxSharedBytes() {
  const int64_t forward = ForwardShared(kAttentionMaxHeadDim).bytes;
  const int64_t backward = BackwardShared(kAttentionMaxHeadDim).bytes;
  return forward > backward ? forward : backward;
}

template <class T>
ALPA_ATTENTION_BODY T* SharedAt(unsigned char* shared, int64_t offset) {
  return reinterpret_cast<T*>(shared + offset);
}

// The (batch, head) pair's element offset in t.
ALPA_ATTENTION_BODY int64_t HeadOffset(const AttentionTensor& t, int64_t bh, int64_t heads) {
  return (bh / heads) * t.stride[0] + (bh % heads) * t.stride[1];
}

// Rows [row0, row0 + 64) of the pair's [seq, head_dim] matrix of t into a 16-bit tile; rows at
// or past `rows` are zeros.
template <class Target>
ALPA_ATTENTION_BODY void LoadRowTile(const Target& t, uint16_t* tile, const AttentionTensor& src,
                                     int64_t base, int64_t row0, int64_t rows, int head_dim) {
  const int ld = RowTileLd(head_dim);
  if (src.packed) {  // 16-byte packs: the tile's rows are 16-byte aligned too (ld % 8 == 0)
    const int packs = head_dim / kAttentionPack;
    for (int e = t.Thread(); e < kAttentionTile * packs; e += kAttentionThreads) {
      const int r = e / packs, d = (e % packs) * kAttentionPack;
      const int64_t row = row0 + r;
      uint16_t* to = tile + r * ld + d;
      if (row < rows) {
        Target::CopyPack(to, src.data + base + row * src.stride[2] + d);
      } else {
        Target::ZeroPack(to);
      }
    }
    return;
  }
  for (int e = t.Thread(); e < kAttentionTile * head_dim; e += kAttentionThreads) {
    const int r = e / head_dim, d = e % head_dim;
    const int64_t row = row0 + r;
    tile[r * ld + d] =
        row < rows ? src.data[base + row * src.stride[2] + d * src.stride[3]] : uint16_t{0};
  }
}

// Rows [row0, row0 + 64) of an f32 tile (SumTileLd) times `factor`, rounded to the storage, into
// the pair's matrix of dst; rows at or past `rows` are not written.
template <class S, class Target>
ALPA_ATTENTION_BODY void StoreRowTile(const Target& t, const AttentionTensor& dst, int64_t base,
                                      const float* tile, int64_t row0, int64_t rows, int head_dim,
                                      float factor) {
  const int ld = SumTileLd(head_dim);
  for (int e = t.Thread(); e < kAttentionTile * head_dim; e += kAttentionThreads) {
    const int r = e / head_dim, d = e % head_dim;
    const int64_t row = row0 + r;
    if (row < rows) {
      dst.data[base + row * dst.stride[2] + d * dst.stride[3]] =
          Target::Encode(S{}, tile[r * ld + d] * factor);
    }
  }
}

// c += A B over k steps [first, end) of 16: A (16 x 16 per step) at `a` in layout LA, B (16 x 16
// per step) at `b` in layout LB; a and b point at the tiles' origins (step 0). The whole warp
// calls it.
template <class S, class LA, class LB, class Target>
ALPA_ATTENTION_BODY void AccumulateProduct(const Target& t, typename Target::Accumulator& c,
                                           const uint16_t* a, int lda, const uint16_t* b, int ldb,
                                           int first, int end) {
  for (int s = first; s < end; ++s) {
    typename Target::template MatrixA<S, LA> fa;
    typename Target::template MatrixB<S, LB> fb;
    t.LoadOperand(S{}, fa, a + ElementAt<LA>(0, s * kAttentionFragment, lda), lda);
    t.LoadOperand(S{}, fb, b + ElementAt<LB>(s * kAttentionFragment, 0, ldb), ldb);
    t.Mma(c, fa, fb);
  }
}

// This warp's row tile of a 64 x 64 score tile: out[16 w + i][j] = sum_d x[16 w + i][d] y[j][d]
// for the 16-column tiles up to `last_col_tile` (the rest is not written).
template <class S, class Target>
ALPA_ATTENTION_BODY void ScoreRowTile(const Target& t, float* out, const uint16_t* x,
                                      const uint16_t* y, int head_dim, int last_col_tile) {
  const int warp = t.Thread() / kAttentionWarpSize;
  const int ld = RowTileLd(head_dim);
  const int m0 = warp * kAttentionFragment;
  for (int j = 0; j <= last_col_tile; ++j) {
    const int n0 = j * kAttentionFragment;
    typename Target::Accumulator c;
    t.Zero(c);
    AccumulateProduct<S, RowMajor, ColMajor>(t, c, x + m0 * ld, ld, y + n0 * ld, ld, 0,
                                             head_dim / kAttentionFragment);
    t.Store(out + m0 * kScoreLd + n0, kScoreLd, c);
  }
}

// Whether key `key` counts for query `query`.
ALPA_ATTENTION_BODY bool KeyVisible(const AttentionParams& p, int64_t query, int64_t key) {
  return query < p.q_seq && key < p.k_seq && (!p.causal || key <= query);
}

// ---- Forward: O and lse, a block per (batch, head, 64 query rows) ----

template <class S, class Target>
ALPA_ATTENTION_BODY void AttentionForwardBlock(const Target& t, const AttentionParams& p) {
  const int64_t q_blocks = AttentionBlocksOf(p.q_seq);
  const int64_t bh = t.Block() / q_blocks;
  int64_t qb = t.Block() % q_blocks;
  if (p.causal) qb = q_blocks - 1 - qb;  // the longest rows first
  const int64_t q0 = qb * kAttentionTile;
  const int head_dim = p.head_dim, ld = RowTileLd(head_dim), out_ld = SumTileLd(head_dim);
  const int tid = t.Thread(), warp = tid / kAttentionWarpSize;
  const ForwardShared at(head_dim);
  unsigned char* shared = t.Shared();
  uint16_t* qs = SharedAt<uint16_t>(shared, at.q);
  uint16_t* ks = SharedAt<uint16_t>(shared, at.k);
  uint16_t* vs = SharedAt<uint16_t>(shared, at.v);
  float* scores = SharedAt<float>(shared, at.scores);
  uint16_t* probs = SharedAt<uint16_t>(shared, at.probs);
  float* out = SharedAt<float>(shared, at.out);
  float* row_max = SharedAt<float>(shared, at.row_max);
  float* row_sum = SharedAt<float>(shared, at.row_sum);
  float* part_max = SharedAt<float>(shared, at.part_max);
  float* part_sum = SharedAt<float>(shared, at.part_sum);

  LoadRowTile(t, qs, p.q, HeadOffset(p.q, bh, p.heads), q0, p.q_seq, head_dim);
  for (int e = tid; e < kAttentionTile * out_ld; e += kAttentionThreads) out[e] = 0.0f;
  if (tid < kAttentionTile) {
    row_max[tid] = -INFINITY;
    row_sum[tid] = 0.0f;
  }
  // Two threads per row, each over every other column; the column order rotates with the row
  // so that a warp's 32 threads read 32 different banks.
  const int row = tid / 2, half = tid % 2;
  const int64_t query = q0 + row;
  const int64_t k_base = HeadOffset(p.k, bh, p.heads), v_base = HeadOffset(p.v, bh, p.heads);
  const int64_t k_blocks = p.causal ? qb + 1 : AttentionBlocksOf(p.k_seq);
  for (int64_t kb = 0; kb < k_blocks; ++kb) {
    const int64_t k0 = kb * kAttentionTile;
    const bool diagonal = p.causal && kb == qb;
    LoadRowTile(t, ks, p.k, k_base, k0, p.k_seq, head_dim);
    LoadRowTile(t, vs, p.v, v_base, k0, p.k_seq, head_dim);
    t.Sync();
    ScoreRowTile<S>(t, scores, qs, ks, head_dim, diagonal ? warp : kAttentionSteps - 1);
    t.Sync();
    float* score_row = scores + row * kScoreLd;
    float block_max = -INFINITY;
    for (int c = 0; c < kAttentionTile / 2; ++c) {
      const int col = half + 2 * ((c + row) % (kAttentionTile / 2));
      const float s = KeyVisible(p, query, k0 + col) ? score_row[col] * p.scale : -INFINITY;
      score_row[col] = s;
      block_max = fmaxf(block_max, s);
    }
    part_max[tid] = block_max;
    t.Sync();
    const float old_max = row_max[row];
    const float new_max = fmaxf(old_max, fmaxf(part_max[2 * row], part_max[2 * row + 1]));
    // A row with no visible key yet keeps zeros (exp(-inf - 0)), never exp(-inf + inf).
    const float shift = new_max == -INFINITY ? 0.0f : new_max;
    const float rescale = expf(old_max - shift);
    float block_sum = 0.0f;
    for (int c = 0; c < kAttentionTile / 2; ++c) {
      const int col = half + 2 * ((c + row) % (kAttentionTile / 2));
      const float e = expf(score_row[col] - shift);
      probs[row * kProbLd + col] = Target::Encode(S{}, e);
      block_sum += e;
    }
    part_sum[tid] = block_sum;
    const int dims_per_half = head_dim / 2;
    for (int d = half * dims_per_half; d < (half + 1) * dims_per_half; ++d) {
      out[row * out_ld + d] *= rescale;
    }
    t.Sync();
    if (half == 0) {
      row_sum[row] = row_sum[row] * rescale + part_sum[2 * row] + part_sum[2 * row + 1];
      row_max[row] = new_max;
    }
    const int m0 = warp * kAttentionFragment;
    for (int j = 0; j < head_dim / kAttentionFragment; ++j) {
      const int n0 = j * kAttentionFragment;
      typename Target::Accumulator c;
      t.Load(c, out + m0 * out_ld + n0, out_ld);
      AccumulateProduct<S, RowMajor, RowMajor>(t, c, probs + m0 * kProbLd, kProbLd, vs + n0, ld, 0,
                                               diagonal ? warp + 1 : kAttentionSteps);
      t.Store(out + m0 * out_ld + n0, out_ld, c);
    }
    t.Sync();
  }
  const int64_t o_base = HeadOffset(p.o, bh, p.heads);
  for (int e = tid; e < kAttentionTile * head_dim; e += kAttentionThreads) {
    const int r = e / head_dim, d = e % head_dim;
    if (q0 + r < p.q_seq) {
      p.o.data[o_base + (q0 + r) * p.o.stride[2] + d * p.o.stride[3]] =
          Target::Encode(S{}, out[r * out_ld + d] / row_sum[r]);
    }
  }
  if (tid < kAttentionTile && q0 + tid < p.q_seq) {
    p.lse[bh * p.q_seq + q0 + tid] = row_max[tid] + logf(row_sum[tid]);
  }
}

// ---- Backward ----

// row_dot[row] = sum_d dO * O of one query row per thread (rows over every (batch, head)).
template <class S, class Target>
ALPA_ATTENTION_BODY void AttentionRowDotBlock(const Target& t, const AttentionParams& p) {
  const int64_t row = t.Block() * kAttentionThreads + t.Thread();
  if (row >= p.batch * p.heads * p.q_seq) return;
  const int64_t bh = row / p.q_seq, i = row % p.q_seq;
  const int64_t o_at = HeadOffset(p.o, bh, p.heads) + i * p.o.stride[2];
  const int64_t g_at = HeadOffset(p.d_o, bh, p.heads) + i * p.d_o.stride[2];
  float sum = 0.0f;
  for (int d = 0; d < p.head_dim; ++d) {
    sum += Target::Decode(S{}, p.d_o.data[g_at + d * p.d_o.stride[3]]) *
           Target::Decode(S{}, p.o.data[o_at + d * p.o.stride[3]]);
  }
  p.row_dot[row] = sum;
}

// The rows' lse and sum_d dO * O of query rows [q0, q0 + 64) into shared memory (zeros past the
// end: those rows' keys are all masked).
template <class Target>
ALPA_ATTENTION_BODY void LoadRowStats(const Target& t, const AttentionParams& p,
                                      const BackwardShared& at, int64_t bh, int64_t q0) {
  const int tid = t.Thread();
  if (tid < kAttentionTile) {
    const bool inside = q0 + tid < p.q_seq;
    const int64_t i = bh * p.q_seq + q0 + tid;
    SharedAt<float>(t.Shared(), at.row_lse)[tid] = inside ? p.lse[i] : 0.0f;
    SharedAt<float>(t.Shared(), at.row_dot)[tid] = inside ? p.row_dot[i] : 0.0f;
  }
}

// S = Q K^T and dP = dO V^T of the 64 x 64 tile at (q0, k0) (warps), then P = exp(scale S - lse)
// and dS = P (dP - row_dot) per element (threads), rounded into `probs` (when `keep_probs`) and
// `d_probs`. Masked and out-of-range entries are exact zeros.
template <class S, class Target>
ALPA_ATTENTION_BODY void GradientScores(const Target& t, const AttentionParams& p,
                                        const BackwardShared& at, int64_t q0, int64_t k0,
                                        bool diagonal, bool keep_probs) {
  unsigned char* shared = t.Shared();
  float* scores = SharedAt<float>(shared, at.scores);
  float* d_scores = SharedAt<float>(shared, at.d_scores);
  const int warp = t.Thread() / kAttentionWarpSize;
  const int last = diagonal ? warp : kAttentionSteps - 1;
  ScoreRowTile<S>(t, scores, SharedAt<uint16_t>(shared, at.q), SharedAt<uint16_t>(shared, at.k),
                  p.head_dim, last);
  ScoreRowTile<S>(t, d_scores, SharedAt<uint16_t>(shared, at.d_o), SharedAt<uint16_t>(shared, at.v),
                  p.head_dim, last);
  t.Sync();
  const float* row_lse = SharedAt<float>(shared, at.row_lse);
  const float* row_dot = SharedAt<float>(shared, at.row_dot);
  uint16_t* probs = SharedAt<uint16_t>(shared, at.probs);
  uint16_t* d_probs = SharedAt<uint16_t>(shared, at.d_probs);
  for (int e = t.Thread(); e < kAttentionTile * kAttentionTile; e += kAttentionThreads) {
    const int r = e / kAttentionTile, c = e % kAttentionTile;
    float prob = 0.0f, d_prob = 0.0f;
    if (KeyVisible(p, q0 + r, k0 + c)) {
      prob = expf(scores[r * kScoreLd + c] * p.scale - row_lse[r]);
      d_prob = prob * (d_scores[r * kScoreLd + c] - row_dot[r]);
    }
    if (keep_probs) probs[r * kProbLd + c] = Target::Encode(S{}, prob);
    d_probs[r * kProbLd + c] = Target::Encode(S{}, d_prob);
  }
}

// A warp's accumulators for its 16 rows of a 64 x head_dim result (the first head_dim / 16).
template <class Target>
struct RowAccumulators {
  typename Target::Accumulator tile[kAttentionMaxDimTiles];
};

template <class Target>
ALPA_ATTENTION_BODY void ZeroAll(const Target& t, RowAccumulators<Target>& acc, int head_dim) {
  ALPA_ATTENTION_UNROLL
  for (int j = 0; j < kAttentionMaxDimTiles; ++j) {
    if (j < head_dim / kAttentionFragment) t.Zero(acc.tile[j]);
  }
}

// acc[j] += A x (columns [16 j, 16 j + 16) of the 16-bit row tile `b`), A being this warp's 16
// rows of a 64 x 64 16-bit matrix in layout LA (ld kProbLd), over k steps [first, end).
template <class S, class LA, class Target>
ALPA_ATTENTION_BODY void AccumulateRows(const Target& t, RowAccumulators<Target>& acc,
                                        const uint16_t* a, const uint16_t* b, int head_dim,
                                        int first, int end) {
  const int m0 = (t.Thread() / kAttentionWarpSize) * kAttentionFragment;
  const int ld = RowTileLd(head_dim);
  ALPA_ATTENTION_UNROLL
  for (int j = 0; j < kAttentionMaxDimTiles; ++j) {
    if (j < head_dim / kAttentionFragment) {
      AccumulateProduct<S, LA, RowMajor>(t, acc.tile[j], a + ElementAt<LA>(m0, 0, kProbLd), kProbLd,
                                         b + j * kAttentionFragment, ld, first, end);
    }
  }
}

// Writes the accumulators (times `factor`) as rows [row0, row0 + 64) of the pair's matrix of
// dst, through the staging tile. Starts and ends with a Sync.
template <class S, class Target>
ALPA_ATTENTION_BODY void StoreRows(const Target& t, const RowAccumulators<Target>& acc,
                                   const BackwardShared& at, const AttentionTensor& dst, int64_t bh,
                                   int64_t heads, int64_t row0, int64_t rows, int head_dim,
                                   float factor) {
  float* staging = SharedAt<float>(t.Shared(), at.staging);
  const int m0 = (t.Thread() / kAttentionWarpSize) * kAttentionFragment;
  const int ld = SumTileLd(head_dim);
  t.Sync();
  ALPA_ATTENTION_UNROLL
  for (int j = 0; j < kAttentionMaxDimTiles; ++j) {
    if (j < head_dim / kAttentionFragment) {
      t.Store(staging + m0 * ld + j * kAttentionFragment, ld, acc.tile[j]);
    }
  }
  t.Sync();
  StoreRowTile<S>(t, dst, HeadOffset(dst, bh, heads), staging, row0, rows, head_dim, factor);
  t.Sync();
}

// dK and dV of 64 keys: a block per (batch, head, key block), over the query blocks.
template <class S, class Target>
ALPA_ATTENTION_BODY void AttentionKeyValueGradBlock(const Target& t, const AttentionParams& p) {
  const int64_t k_blocks = AttentionBlocksOf(p.k_seq);
  const int64_t bh = t.Block() / k_blocks, kb = t.Block() % k_blocks;
  const int64_t k0 = kb * kAttentionTile;
  const int head_dim = p.head_dim;
  const int warp = t.Thread() / kAttentionWarpSize;
  const BackwardShared at(head_dim);
  unsigned char* shared = t.Shared();
  LoadRowTile(t, SharedAt<uint16_t>(shared, at.k), p.k, HeadOffset(p.k, bh, p.heads), k0, p.k_seq,
              head_dim);
  LoadRowTile(t, SharedAt<uint16_t>(shared, at.v), p.v, HeadOffset(p.v, bh, p.heads), k0, p.k_seq,
              head_dim);
  RowAccumulators<Target> dk, dv;
  ZeroAll(t, dk, head_dim);
  ZeroAll(t, dv, head_dim);
  const int64_t q_base = HeadOffset(p.q, bh, p.heads), g_base = HeadOffset(p.d_o, bh, p.heads);
  for (int64_t qb = p.causal ? kb : 0; qb < AttentionBlocksOf(p.q_seq); ++qb) {
    const int64_t q0 = qb * kAttentionTile;
    const bool diagonal = p.causal && qb == kb;
    LoadRowTile(t, SharedAt<uint16_t>(shared, at.q), p.q, q_base, q0, p.q_seq, head_dim);
    LoadRowTile(t, SharedAt<uint16_t>(shared, at.d_o), p.d_o, g_base, q0, p.q_seq, head_dim);
    LoadRowStats(t, p, at, bh, q0);
    t.Sync();
    GradientScores<S>(t, p, at, q0, k0, diagonal, /*keep_probs=*/true);
    t.Sync();
    // This warp's keys see the query tiles from its own (diagonal) on.
    const int first = diagonal ? warp : 0;
    AccumulateRows<S, ColMajor>(t, dv, SharedAt<uint16_t>(shared, at.probs),
                                SharedAt<uint16_t>(shared, at.d_o), head_dim, first,
                                kAttentionSteps);
    AccumulateRows<S, ColMajor>(t, dk, SharedAt<uint16_t>(shared, at.d_probs),
                                SharedAt<uint16_t>(shared, at.q), head_dim, first, kAttentionSteps);
    t.Sync();
  }
  StoreRows<S>(t, dv, at, p.dv, bh, p.heads, k0, p.k_seq, head_dim, 1.0f);
  StoreRows<S>(t, dk, at, p.dk, bh, p.heads, k0, p.k_seq, head_dim, p.scale);
}

// dQ of 64 query rows: a block per (batch, head, query block), over the key blocks.
template <class S, class Target>
ALPA_ATTENTION_BODY void AttentionQueryGradBlock(const Target& t, const AttentionParams& p) {
  const int64_t q_blocks = AttentionBlocksOf(p.q_seq);
  const int64_t bh = t.Block() / q_blocks;
  int64_t qb = t.Block() % q_blocks;
  if (p.causal) qb = q_blocks - 1 - qb;  // the longest rows first
  const int64_t q0 = qb * kAttentionTile;
  const int head_dim = p.head_dim;
  const int warp = t.Thread() / kAttentionWarpSize;
  const BackwardShared at(head_dim);
  unsigned char* shared = t.Shared();
  LoadRowTile(t, SharedAt<uint16_t>(shared, at.q), p.q, HeadOffset(p.q, bh, p.heads), q0, p.q_seq,
              head_dim);
  LoadRowTile(t, SharedAt<uint16_t>(shared, at.d_o), p.d_o, HeadOffset(p.d_o, bh, p.heads), q0,
              p.q_seq, head_dim);
  LoadRowStats(t, p, at, bh, q0);
  RowAccumulators<Target> dq;
  ZeroAll(t, dq, head_dim);
  const int64_t k_base = HeadOffset(p.k, bh, p.heads), v_base = HeadOffset(p.v, bh, p.heads);
  const int64_t k_blocks = p.causal ? qb + 1 : AttentionBlocksOf(p.k_seq);
  for (int64_t kb = 0; kb < k_blocks; ++kb) {
    const int64_t k0 = kb * kAttentionTile;
    const bool diagonal = p.causal && kb == qb;
    LoadRowTile(t, SharedAt<uint16_t>(shared, at.k), p.k, k_base, k0, p.k_seq, head_dim);
    LoadRowTile(t, SharedAt<uint16_t>(shared, at.v), p.v, v_base, k0, p.k_seq, head_dim);
    t.Sync();
    GradientScores<S>(t, p, at, q0, k0, diagonal, /*keep_probs=*/false);
    t.Sync();
    // This warp's queries see the key tiles up to its own (diagonal).
    AccumulateRows<S, RowMajor>(t, dq, SharedAt<uint16_t>(shared, at.d_probs),
                                SharedAt<uint16_t>(shared, at.k), head_dim, 0,
                                diagonal ? warp + 1 : kAttentionSteps);
    t.Sync();
  }
  StoreRows<S>(t, dq, at, p.dq, bh, p.heads, q0, p.q_seq, head_dim, p.scale);
}

}  // namespace cuda
}  // namespace alpa

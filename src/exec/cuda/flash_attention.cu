// The fused attention kernels on the GPU: flash_attention_body.h's blocks over a device target
// whose tiles are WMMA fragments (16x16x16, bf16 / f16 operands, f32 accumulators: sm_80 and
// newer) and whose threads are the block's. The backward runs three kernels in order on the
// stream: the rows' sum_d dO * O, dK / dV (a block per key block), dQ (a block per query block);
// every output element is written by one block, without atomics, so results are deterministic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <string>

#include "exec/cuda/flash_attention.h"
#include "exec/cuda/flash_attention_body.h"
#include "exec/cuda/kernel_launch.h"

namespace alpa {
namespace cuda {
namespace {

namespace wmma = nvcuda::wmma;

template <class S>
struct DeviceElement;
template <>
struct DeviceElement<Bf16Storage> {
  using Type = __nv_bfloat16;
};
template <>
struct DeviceElement<F16Storage> {
  using Type = __half;
};

template <class L>
struct DeviceLayout {
  using Type = wmma::row_major;
};
template <>
struct DeviceLayout<ColMajor> {
  using Type = wmma::col_major;
};

// flash_attention_body.h's target on the GPU.
struct DeviceTarget {
  using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
  template <class S, class L>
  using MatrixA = wmma::fragment<wmma::matrix_a, 16, 16, 16, typename DeviceElement<S>::Type,
                                 typename DeviceLayout<L>::Type>;
  template <class S, class L>
  using MatrixB = wmma::fragment<wmma::matrix_b, 16, 16, 16, typename DeviceElement<S>::Type,
                                 typename DeviceLayout<L>::Type>;

  __device__ int Thread() const { return static_cast<int>(threadIdx.x); }
  __device__ int64_t Block() const { return static_cast<int64_t>(blockIdx.x); }
  __device__ unsigned char* Shared() const {
    extern __shared__ __align__(256) unsigned char attention_shared[];
    return attention_shared;
  }
  __device__ void Sync() const { __syncthreads(); }

  __device__ static float Decode(Bf16Storage, uint16_t bits) {
    return __bfloat162float(__ushort_as_bfloat16(bits));
  }
  __device__ static float Decode(F16Storage, uint16_t bits) {
    return __half2float(__ushort_as_half(bits));
  }
  __device__ static uint16_t Encode(Bf16Storage, float v) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
  __device__ static uint16_t Encode(F16Storage, float v) {
    return __half_as_ushort(__float2half_rn(v));
  }

  __device__ static void CopyPack(uint16_t* dst, const uint16_t* src) {
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
  }
  __device__ static void ZeroPack(uint16_t* dst) {
    *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
  }

  __device__ void Zero(Accumulator& c) const { wmma::fill_fragment(c, 0.0f); }
  __device__ void Load(Accumulator& c, const float* p, int ld) const {
    wmma::load_matrix_sync(c, p, static_cast<unsigned>(ld), wmma::mem_row_major);
  }
  __device__ void Store(float* p, int ld, const Accumulator& c) const {
    wmma::store_matrix_sync(p, c, static_cast<unsigned>(ld), wmma::mem_row_major);
  }
  template <class S, class Fragment>
  __device__ void LoadOperand(S, Fragment& f, const uint16_t* p, int ld) const {
    wmma::load_matrix_sync(f, reinterpret_cast<const typename DeviceElement<S>::Type*>(p),
                           static_cast<unsigned>(ld));
  }
  template <class A, class B>
  __device__ void Mma(Accumulator& c, const A& a, const B& b) const {
    wmma::mma_sync(c, a, b, c);
  }
};

template <class S>
__global__ void __launch_bounds__(kAttentionThreads) AttentionForwardKernel(AttentionParams p) {
  AttentionForwardBlock<S>(DeviceTarget(), p);
}

template <class S>
__global__ void __launch_bounds__(kAttentionThreads) AttentionRowDotKernel(AttentionParams p) {
  AttentionRowDotBlock<S>(DeviceTarget(), p);
}

template <class S>
__global__ void __launch_bounds__(kAttentionThreads)
    AttentionKeyValueGradKernel(AttentionParams p) {
  AttentionKeyValueGradBlock<S>(DeviceTarget(), p);
}

template <class S>
__global__ void __launch_bounds__(kAttentionThreads) AttentionQueryGradKernel(AttentionParams p) {
  AttentionQueryGradBlock<S>(DeviceTarget(), p);
}

using AttentionKernel = void (*)(AttentionParams);

// Launches `kernel` over `blocks` blocks with `shared_bytes` of dynamic shared memory.
Status LaunchAttentionKernel(AttentionKernel kernel, int64_t blocks, int64_t shared_bytes,
                             cudaStream_t stream, const std::string& what,
                             const AttentionParams& p) {
  if (shared_bytes > 48 * 1024) {
    // Always the largest of any head_dim: the attribute is per kernel, not per launch.
    ALPA_RETURN_IF_ERROR(
        CudaStatus(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(AttentionMaxSharedBytes())),
                   what + ": allowing " + std::to_string(AttentionMaxSharedBytes()) +
                       " bytes of shared memory"));
  }
  kernel<<<static_cast<unsigned>(blocks), kAttentionThreads, static_cast<size_t>(shared_bytes),
           stream>>>(p);
  return CheckLaunch(what);
}

template <class S>
Status LaunchForward(const AttentionParams& p, cudaStream_t stream) {
  return LaunchAttentionKernel(AttentionForwardKernel<S>, ForwardGridOf(p),
                               ForwardShared(p.head_dim).bytes, stream, "attention forward", p);
}

template <class S>
Status LaunchBackward(const AttentionParams& p, cudaStream_t stream) {
  const int64_t shared = BackwardShared(p.head_dim).bytes;
  ALPA_RETURN_IF_ERROR(LaunchAttentionKernel(AttentionRowDotKernel<S>, RowDotGridOf(p), 0, stream,
                                             "attention backward (sum of dO * O)", p));
  ALPA_RETURN_IF_ERROR(LaunchAttentionKernel(AttentionKeyValueGradKernel<S>, KeyValueGradGridOf(p),
                                             shared, stream, "attention backward (dK, dV)", p));
  return LaunchAttentionKernel(AttentionQueryGradKernel<S>, QueryGradGridOf(p), shared, stream,
                               "attention backward (dQ)", p);
}

}  // namespace

Status LaunchAttentionForward(const AttentionForwardArgs& args, cudaStream_t stream) {
  const Result<AttentionParams> checked = CheckedForwardParams(args);
  if (!checked.ok()) return checked.status();
  const AttentionParams& p = checked.value();
  return args.shape.storage == DType::kBF16 ? LaunchForward<Bf16Storage>(p, stream)
                                            : LaunchForward<F16Storage>(p, stream);
}

Status LaunchAttentionBackward(const AttentionBackwardArgs& args, cudaStream_t stream) {
  const Result<AttentionParams> checked = CheckedBackwardParams(args);
  if (!checked.ok()) return checked.status();
  const AttentionParams& p = checked.value();
  return args.shape.storage == DType::kBF16 ? LaunchBackward<Bf16Storage>(p, stream)
                                            : LaunchBackward<F16Storage>(p, stream);
}

}  // namespace cuda
}  // namespace alpa

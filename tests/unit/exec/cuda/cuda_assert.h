// ASSERT_CUDA(expr): a GoogleTest assertion that a CUDA runtime call succeeded, naming the call
// and CUDA's message. For the tests that run on a GPU.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#define ASSERT_CUDA(expr)                                                  \
  do {                                                                     \
    const cudaError_t e_ = (expr);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #expr << ": " << cudaGetErrorString(e_); \
  } while (0)

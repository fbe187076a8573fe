# cuDNN and NCCL for the CUDA backend (ALPA_WITH_CUDA): the toolkit's CMake package does not
# provide them. Defines the imported targets alpa::cudnn_headers and alpa::nccl_headers, headers
# only: libalpa opens both at run time (src/exec/cuda/dnn_loader.h, nccl_loader.h) and links
# neither, so that a process can bring its own libcudnn.so.9 and libnccl.so.2 (PyTorch's, say).
find_path(ALPA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_path(ALPA_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
foreach(var ALPA_CUDNN_INCLUDE_DIR ALPA_NCCL_INCLUDE_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "alpa: ALPA_WITH_CUDA needs cuDNN and NCCL's headers (${var} not found)")
  endif()
endforeach()
add_library(alpa::cudnn_headers INTERFACE IMPORTED)
set_target_properties(alpa::cudnn_headers PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES ${ALPA_CUDNN_INCLUDE_DIR})
add_library(alpa::nccl_headers INTERFACE IMPORTED)
set_target_properties(alpa::nccl_headers PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES ${ALPA_NCCL_INCLUDE_DIR})

# cuDNN and NCCL for the CUDA backend (ALPA_WITH_CUDA): the toolkit's CMake package does not
# provide them. Defines the imported targets alpa::cudnn (headers and library) and
# alpa::nccl_headers (headers only: libalpa opens NCCL at run time, src/exec/cuda/nccl_loader.h,
# and never links it, so that a process can bring its own libnccl.so.2, PyTorch's say).
find_path(ALPA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(ALPA_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
find_path(ALPA_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
foreach(var ALPA_CUDNN_INCLUDE_DIR ALPA_CUDNN_LIBRARY ALPA_NCCL_INCLUDE_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "alpa: ALPA_WITH_CUDA needs cuDNN and NCCL's headers (${var} not found)")
  endif()
endforeach()
add_library(alpa::cudnn UNKNOWN IMPORTED)
set_target_properties(alpa::cudnn PROPERTIES IMPORTED_LOCATION ${ALPA_CUDNN_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${ALPA_CUDNN_INCLUDE_DIR})
add_library(alpa::nccl_headers INTERFACE IMPORTED)
set_target_properties(alpa::nccl_headers PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES ${ALPA_NCCL_INCLUDE_DIR})

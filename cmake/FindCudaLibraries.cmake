# cuDNN and NCCL for the CUDA backend (ALPA_WITH_CUDA): the toolkit's CMake package does not
# provide them. Defines the imported targets alpa::cudnn and alpa::nccl.
find_path(ALPA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(ALPA_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
find_path(ALPA_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(ALPA_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
foreach(var ALPA_CUDNN_INCLUDE_DIR ALPA_CUDNN_LIBRARY ALPA_NCCL_INCLUDE_DIR ALPA_NCCL_LIBRARY)
  if(NOT ${var})
    message(FATAL_ERROR "alpa: ALPA_WITH_CUDA needs cuDNN and NCCL (${var} not found)")
  endif()
endforeach()
add_library(alpa::cudnn UNKNOWN IMPORTED)
set_target_properties(alpa::cudnn PROPERTIES IMPORTED_LOCATION ${ALPA_CUDNN_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${ALPA_CUDNN_INCLUDE_DIR})
add_library(alpa::nccl UNKNOWN IMPORTED)
set_target_properties(alpa::nccl PROPERTIES IMPORTED_LOCATION ${ALPA_NCCL_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${ALPA_NCCL_INCLUDE_DIR})

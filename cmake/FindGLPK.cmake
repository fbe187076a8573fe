# GLPK ships no CMake package: find its header and library, and make an imported target.
find_path(GLPK_INCLUDE_DIR glpk.h)
find_library(GLPK_LIBRARY NAMES glpk)
if(NOT GLPK_INCLUDE_DIR OR NOT GLPK_LIBRARY)
  message(FATAL_ERROR "GLPK not found: install it with 'apt-get install libglpk-dev'")
endif()
add_library(GLPK::glpk UNKNOWN IMPORTED)
set_target_properties(GLPK::glpk PROPERTIES
  IMPORTED_LOCATION "${GLPK_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${GLPK_INCLUDE_DIR}")
message(STATUS "alpa: GLPK ${GLPK_LIBRARY}")

# Install rules: the library, the public header, a CMake package (find_package(alpa)) and a
# pkg-config file.
include(CMakePackageConfigHelpers)
install(TARGETS alpa_shared alpa_static EXPORT alpaTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/alpa.h include/alpa_experimental.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET alpa_cli)
  install(TARGETS alpa_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # The installed program finds libalpa.so.0 relative to itself ($ORIGIN/../lib), so it starts
  # without LD_LIBRARY_PATH and the install can be moved.
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(ALPA_CLI_RPATH "${CMAKE_INSTALL_LIBDIR}")
  else()
    file(RELATIVE_PATH ALPA_BIN_TO_LIB "/prefix/${CMAKE_INSTALL_BINDIR}"
      "/prefix/${CMAKE_INSTALL_LIBDIR}")
    set(ALPA_CLI_RPATH "$ORIGIN/${ALPA_BIN_TO_LIB}")
  endif()
  set_target_properties(alpa_cli PROPERTIES INSTALL_RPATH "${ALPA_CLI_RPATH}")
endif()
install(EXPORT alpaTargets NAMESPACE alpa:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/alpa)
configure_package_config_file(cmake/alpaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/alpaConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/alpa)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/alpaConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/alpaConfig.cmake ${PROJECT_BINARY_DIR}/alpaConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/alpa)
# The .pc file finds the prefix relative to its own folder, so the install can be moved.
file(RELATIVE_PATH ALPA_PC_UP "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
# With the MPI communicator the archive also needs MPI's C library (-L<its folder> -l<name>).
set(ALPA_PC_MPI_LIBS "")
if(ALPA_WITH_MPI)
  foreach(library ${MPI_C_LIBRARIES})
    get_filename_component(folder ${library} DIRECTORY)
    get_filename_component(name ${library} NAME_WE)
    string(REGEX REPLACE "^lib" "" name ${name})
    string(APPEND ALPA_PC_MPI_LIBS " -L${folder} -l${name}")
  endforeach()
endif()
configure_file(cmake/alpa.pc.in ${PROJECT_BINARY_DIR}/alpa.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/alpa.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

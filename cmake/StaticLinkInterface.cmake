# What a consumer of alpa_static must link besides the archive. The archive holds C++ code
# compiled against libstdc++ and calls libm; a C-only consumer links with the C driver, which adds
# neither (and CMake cannot switch a C-only project to the C++ linker), so the interface names
# them. GLPK, zlib, Threads::Threads and (ALPA_WITH_MPI) MPI's C library are already on the
# interface (src/CMakeLists.txt);
# alpaConfig.cmake finds Threads for the installed target.
target_link_libraries(alpa_static INTERFACE stdc++ m)

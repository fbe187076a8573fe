# ALPA_SANITIZE="address;undefined" (or "thread") instruments everything built after this point.
if(ALPA_SANITIZE)
  string(REPLACE ";" "," _alpa_san "${ALPA_SANITIZE}")
  add_compile_options(-fsanitize=${_alpa_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_alpa_san})
  message(STATUS "alpa: sanitizers ${_alpa_san}")
endif()

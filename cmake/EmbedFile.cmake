# alpa_embed_file(OUTPUT_CC SYMBOL INPUT): writes a .cc defining
#   extern const unsigned char SYMBOL[]; extern const unsigned long SYMBOL_size;
# holding the bytes of INPUT (re-generated when INPUT changes).
function(alpa_embed_file output symbol input)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${input})
  file(READ ${input} hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
  file(WRITE ${output}.tmp
    "// Generated from ${input} by cmake/EmbedFile.cmake. Do not edit.\n"
    "extern const unsigned char ${symbol}[];\nextern const unsigned long ${symbol}_size;\n"
    "const unsigned char ${symbol}[] = {\n${bytes}\n};\n"
    "const unsigned long ${symbol}_size = ${size};\n")
  file(COPY_FILE ${output}.tmp ${output} ONLY_IF_DIFFERENT)
endfunction()

// Text that quotes untrusted input (a spec, a token, a file's bytes) made safe to print: error
// messages reach terminals, logs and other languages' strings, which need valid UTF-8 and no
// control bytes.
#pragma once

#include <string>
#include <string_view>

namespace alpa {

// `text` with every byte that is not part of valid UTF-8, and every control character except
// newline and tab, written as "\xNN"; valid UTF-8 (and so plain ASCII) is kept as it is.
std::string PrintableText(std::string_view text);

}  // namespace alpa

// Numbers in error messages: enough digits to tell any two doubles apart (std::to_string
// prints 6 decimals, which hides the difference between 1e-7 and 0, or 0.1 and 0.1000001).
#pragma once

#include <string>

namespace alpa {

// "%.17g": the value exactly as it reads back ("0.10000000000000001", "inf", "nan").
std::string ExactDoubleText(double v);

}  // namespace alpa

// Numbers in error messages: enough digits to tell any two doubles apart (std::to_string
// prints 6 decimals, which hides the difference between 1e-7 and 0, or 0.1 and 0.1000001).
#pragma once

#include <cstdint>
#include <string>

namespace alpa {

// "%.17g": the value exactly as it reads back ("0.10000000000000001", "inf", "nan").
std::string ExactDoubleText(double v);

// A byte count in messages: "2961 bytes" below 1 KiB, else two decimals in KiB, MiB or GiB
// ("1.50 KiB", "16.00 GiB"; GiB also for larger sizes, which the planner's messages compare
// with device memory).
std::string ByteSizeText(int64_t bytes);
// ByteSizeText plus the exact count when it was rounded: "2.89 KiB (2961 bytes)", "12 bytes".
std::string ExactByteSizeText(int64_t bytes);

}  // namespace alpa

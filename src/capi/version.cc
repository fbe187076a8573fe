#include "alpa.h"

extern "C" {
ALPA_API const char* alpa_version_string(void) { return "0.1.0"; }
ALPA_API int32_t alpa_version_number(void) { return ALPA_VERSION_NUMBER; }
}

#include "alpa.h"

int main() { return alpa_version_number() > 0 ? 0 : 1; }

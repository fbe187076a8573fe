/* Links against an installed libalpa and checks the header and library agree. */
#include <alpa.h>
#include <stdio.h>

int main(void) {
  printf("libalpa %s\n", alpa_version_string());
  return alpa_version_number() == ALPA_VERSION_NUMBER ? 0 : 1;
}

// The version string the runtime reports; compiled artifacts record the one they were built with.
#include "kiln/runtime/version.h"

extern "C" const char* kiln_version(void) { return KILN_VERSION_STRING; }

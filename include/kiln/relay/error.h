// relay's name for kiln::UnsupportedError (support/error.h), which lives with the other error
// types so that every layer can throw it; KILN_SUPPORTED is defined there too.
#pragma once

#include "kiln/support/error.h"

namespace kiln::relay {
using kiln::UnsupportedError;
}  // namespace kiln::relay

// Lifetimes of the values crossing kernel boundaries in a fused module (private to src/relay).
//
// Steps are group indices in execution order. A value is identified by (node, field): get-items
// resolve to the field of their tuple-typed producer, so two get-items of one field are one value.
#pragma once

#include <map>
#include <utility>

#include "kiln/relay/transforms.h"

namespace kiln::relay::analysis {

using relay::ValueKey;
using relay::value_key;

// The last step reading each value that some kernel reads (absent: read by no kernel).
std::map<ValueKey, int> last_uses(const FusedModule& m);

}  // namespace kiln::relay::analysis

// Well-formedness of a graph module: a compiler invariant checked after import and after every
// pass in debug pipelines. A violation is a kiln bug: kiln::InternalError naming the culprit.
#pragma once

#include "kiln/relay/module.h"

namespace kiln::relay {

// Checks: params are distinct, named, uniquely named tensor Vars; every Var the body reads is a
// param; every call's op is registered, its argument count fits, and its stored type equals
// what the op's relation derives now; tuple indices are in range; constants hold exactly the
// bytes of their type; there is one output name per output, names distinct and non-empty.
void verify(const Module& m);

}  // namespace kiln::relay

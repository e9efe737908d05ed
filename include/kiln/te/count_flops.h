// count_flops: floating-point operations of one run of a te program.
#pragma once

#include <vector>

#include "kiln/te/tensor.h"

namespace kiln::te {

// The convention GFLOPS figures use: 2 per term of every reduction (a multiply-add; max/min
// reductions counted alike) and 1 per element of every other stage with floating-point
// arithmetic (an elementwise add, a relu's max, an exp). Stages that only move data (padding,
// layout transforms, copies) and placeholders cost nothing. The compiler records it per node of
// the graph plan, for kiln bench --roofline.
double count_flops(const std::vector<Tensor>& outputs);

}  // namespace kiln::te

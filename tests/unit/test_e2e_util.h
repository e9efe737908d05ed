// End-to-end helpers: compile a schedule through the whole pipeline (lower, IR passes, LLVM) and
// run it on float32 data, so tests compare real machine code with plain-loop references.
#pragma once

#include <string>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/runtime/ndarray.h"
#include "testing/reference.h"

namespace kiln::e2e {

// Builds `s` with `args` (inputs first, then the single output), runs it on `inputs` and returns
// the output. `notes` (optional) receives what the passes reported.
inline std::vector<float> run_f32(const schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                  const std::vector<std::vector<float>>& inputs,
                                  std::vector<std::string>* notes = nullptr) {
  kiln::PipelineOptions opts;
  opts.notes = notes;
  codegen::Module mod = kiln::build(s, args, Target::host(), "kernel", opts);
  std::vector<runtime::NDArray> arrays;
  std::vector<DLTensor*> dl;
  for (size_t i = 0; i < args.size(); ++i) {
    const te::Tensor& t = args[i];
    if (i < inputs.size()) {
      arrays.push_back(runtime::NDArray::from_vector(t.shape(), runtime::dtype_f32(), inputs[i]));
    } else {
      arrays.push_back(runtime::NDArray::zeros(t.shape(), runtime::dtype_f32()));
    }
  }
  for (auto& a : arrays) dl.push_back(a.dltensor());
  mod.run("kernel", dl);
  const runtime::NDArray& out = arrays.back();
  const float* p = static_cast<const float*>(out.dltensor()->data);
  return std::vector<float>(p, p + out.numel());
}

// True when every element is within atol + rtol*|want|; prints the worst offender otherwise.
inline bool close(const std::vector<float>& got, const std::vector<float>& want, double rtol = 1e-5,
                  double atol = 1e-5) {
  return ref::worst_error_ratio(got, want, rtol, atol) <= 1.0;
}

}  // namespace kiln::e2e

// Normalizations and softmax of the op library. Statistics are separate reduction stages
// ("<name>.mean", "<name>.var", "<name>.max", "<name>.sum") that a schedule computes per row
// next to the normalizing stage; variances are two-pass (mean of squared deviations), which
// keeps float32 accurate for rows with a large mean. With `lanes` > 1 (the CPU strategy passes
// a vector's lanes), a statistic over the last dim alone that `lanes` divides is reduced in two
// stages: "<stat>.lanes" [..., lanes], one partial per lane over contiguous vectors, then the
// lanes (a schedule vectorizes the first; one sequential scalar chain per row otherwise).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/te/operation.h"

namespace kiln::te::ops {

inline constexpr const char* kLanesSuffix = ".lanes";

// Inference batch normalization along `axis`: (x - mean) / sqrt(var + eps) * gamma + beta.
// One elementwise stage.
Tensor batch_norm_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                            const Tensor& var, int64_t axis, double epsilon, const std::string& name = "batch_norm");

// Normalizes over dims axis..rank-1; gamma (and beta, when defined) broadcast numpy-style to
// those dims.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t axis, double epsilon,
                  const std::string& name = "layer_norm", int64_t lanes = 1);

// Per (n, c) over the spatial dims, then gamma[c], beta[c].
Tensor instance_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon,
                     const std::string& name = "instance_norm");

// Per (n, group) over the group's channels and the spatial dims, then gamma[c], beta[c].
Tensor group_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t groups, double epsilon,
                  const std::string& name = "group_norm");

// Local response normalization across channels (axis 1):
// x / (bias + alpha / size * sum over the window [c - (size-1)/2, c + size/2] of x^2)^beta.
Tensor lrn(const Tensor& x, int64_t size, double alpha, double beta, double bias, const std::string& name = "lrn");

// exp(x - max) / sum(exp(x - max)) along `axis`; log_softmax: x - max - log(sum(exp(x - max))).
Tensor softmax(const Tensor& x, int64_t axis, const std::string& name = "softmax", int64_t lanes = 1);
Tensor log_softmax(const Tensor& x, int64_t axis, const std::string& name = "log_softmax", int64_t lanes = 1);

}  // namespace kiln::te::ops

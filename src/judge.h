// The verification rule: one place, proven by the mutants in tests/test_mutation.cpp.
//
// Every output tensor T (O, LSE; dQ, dK, dV) is judged by its error against the exact fp64 reference,
// err = max |out - ref|, at the tensor's own scale M = max |ref| (no max(1, .)): rounding errors scale
// with the values rounded, and standard-normal inputs give outputs of 0.05..5.
//
//   baseline (naive)      err <= tol_baseline(dtype) * M
//                         S and P stored in the dtype: its error is the yardstick's, not a target.
//   tiled, baseline ok    err <= f * err(baseline) + floor,   f = 2 (O, LSE), 3 (gradients),
//                         floor = 2 ulps of T's storage type at M     ("2x naive", FlashAttention's
//                         own test rule: its fwd_atol is about one ulp of out + 0.3)
//                               + eps(accumulator) * sqrt(seq_k) * M  (a sum of seq_k terms in
//                         another order: what separates two correct fp32 kernels, nothing in 16 bits)
//   tiled, no baseline    err <= tol_tiled(dtype) * M
//     (absent, or failed) the bound a kernel that keeps S in fp32 meets: a few ulps of the dtype at M
//                         (16-bit), accumulation over seq_k terms (fp32/fp64).
// LSE is stored in fp32 (fp64 for fp64 cases) whatever the input dtype: its floor and its tiled
// tolerance are those of that storage, not of the inputs.
// fp8 (e4m3 Q, K, V; forward only) writes O in bf16: O's floor is bf16's; tol_baseline and tol_tiled
// come from P's rounding to e4m3 for P.V (judge.cpp derives them). The reference reads the same
// quantised inputs, so the error judged is the kernel's, not the inputs' quantisation.
// dQ and dK are judged at no less than 1/16 of dV's magnitude: with one visible key (seq_k = 1)
// they vanish exactly (dS = P o (dP - D) = 0), and what any kernel returns is the rounding of dP - D.
// Such a cancelled tensor of a tiled kernel meets the dtype's own bound at that scale even when a
// baseline is there: the baseline's cancellation noise says nothing about another algorithm's.
// NaN or Inf in a kernel's output, or in the reference, never passes. A reference that could not run
// leaves the kernel unverified and makes the run fail (never success).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "case.h"
#include "registry.h"

namespace fb {

enum class Rule {
  baseline,           // the baseline's own tolerance
  relative,           // f x the baseline's error + floor
  tiled_no_baseline,  // no verified baseline in the case: the dtype's own bound at M
};
std::string_view to_string(Rule r);

// Spacing of representable numbers of `storage` at magnitude m (m > 0): eps * 2^floor(log2 m).
double ulp_at(double m, Dtype storage);
// Storage type of a tensor of a case of dtype t (LSE: fp32, fp64 for fp64).
Dtype storage_of(const std::string& tensor, Dtype t);

double tol_baseline(const std::string& tensor, Dtype t);
double tol_tiled(const std::string& tensor, Dtype t);
double floor_of(const std::string& tensor, Dtype t, double magnitude, int seq_k = 1);
constexpr double kFloorUlps = 2.0;
double relative_factor(const std::string& tensor);  // 2 forward, 3 gradients

struct TensorJudgement {
  std::string tensor;
  double err = 0, scale = 0, bound = 0;
  bool pass = false;
};

// The bound for one tensor under `rule` (baseline_err used by Rule::relative only).
double bound_for(Rule rule, const std::string& tensor, Dtype t, double scale, double baseline_err,
                 int seq_k = 1);
// One tensor's judgement: the scale it is judged at, its bound, and the rule that set it.
struct TensorBound {
  double scale = 0, bound = 0;
  Rule rule = Rule::baseline;
  bool cancelled = false;  // dQ/dK below dV's scale / 16
};
TensorBound tensor_bound(Rule rule, const std::string& tensor, Dtype t, double own_scale, double dv_scale,
                         double baseline_err, int seq_k);
// The scale a tensor is judged at: its own max |ref|, and for dQ, dK at least dV's / 16.
double judged_scale(const std::string& tensor, double own, double dv_scale);
constexpr double kCancelledGradientShare = 1.0 / 16;

}  // namespace fb

#include "judge.h"

#include <cmath>
#include <algorithm>
#include <limits>

namespace fb {

std::string_view to_string(Rule r) {
  switch (r) {
    case Rule::baseline: return "baseline-tolerance";
    case Rule::relative: return "2x-baseline";
    case Rule::tiled_no_baseline: return "dtype-bound";
  }
  return "?";
}

namespace {

double eps(Dtype t) {
  switch (t) {
    case Dtype::fp64: return std::numeric_limits<double>::epsilon();  // 2^-52
    case Dtype::fp32: return std::numeric_limits<float>::epsilon();   // 2^-23
    case Dtype::fp16: return 0x1p-10;
    case Dtype::bf16: return 0x1p-7;
    case Dtype::fp8: return 0x1p-3;  // e4m3: 3 mantissa bits
  }
  return 1.0;
}

bool is_gradient(const std::string& tensor) { return !tensor.empty() && tensor[0] == 'd'; }
bool is_lse(const std::string& tensor) { return tensor == "LSE"; }

}  // namespace

double ulp_at(double m, Dtype storage) {
  if (!(m > 0) || !std::isfinite(m)) return 0;
  return eps(storage) * std::exp2(std::floor(std::log2(m)));
}

Dtype storage_of(const std::string& tensor, Dtype t) {
  if (is_lse(tensor)) return t == Dtype::fp64 ? Dtype::fp64 : Dtype::fp32;
  return output_dtype(t);  // fp8 writes O in bf16
}

// The baseline stores S and P in the dtype: a score of 5 carries 5 x eps/2 of absolute error into
// the softmax (2% of an output in bf16 at N = 4096 on the H200; 0.2% in fp16). Its tolerance is a
// sanity bound 4-6x above what it reaches, so that a broken baseline is caught and does not loosen
// the tiled kernels' bound.
// fp8 (e4m3 Q, K, V; kernels/attention.h): the reference reads the same quantised inputs, so what is
// left is P's rounding to e4m3 for P.V (3 mantissa bits: relative 2^-4 per term, so an output is off
// by up to 2^-4 sum_j P_j |V_j|, about 2^-4 M when one key dominates its row) and O's to bf16 (2^-8
// relative). Measured 1-4% of M (N = 128..4096): 2^-2 is 4x the worst single P rounding.
double tol_baseline(const std::string& tensor, Dtype t) {
  (void)tensor;
  switch (t) {
    case Dtype::fp64: return 1e-10;
    case Dtype::fp32: return 0x1p-10;  // ~1e-3
    case Dtype::fp16: return 0x1p-5;   // ~3%
    case Dtype::bf16: return 0x1p-3;   // 12.5%
    case Dtype::fp8: return 0x1p-2;
  }
  return 0;
}

// A tiled kernel keeps S in fp32 registers: in fp16/bf16 its error is the rounding of its outputs
// (and of P for P.V), about one ulp at M, so 4-8 ulps (2^-5 M in bf16, 2^-8 M in fp16) leaves
// margin while a missing 0.4% of the keys (16 of 4096) or a zeroed output fails. In fp32/fp64 its
// error is accumulation over seq_k terms: 2^-13 M in fp32 (5e-6 M measured at N = 4096, so room to
// N ~ 10^6), which a TF32 product (2^-11 relative per operand) does not meet.
// LSE is a log of a sum of fp32 exponentials: 2^-16 M in fp32 storage.
// fp8: a tiled kernel rounds P to e4m3 as naive does (2^-4 relative per term) but against its running
// max, and O to bf16: one P rounding at M, 2^-4 M, is what a lone dominant key can cost; averaged
// over many keys it is far less (measured 1-3% of M). LSE comes from the fp32 S: fp32's bound.
double tol_tiled(const std::string& tensor, Dtype t) {
  if (is_lse(tensor)) return t == Dtype::fp64 ? 1e-12 : 0x1p-16;
  switch (t) {
    case Dtype::fp64: return 1e-12;
    case Dtype::fp32: return 0x1p-13;
    case Dtype::fp16: return 0x1p-8;
    case Dtype::bf16: return 0x1p-5;
    case Dtype::fp8: return 0x1p-4;
  }
  return 0;
}

double floor_of(const std::string& tensor, Dtype t, double magnitude, int seq_k) {
  const Dtype acc = t == Dtype::fp64 ? Dtype::fp64 : Dtype::fp32;
  return kFloorUlps * ulp_at(magnitude, storage_of(tensor, t)) +
         eps(acc) * std::sqrt(double(std::max(seq_k, 1))) * magnitude;
}

double judged_scale(const std::string& tensor, double own, double dv_scale) {
  if ((tensor == "dQ" || tensor == "dK") && std::isfinite(dv_scale))
    return std::max(own, kCancelledGradientShare * dv_scale);
  return own;
}

double relative_factor(const std::string& tensor) { return is_gradient(tensor) ? 3.0 : 2.0; }

TensorBound tensor_bound(Rule rule, const std::string& tensor, Dtype t, double own_scale, double dv_scale,
                         double baseline_err, int seq_k) {
  TensorBound b;
  b.scale = judged_scale(tensor, own_scale, dv_scale);
  b.cancelled = b.scale > own_scale;
  b.rule = b.cancelled && rule == Rule::relative ? Rule::tiled_no_baseline : rule;
  b.bound = bound_for(b.rule, tensor, t, b.scale, baseline_err, seq_k);
  return b;
}

double bound_for(Rule rule, const std::string& tensor, Dtype t, double scale, double baseline_err,
                 int seq_k) {
  switch (rule) {
    case Rule::baseline: return tol_baseline(tensor, t) * scale;
    case Rule::relative: return relative_factor(tensor) * baseline_err + floor_of(tensor, t, scale, seq_k);
    case Rule::tiled_no_baseline: return tol_tiled(tensor, t) * scale;
  }
  return 0;
}

}  // namespace fb

// How the flash kernels compute with fp32 inputs (host and device code read it).
#pragma once

#include "attention.h"

namespace fb::cuda::flash {

enum class Fp32Math {
  // CUDA cores, every product and sum in fp32, accurate exp(): the reference-grade path.
  exact,
  // Tensor cores (mma.sync TF32, sm_80+) with each operand split into a TF32 high part and a TF32
  // remainder, products taken as hi*hi + hi*lo + lo*hi in fp32: fp32-level accuracy at 3 MMAs per
  // product. The default.
  tf32x3,
  // Tensor cores, operands rounded to TF32 once (hi*hi only): what plain TF32 math gives. A
  // diagnostic: it shows the error the split removes, and it is expected to fail the FP32 rule.
  tf32x1,
};

inline const char* to_string(Fp32Math m) {
  switch (m) {
    case Fp32Math::exact: return "exact";
    case Fp32Math::tf32x3: return "tf32x3";
    case Fp32Math::tf32x1: return "tf32x1";
  }
  return "unknown";
}

// Why `math` cannot apply to inputs of dtype t, or nullptr: the exact path has no 16-bit form, and
// 1xTF32 is an fp32 mode only.
inline const char* fp32_math_unsupported(Dtype t, Fp32Math math) {
  if (math == Fp32Math::exact && (t == Dtype::fp16 || t == Dtype::bf16))
    return "flash (exact): fp32 and fp64 only (fp16/bf16 have no exact CUDA-core path)";
  if (math == Fp32Math::tf32x1 && t != Dtype::fp32)
    return "flash (1xTF32): fp32 only (a diagnostic mode of the fp32 tensor-core kernel)";
  return nullptr;
}

// Whether inputs of dtype t run on TF32 tensor cores under `math`.
inline bool uses_tf32(Dtype t, Fp32Math math) { return t == Dtype::fp32 && math != Fp32Math::exact; }

}  // namespace fb::cuda::flash

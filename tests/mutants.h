// Deliberately wrong tiled kernels (test code only: never in the product's kernel list). Each one is
// a plain CPU FlashAttention (key tiles of 64, online softmax, S in the accumulator type, P rounded
// to the input dtype for P.V as tensor-core kernels do) with one bug planted. The `control` mutant
// has none: it must pass, so that a killed mutant is killed by its bug.
#pragma once

#include <string>
#include <vector>

#include "registry.h"

namespace fb::test {

enum class Bug {
  none,               // the control
  zero_output,        // O = 0
  skip_last_tile,     // the last key tile (64 keys) ignored
  skip_last_16,       // the last 16 keys ignored
  causal_plus_one,    // causal: query i also sees key i + 1
  causal_minus_one,   // causal: query i misses key i (row 0 sees nothing)
  no_rescale,         // online softmax: the accumulator is not rescaled when the row max grows
  scale_one_over_d,   // softmax scale 1/d instead of 1/sqrt(d)
  lse_base2,          // LSE as a base-2 log
  gqa_modulo,         // query head h reads K/V head h % kv_heads instead of h / (heads / kv_heads)
  no_rowsum_term,     // backward: D = rowsum(dO o O) taken as 0
  dkdv_other_head,    // backward: K/V head g's dK/dV written into head (g + 1) % kv_heads
};

struct Mutant {
  Bug bug;
  std::string name;      // "mutant-zero-output"
  bool backward_only;    // the bug lives in the backward (only bwd cases can show it)
  bool causal_only;      // the bug lives in the causal mask
  bool needs_gqa;        // the bug shows only with kv_heads < heads
};

const std::vector<Mutant>& mutants();  // every bug but `none`
Mutant control();

// A CPU descriptor (role tiled) running `m`.
Descriptor mutant_descriptor(const Mutant& m);

}  // namespace fb::test

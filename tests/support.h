// Helpers every test file uses the same way (CPU and GPU): a case from its axes, a built-in kernel by
// name, and the record of a run that went through (verify_case fills in its errors and verdict).
#pragma once

#include <string>

#include "case.h"
#include "catch.h"
#include "record.h"
#include "registry.h"

namespace fb::test {

// A case with seq_q query rows against seq_k keys (causal: bottom-right aligned).
inline Case make_case(int batch, int heads, int kv_heads, int seq_q, int seq_k, int dim, Dtype t, bool causal,
                      Pass pass) {
  Case c;
  c.batch = batch;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.seq_q = seq_q;
  c.seq_k = seq_k;
  c.head_dim = dim;
  c.dtype = t;
  c.causal = causal;
  c.pass = pass;
  return c;
}

inline const Descriptor& kernel(const char* name) {
  const Descriptor* k = find_kernel(name);
  REQUIRE(k != nullptr);
  return *k;
}

inline Record ok_record(const Case& c, const std::string& kernel_name) {
  Record r;
  r.c = c;
  r.kernel = kernel_name;
  return r;
}

}  // namespace fb::test

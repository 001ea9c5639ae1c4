// naive's entry points as fb::cuda::Ops (src/registry.cpp wraps them in descriptors): exact GEMMs
// (`naive`), and TF32 GEMMs for fp32 (the peer a framework user with TF32 allowed gets).
#include "common/ops.h"
#include "naive/naive.h"

namespace fb::cuda {

const Ops& naive_ops() {
  static const Ops ops{&naive::unsupported, &naive::workspace_bytes,
                       &checked<&naive::unsupported, &naive::forward, Pass::fwd>,
                       &checked<&naive::unsupported, &naive::backward, Pass::bwd>, nullptr};
  return ops;
}

const Ops& naive_tf32_ops() {
  static const Ops ops{&naive::unsupported_tf32, &naive::workspace_bytes,
                       &checked<&naive::unsupported_tf32, &naive::forward_tf32, Pass::fwd>,
                       &checked<&naive::unsupported_tf32, &naive::backward_tf32, Pass::bwd>, nullptr};
  return ops;
}

}  // namespace fb::cuda

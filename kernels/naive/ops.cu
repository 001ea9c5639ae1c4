// naive's entry points as one fb::cuda::Ops (src/registry.cpp wraps it in the `naive` descriptor).
#include "common/ops.h"
#include "naive/naive.h"

namespace fb::cuda {

const Ops& naive_ops() {
  static const Ops ops{&naive::unsupported, &naive::workspace_bytes,
                       &checked<&naive::unsupported, &naive::forward, Pass::fwd>,
                       &checked<&naive::unsupported, &naive::backward, Pass::bwd>, nullptr};
  return ops;
}

}  // namespace fb::cuda

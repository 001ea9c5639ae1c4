// The fp64 reference's entry points as one fb::cuda::Ops (the yardstick every kernel is judged by).
#include "common/ops.h"
#include "reference/reference.h"

namespace fb::cuda {

const Ops& reference_ops() {
  static const Ops ops{&reference::unsupported, &reference::workspace_bytes,
                       &checked<&reference::unsupported, &reference::forward, Pass::fwd>,
                       &checked<&reference::unsupported, &reference::backward, Pass::bwd>, nullptr};
  return ops;
}

}  // namespace fb::cuda

// cuDNN's fused attention as fb::cuda::Ops: forward and backward, untiled for the byte model (cuDNN
// does not say its tiles).
#include "common/ops.h"
#include "cudnn/cudnn_sdpa.h"

namespace fb::cuda {

const Ops& cudnn_ops() {
  static const Ops ops{&cudnn_sdpa::unsupported, &cudnn_sdpa::workspace_bytes,
                       &checked<&cudnn_sdpa::unsupported, &cudnn_sdpa::forward, Pass::fwd>,
                       &checked<&cudnn_sdpa::unsupported, &cudnn_sdpa::backward, Pass::bwd>, nullptr};
  return ops;
}

std::size_t cudnn_version() { return cudnn_sdpa::library_version(); }

}  // namespace fb::cuda

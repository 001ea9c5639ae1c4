// The Hopper flash kernels' entry points as one fb::cuda::Ops (the `flash-sm90` descriptor).
#include "common/ops.h"
#include "flash_sm90/flash_sm90.h"
#include "flash_sm90/flash_sm90_bwd.h"

namespace fb::cuda {
namespace {

int tile(Pass pass, const AttentionParams& p) {
  return pass == Pass::fwd ? flash_sm90::query_tile(p) : flash_sm90::backward_key_tile(p);
}

}  // namespace

const Ops& flash_sm90_ops() {
  static const Ops ops{&flash_sm90::unsupported, &flash_sm90::workspace_bytes,
                       &checked<&flash_sm90::unsupported, &flash_sm90::forward, Pass::fwd>,
                       &checked<&flash_sm90::unsupported, &flash_sm90::backward, Pass::bwd>, &tile};
  return ops;
}

}  // namespace fb::cuda

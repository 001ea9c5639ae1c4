// The Hopper flash kernels' entry points as one fb::cuda::Ops (the `flash-sm90` descriptor).
#include "common/ops.h"
#include "flash/flash.h"
#include "flash_sm90/flash_sm90.h"
#include "flash_sm90/flash_sm90_bwd.h"

namespace fb::cuda {
namespace {

int tile(Pass pass, const AttentionParams& p) {
  if (pass == Pass::fwd) return flash_sm90::query_tile(p);
  // fp32's backward is flash's (mma.sync 3xTF32): see flash_sm90::unsupported.
  return p.dtype == Dtype::fp32 ? flash::backward_key_tile(p) : flash_sm90::backward_key_tile(p);
}
int tile_tf32x1(Pass, const AttentionParams& p) { return flash_sm90::query_tile(p); }
void no_backward(const AttentionParams&, const Context&) {}

}  // namespace

const Ops& flash_sm90_ops() {
  static const Ops ops{&flash_sm90::unsupported, &flash_sm90::workspace_bytes,
                       &checked<&flash_sm90::unsupported, &flash_sm90::forward, Pass::fwd>,
                       &checked<&flash_sm90::unsupported, &flash_sm90::backward, Pass::bwd>, &tile};
  return ops;
}

const Ops& flash_sm90_tf32x1_ops() {
  // The backward entry is never reached: unsupported_tf32x1 refuses every pass but the forward.
  static const Ops ops{&flash_sm90::unsupported_tf32x1, &flash_sm90::workspace_bytes,
                       &checked<&flash_sm90::unsupported_tf32x1, &flash_sm90::forward_tf32x1, Pass::fwd>,
                       &checked<&flash_sm90::unsupported_tf32x1, &no_backward, Pass::bwd>,
                       &tile_tf32x1};
  return ops;
}

}  // namespace fb::cuda

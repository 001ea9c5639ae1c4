// The Hopper flash kernels' entry points as one fb::cuda::Ops (the `flash-sm90` descriptor).
#include "common/ops.h"
#include "flash_sm90/flash_sm90.h"
#include "flash_sm90/flash_sm90_bwd.h"
#include "flash_sm90/flash_sm90_tf32.h"

namespace fb::cuda {
namespace {

int fp32_backward_tile(const AttentionParams& p) {
  return p.head_dim == 64 || p.head_dim == 128 ? flash_sm90::tf32_backward_key_tile(p.head_dim) : 0;
}
int tile(Pass pass, const AttentionParams& p) {
  if (pass == Pass::fwd) return flash_sm90::query_tile(p);
  return p.dtype == Dtype::fp32 ? fp32_backward_tile(p) : flash_sm90::backward_key_tile(p);
}
int tile_tf32x1(Pass pass, const AttentionParams& p) {
  return pass == Pass::fwd ? flash_sm90::query_tile(p) : fp32_backward_tile(p);
}

}  // namespace

const Ops& flash_sm90_ops() {
  static const Ops ops{&flash_sm90::unsupported, &flash_sm90::workspace_bytes,
                       &checked<&flash_sm90::unsupported, &flash_sm90::forward, Pass::fwd>,
                       &checked<&flash_sm90::unsupported, &flash_sm90::backward, Pass::bwd>, &tile,
                       /*lse_optional=*/true};
  return ops;
}

const Ops& flash_sm90_tf32x1_ops() {
  static const Ops ops{&flash_sm90::unsupported_tf32x1, &flash_sm90::workspace_bytes,
                       &checked<&flash_sm90::unsupported_tf32x1, &flash_sm90::forward_tf32x1, Pass::fwd>,
                       &checked<&flash_sm90::unsupported_tf32x1, &flash_sm90::backward_tf32x1, Pass::bwd>,
                       &tile_tf32x1, /*lse_optional=*/true};
  return ops;
}

}  // namespace fb::cuda

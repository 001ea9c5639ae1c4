// The portable flash kernels' entry points as fb::cuda::Ops: the `flash` descriptor (fp32 as 3xTF32 on
// tensor cores), and the same kernels with the other fp32 modes (flash/fp32_math.h): the exact
// CUDA-core path and the 1xTF32 diagnostic.
#include "common/ops.h"
#include "flash/flash.h"

namespace fb::cuda {
namespace {

const char* unsupported(Pass pass, const AttentionParams& p) { return flash::unsupported(pass, p); }
std::size_t workspace(Pass pass, const AttentionParams& p) { return flash::workspace_bytes(pass, p); }
int tile(Pass pass, const AttentionParams& p) {
  return pass == Pass::fwd ? flash::query_tile(p) : flash::backward_key_tile(p);
}

template <flash::Fp32Math M> const char* unsupported_in(Pass pass, const AttentionParams& p) {
  return flash::unsupported(pass, p, M);
}
template <flash::Fp32Math M> void forward_in(const AttentionParams& p, const Context& ctx) {
  flash::forward(p, ctx, M);
}
template <flash::Fp32Math M> void backward_in(const AttentionParams& p, const Context& ctx) {
  flash::backward(p, ctx, M);
}
template <flash::Fp32Math M> int tile_in(Pass pass, const AttentionParams& p) {
  return pass == Pass::fwd ? flash::query_tile(p, M) : flash::backward_key_tile(p, M);
}
template <flash::Fp32Math M> const Ops& ops_in() {
  static const Ops ops{&unsupported_in<M>, &workspace,
                       &checked<&unsupported_in<M>, &forward_in<M>, Pass::fwd>,
                       &checked<&unsupported_in<M>, &backward_in<M>, Pass::bwd>, &tile_in<M>};
  return ops;
}

}  // namespace

const Ops& flash_exact_ops() { return ops_in<flash::Fp32Math::exact>(); }
const Ops& flash_tf32x1_ops() { return ops_in<flash::Fp32Math::tf32x1>(); }

const Ops& flash_ops() {
  static const Ops ops{&unsupported, &workspace, &checked<&unsupported, &flash::forward, Pass::fwd>,
                       &checked<&unsupported, &flash::backward, Pass::bwd>, &tile};
  return ops;
}

}  // namespace fb::cuda

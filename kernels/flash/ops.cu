// The portable flash kernels' entry points as one fb::cuda::Ops (the `flash` descriptor).
#include "common/ops.h"
#include "flash/flash.h"

namespace fb::cuda {
namespace {

const char* unsupported(Pass pass, const AttentionParams& p) { return flash::unsupported(pass, p); }
std::size_t workspace(Pass pass, const AttentionParams& p) { return flash::workspace_bytes(pass, p); }
int tile(Pass pass, const AttentionParams& p) {
  return pass == Pass::fwd ? flash::query_tile(p) : flash::backward_key_tile(p);
}

}  // namespace

const Ops& flash_ops() {
  static const Ops ops{&unsupported, &workspace, &checked<&unsupported, &flash::forward, Pass::fwd>,
                       &checked<&unsupported, &flash::backward, Pass::bwd>, &tile};
  return ops;
}

}  // namespace fb::cuda

// The split-KV decode kernel's entry points as fb::cuda::Ops (forward only).
#include "common/ops.h"
#include "flash_decode/flash_decode.h"

namespace fb::cuda {
namespace {

// The byte model's tile: keys per split (the KV range one CTA streams; stream-K: its range, at most
// the head's keys).
int tile(Pass, const AttentionParams& p) {
  const decode::StreamPlan sk = decode::stream_plan(p);
  if (sk.keys_per_cta > 0) return static_cast<int>(sk.keys_per_cta < p.seq_k ? sk.keys_per_cta : p.seq_k);
  return decode::plan(p).keys_per_split;
}

}  // namespace

const Ops& flash_decode_ops() {
  static const Ops ops{&decode::unsupported, &decode::workspace_bytes,
                       &checked<&decode::unsupported, &decode::forward, Pass::fwd>, nullptr, &tile};
  return ops;
}

}  // namespace fb::cuda

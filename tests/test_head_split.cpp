// The backwards' GQA/MQA head-split model (kernels/common/head_split.h): host code, so its choices are
// checked here without a GPU; the GPU tests ([bwd_gqa], [flash_split]) check the kernels at every split.

#include "catch.h"
#include "common/head_split.h"

namespace {

using namespace fb;
using fb::cuda::model_head_split;

AttentionParams shape(int batch, int heads, int kv_heads, int seq, bool causal) {
  AttentionParams p{};
  p.batch = batch;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.seq_q = seq;
  p.seq_k = seq;
  p.head_dim = 128;
  p.dtype = Dtype::bf16;
  p.causal = causal;
  return p;
}

}  // namespace

TEST_CASE("head split: causal MQA with few key tiles splits, MHA and GPU-filling shapes do not", "[head_split]") {
  constexpr int kSms = 132, kBlockN = 128, kBlockM = 64;
  // 8 query heads on 1 K/V head, 16k tokens: the issue-13 MQA rows (b16 N=1k, b4 N=4k, b1 N=16k).
  for (const auto& [batch, seq] : {std::pair{16, 1024}, std::pair{4, 4096}, std::pair{1, 16384}}) {
    const int split = model_head_split(shape(batch, 8, 1, seq, true), kSms, kBlockN, kBlockM);
    INFO("batch " << batch << " N " << seq << " split " << split);
    CHECK(split > 1);
    CHECK(8 % split == 0);
  }
  // MHA: nothing to split.
  CHECK(model_head_split(shape(1, 8, 8, 16384, true), kSms, kBlockN, kBlockM) == 1);
  // 32 q / 8 kv heads at N = 1024, batch 16: 8 key tiles x 128 planes fill the GPU many times over.
  CHECK(model_head_split(shape(16, 32, 8, 1024, true), kSms, kBlockN, kBlockM) == 1);
  // No device (sms = 0) or no tiles: no split.
  CHECK(model_head_split(shape(1, 8, 1, 16384, true), 0, kBlockN, kBlockM) == 1);
  CHECK(model_head_split(shape(1, 8, 1, 16384, true), kSms, 0, kBlockM) == 1);
}

TEST_CASE("head split: the split grows with the imbalance and never exceeds the cap or the group", "[head_split]") {
  constexpr int kSms = 132;
  // Causal MQA at batch 1: key tile j does the work of the rows below it; splitting evens it out.
  const int causal = model_head_split(shape(1, 32, 1, 16384, true), kSms, 128, 64);
  const int full = model_head_split(shape(1, 32, 1, 16384, false), kSms, 128, 64);
  CHECK(causal >= full);
  CHECK(causal <= 8);  // HeadSplitModel::max_split
  cuda::HeadSplitModel capped;
  capped.max_split = 2;
  CHECK(model_head_split(shape(1, 32, 1, 16384, true), kSms, 128, 64, capped) <= 2);
  // A group of 3 can only split into 3 (or not at all).
  const int three = model_head_split(shape(1, 3, 1, 16384, true), kSms, 128, 64);
  CHECK((three == 1 || three == 3));
}

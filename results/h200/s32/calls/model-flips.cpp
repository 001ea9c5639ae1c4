// Session 32 (issue 13): where HeadSplitModel::unsplit_tail_share changes the d = 64 non-causal head split's choice on
// 132 SMs (model only, no GPU): batch 1-8, 1-8 kv heads, groups 2-8, N 1k-8k, bf16. Writes model-flips.json.
//   g++ -std=c++17 -O1 -I kernels results/h200/s32/calls/model-flips.cpp -o /tmp/model-flips && /tmp/model-flips
#include <cstdio>

#include "common/head_split.h"

int main() {
  using namespace fb;
  using namespace fb::cuda;
  int shapes = 0, flips = 0;
  std::printf("{\n  \"sms\": 132,\n  \"block_n\": 128,\n  \"block_m\": 128,\n  \"flips\": [\n");
  for (int b : {1, 2, 3, 4, 6, 8})
    for (int kv : {1, 2, 4, 8})
      for (int g : {2, 4, 6, 8})
        for (int n : {1024, 1536, 2000, 2600, 3000, 4096, 5000, 6000, 8192}) {
          AttentionParams p{};
          p.batch = b;
          p.heads = kv * g;
          p.kv_heads = kv;
          p.seq_q = p.seq_k = n;
          p.head_dim = 64;
          p.dtype = Dtype::bf16;
          HeadSplitModel m;
          m.near_best = 0.0;
          const int before = model_head_split(p, 132, 128, 128, m);
          m.unsplit_tail_share = true;
          const int after = model_head_split(p, 132, 128, 128, m);
          ++shapes;
          if (before != after) {
            std::printf("%s    {\"batch\": %d, \"heads\": %d, \"kv_heads\": %d, \"seq\": %d, \"before\": %d, \"after\": %d}",
                        flips > 0 ? ",\n" : "", b, kv * g, kv, n, before, after);
            ++flips;
          }
        }
  std::printf("\n  ],\n  \"shapes\": %d,\n  \"flipped\": %d\n}\n", shapes, flips);
}

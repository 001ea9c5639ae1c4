// Session 40 (issue 13): non-causal d = 128 GQA grids of less than one wave that flash-sm90's head split (its model,
// common/head_split.h, as head_split() sets it for non-causal passes: 128-key, 64-query tiles, 132 SMs, the whole group
// as the cap, near_best 0, the 5% bar, the query tail in the unsplit time) splits, and the probe `subq` (the sub-wave
// query tail in the unsplit time as well) leaves whole. Not built by CMake:
//   g++ -std=c++17 -O2 -I kernels results/h200/s40/calls/subq_model.cpp -o subq_model
//   ./subq_model B H KV N            one shape: the default's split and subq's
//   ./subq_model draw SEED COUNT     shapes where they differ
//   ./subq_model same SEED COUNT     sub-wave shapes where they agree (controls)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include "common/head_split.h"
using namespace fb; using namespace fb::cuda;
const int SMS = 132;
int choice(int b, int h, int kv, int n, bool subq) {
  AttentionParams p{}; p.batch = b; p.heads = h; p.kv_heads = kv; p.seq_q = p.seq_k = n; p.head_dim = 128;
  p.causal = false; p.dtype = Dtype::bf16;
  HeadSplitModel m; m.max_split = std::max(h / kv, m.max_split); m.near_best = 0.0; m.unsplit_query_tail = true;
  if (subq) m.unsplit_subwave_min_gain = 0.05;
  return model_head_split(p, SMS, 128, 64, m);
}
int main(int argc, char** argv) {
  if (argc >= 4 && (std::string(argv[1]) == "draw" || std::string(argv[1]) == "same")) {
    const bool differ = std::string(argv[1]) == "draw";
    std::mt19937 rng(atoi(argv[2])); const int want = atoi(argv[3]); int got = 0;
    const int hs[] = {8, 10, 12, 16, 20, 24, 28, 32, 40, 48, 64};
    for (int tries = 0; got < want && tries < 1000000; ++tries) {
      const int h = hs[rng() % 11]; std::vector<int> dv;
      for (int k = 1; k < h; ++k) if (h % k == 0 && h / k >= 2) dv.push_back(k);
      const int kv = dv[rng() % dv.size()], b = 1 + rng() % 8, n = 500 + int(rng() % 96) * 100; const bool f16 = rng() % 2;
      const long long tiles = (long long)((n + 127) / 128) * b * kv;
      if (tiles >= SMS || double(b) * h * n * n < 3e8) continue;  // under one wave; at least ~0.1 ms
      const int d = choice(b, h, kv, n, false), s = choice(b, h, kv, n, true);
      if (differ != (d != s)) continue;
      std::printf("%d %d %d %d %s tiles %lld | default %d subq %d\n", b, h, kv, n, f16 ? "fp16" : "bf16", tiles, d, s);
      ++got;
    }
    return 0;
  }
  if (argc >= 5) { const int b = atoi(argv[1]), h = atoi(argv[2]), kv = atoi(argv[3]), n = atoi(argv[4]);
    std::printf("default %d subq %d\n", choice(b, h, kv, n, false), choice(b, h, kv, n, true)); return 0; }
  std::fprintf(stderr, "usage: subq_model B H KV N | subq_model draw SEED COUNT | subq_model same SEED COUNT\n"); return 2;
}

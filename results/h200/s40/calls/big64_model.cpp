// Session 40 (issue 13): causal d = 64 GQA grids of groups >= 8 that flash-sm90's head split leaves whole (its model,
// common/head_split.h, at the d = 64 kernels' 128-key, 128-query tiles, 132 SMs, 5% bar, gate of 8 blocks an SM), and
// the subsets the probe `big64` takes there (split_key_tail()'s most subsets: <= group / 2, <= 8, units of >= 12
// 64-query steps a key tile; the probe `long64`, its successor: >= 48). Not built by CMake:
//   g++ -std=c++17 -O2 -I kernels results/h200/s40/calls/big64_model.cpp -o big64_model
//   ./big64_model B H KV N [STEPS]         one shape: the model's split and big64's (long64's: STEPS 48)
//   ./big64_model draw SEED COUNT [STEPS]  shapes the default leaves whole and big64 (long64) splits
//   ./big64_model drawshort SEED COUNT     shapes the default leaves whole, big64 splits and long64 does not
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include "common/head_split.h"
using namespace fb; using namespace fb::cuda;
const int SMS = 132;
AttentionParams shape(int b, int h, int kv, int n) {
  AttentionParams p{}; p.batch = b; p.heads = h; p.kv_heads = kv; p.seq_q = p.seq_k = n; p.head_dim = 64;
  p.causal = true; p.dtype = Dtype::bf16; return p;
}
int model_split(const AttentionParams& p) { HeadSplitModel m; return model_head_split(p, SMS, 128, 128, m); }
int big64(const AttentionParams& p, int min_steps = 12) {
  const int group = p.heads / p.kv_heads, n = p.seq_k; const long long kt = (n + 127) / 128;
  const CausalMask mask = p.mask(); const int tiles = (n + 63) / 64; long long rows = 0;
  for (int n0 = 0; n0 < n; n0 += 128) rows += (long long)(tiles - mask.first_q_tile(n0, 64)) * 64;
  for (int s = std::min(group / 2, 8); s > 1; --s) if (group % s == 0 && rows / 64 * (group / s) >= min_steps * kt) return s;
  return 1;
}
int main(int argc, char** argv) {
  if (argc >= 4 && (std::string(argv[1]) == "draw" || std::string(argv[1]) == "drawshort")) {
    std::mt19937 rng(atoi(argv[2])); const int want = atoi(argv[3]); int got = 0;
    const bool short_units = std::string(argv[1]) == "drawshort"; const int min_steps = argc > 4 ? atoi(argv[4]) : 12;
    const int hs[] = {8, 10, 12, 16, 20, 24, 28, 32, 40, 48, 64};
    for (int tries = 0; got < want && tries < 1000000; ++tries) {
      const int h = hs[rng() % 11]; std::vector<int> dv;
      for (int k = 1; k < h; ++k) if (h % k == 0 && h / k >= 8) dv.push_back(k);
      if (dv.empty()) continue;
      const int kv = dv[rng() % dv.size()], b = 1 + rng() % 8, n = 1000 + int(rng() % 151) * 100; const bool f16 = rng() % 2;
      if (double(b) * h * n * n > 6e9) continue;  // the call's time, the verification's memory
      const AttentionParams p = shape(b, h, kv, n);
      if (model_split(p) > 1) continue;
      const int s = short_units ? big64(p) : big64(p, min_steps); if (s <= 1) continue;
      if (short_units && big64(p, 48) > 1) continue;
      std::printf("%d %d %d %d %s blocks %lld | big64 %d\n", b, h, kv, n, f16 ? "fp16" : "bf16",
                  (long long)((n + 127) / 128) * b * kv, s);
      ++got;
    }
    return 0;
  }
  if (argc >= 5) { const AttentionParams p = shape(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    std::printf("model %d big64 %d\n", model_split(p), big64(p, argc > 5 ? atoi(argv[5]) : 12)); return 0; }
  std::fprintf(stderr, "usage: big64_model B H KV N [STEPS] | big64_model draw SEED COUNT [STEPS] | big64_model drawshort SEED COUNT\n"); return 2;
}

// Session 40 (issue 13): which causal d = 128 GQA grids flash-sm90's default (session 40: the 0.5% bar for groups >= 8,
// big8) splits into units of >= 2 heads where one-head units (FB_SM90_BWD128=unit1h, the choice before session 15's
// call D) would take more subsets; s39's causal_split_model.cpp's eval() is the model. Not built by CMake:
//   g++ -std=c++17 -O2 -I kernels results/h200/s40/calls/unit1_model.cpp -o unit1_model
//   ./unit1_model SEED COUNT NLO NHI   shapes of N in [NLO, NHI] where the two choices differ
#define main causal_split_model_main
#include "../../s39/calls/causal_split_model.cpp"
#undef main
// The subsets split_key_tail() takes from `floor` up: the most divisors of the group up to `most` whose units are long
// enough (>= 12 query-tile steps a key tile, 64-query tiles as the model's).
int most_subsets(int group, int n, int most, int floor) {
  AttentionParams p{}; p.seq_q = p.seq_k = n; p.causal = true; p.head_dim = 128; p.batch = 1; p.heads = group; p.kv_heads = 1;
  const CausalMask mask = p.mask(); const int tiles = (n + BM - 1) / BM; const long long kt = (n + BN - 1) / BN;
  long long rows = 0; for (int n0 = 0; n0 < n; n0 += BN) rows += (long long)(tiles - mask.first_q_tile(n0, BM)) * BM;
  for (int s = most; s > floor; --s) if (group % s == 0 && rows / BM * (group / s) >= 12 * kt) return s;
  return floor;
}
int main(int argc, char** argv) {
  if (argc < 5) { std::fprintf(stderr, "usage: unit1_model SEED COUNT NLO NHI\n"); return 2; }
  std::mt19937 rng(atoi(argv[1])); const int want = atoi(argv[2]), nlo = atoi(argv[3]), nhi = atoi(argv[4]);
  const int hs[] = {8, 12, 16, 24, 32, 40, 48, 64};
  for (int tries = 0, got = 0; got < want && tries < 1000000; ++tries) {
    const int h = hs[rng() % 8]; std::vector<int> dv;
    for (int k = 1; k < h; ++k) if (h % k == 0 && (h / k == 4 || h / k == 6 || h / k == 8)) dv.push_back(k);
    if (dv.empty()) continue;
    const int kv = dv[rng() % dv.size()], group = h / kv, b = 1 + rng() % 8;
    const int n = nlo + int(rng() % ((nhi - nlo) / 100 + 1)) * 100; const bool f16 = rng() % 2;
    if (double(b) * h * n * n > 6e9) continue;
    const Out o = eval(b, h, kv, n, group >= 8 ? 0.005 : 0.05, false);
    int split = o.def;
    if (split == 1 && group >= 8) split = most_subsets(group, n, group / 2, 1);  // big8
    if (split == 1) continue;
    const int one = most_subsets(group, n, std::min(group, 8), split);
    if (one == split) continue;
    std::printf("%d %d %d %d %s blocks %d | default %d unit1h %d\n", b, h, kv, n, f16 ? "fp16" : "bf16", o.blocks, split, one);
    ++got;
  }
  return 0;
}

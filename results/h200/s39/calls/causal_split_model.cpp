// Session 39 (issue 13): flash-sm90's causal d = 128 GQA head split as its host code models it (common/head_split.h:
// causal_key_tile_costs(), ListSchedule; 128-key tiles, 64 queries a step, unit overhead 4, 132 SMs), every divisor of
// the group up to 8 with its modelled time against the unsplit grid's, and the split the default takes (min_gain 5%,
// near_best 5%, then split_key_tail()'s most subsets of units >= 12 steps a key tile, at most group / 2). Not built by
// CMake:
//   g++ -std=c++17 -O2 -I kernels results/h200/s39/calls/causal_split_model.cpp -o causal_split_model
//   ./causal_split_model B H KV N [MIN_GAIN]      one shape
//   ./causal_split_model draw SEED COUNT LO HI      shapes whose best split models LO..HI faster than the unsplit grid
//   ./causal_split_model draw8 SEED COUNT          call C's: groups of >= 8 query heads that the probe `causal8` (bar 0.5%)
//                                                  splits and the default (bar 5%) does not
//   ./causal_split_model drawbig SEED COUNT        call F's: groups of >= 8 query heads that the default since call C
//                                                  (bar 0.5%, the gate of 8 blocks an SM) leaves whole (probe `big8`)
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include "common/head_split.h"
using namespace fb; using namespace fb::cuda;
const int SMS = 132, BN = 128, BM = 64;
struct Out { int blocks; double unsplit; int best_s; double best_t; int def; };
Out eval(int b, int h, int kv, int n, double min_gain, bool print) {
  AttentionParams p{}; p.batch = b; p.heads = h; p.kv_heads = kv; p.seq_q = n; p.seq_k = n; p.head_dim = 128;
  p.causal = true; p.dtype = Dtype::bf16;
  const int group = h / kv; const long long kt = (n + BN - 1) / BN, planes = (long long)b * kv;
  const std::vector<double> per_head = causal_key_tile_costs(p, BN, BM, 1, 0.0);
  auto makespan = [&](int split) { ListSchedule s(SMS);
    for (long long j = 0; j < kt; ++j) for (long long u = 0; u < planes * split; ++u) s.place(per_head[j] * (group / split) + 4.0);
    return s.end(); };
  Out o{int(kt * planes), makespan(1), 1, 0, 1}; o.best_t = o.unsplit;
  for (int s = 2; s <= std::min(group, 8); ++s) if (group % s == 0) { double t = makespan(s);
    if (print) std::printf("  split %d: %.0f (%.3fx)\n", s, t, o.unsplit / t);
    if (t < o.best_t) { o.best_t = t; o.best_s = s; } }
  HeadSplitModel m; m.min_gain = min_gain;
  o.def = model_head_split(p, SMS, BN, BM, m);
  if (o.def > 1) {  // split_key_tail(): the most subsets (<= group / 2 for groups >= 4) of long enough units
    long long rows = 0; const CausalMask mask = p.mask(); const int tiles = (n + BM - 1) / BM;
    for (int n0 = 0; n0 < n; n0 += BN) rows += (long long)(tiles - mask.first_q_tile(n0, BM)) * BM;
    const int most = group >= 4 ? std::min(group / 2, 8) : std::min(group, 8);
    for (int s = most; s > o.def; --s) if (group % s == 0 && rows / BM * (group / s) >= 12 * kt) { o.def = s; break; }
  }
  return o;
}
int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "drawbig") {
    std::mt19937 rng(atoi(argv[2])); int want = atoi(argv[3]), got = 0;
    int hs[] = {8,10,12,16,20,24,28,32,40,48,64};
    for (int tries = 0; got < want && tries < 1000000; ++tries) {
      int h = hs[rng() % 11]; std::vector<int> dv; for (int k = 1; k < h; ++k) if (h % k == 0 && h / k >= 8) dv.push_back(k);
      if (dv.empty()) continue;
      int kv = dv[rng() % dv.size()]; int b = 1 + rng() % 8; int n = 1000 + (rng() % 151) * 100; bool f16 = rng() % 2;
      if (double(b) * h * n * n > 6e9) continue;
      Out z = eval(b, h, kv, n, 0.005, false); if (z.def > 1) continue;
      std::printf("%d %d %d %d %s blocks %d | best split %d model %.3f\n", b, h, kv, n, f16 ? "fp16" : "bf16", z.blocks,
                  z.best_s, z.unsplit / z.best_t); ++got; }
    return 0; }
  if (argc >= 4 && std::string(argv[1]) == "draw8") {
    std::mt19937 rng(atoi(argv[2])); int want = atoi(argv[3]), got = 0;
    int hs[] = {8,10,12,16,20,24,28,32,40,48,64};
    for (int tries = 0; got < want && tries < 1000000; ++tries) {
      int h = hs[rng() % 11]; std::vector<int> dv; for (int k = 1; k < h; ++k) if (h % k == 0 && h / k >= 8) dv.push_back(k);
      if (dv.empty()) continue;
      int kv = dv[rng() % dv.size()]; int b = 1 + rng() % 4; int n = 1000 + (rng() % 151) * 100; bool f16 = rng() % 2;
      if (double(b) * h * n * n > 6e9) continue;  // at most ~ a 10 ms backward, for the call's time
      Out o = eval(b, h, kv, n, 0.05, false); if (o.blocks >= 8 * SMS || o.def > 1) continue;
      Out z = eval(b, h, kv, n, 0.005, false); if (z.def <= 1) continue;
      std::printf("%d %d %d %d %s blocks %d | best split %d model %.3f | causal8 %d\n", b, h, kv, n, f16 ? "fp16" : "bf16",
                  o.blocks, o.best_s, o.unsplit / o.best_t, z.def); ++got; }
    return 0; }
  if (argc >= 6 && std::string(argv[1]) == "draw") {
    std::mt19937 rng(atoi(argv[2])); int want = atoi(argv[3]), got = 0; double lo = atof(argv[4]), hi = atof(argv[5]);
    int hs[] = {8,10,12,16,20,24,28,32,40,48,64};
    for (int tries = 0; got < want && tries < 1000000; ++tries) {
      int h = hs[rng() % 11]; std::vector<int> dv; for (int k = 1; k < h; ++k) if (h % k == 0 && h / k >= 2) dv.push_back(k);
      int kv = dv[rng() % dv.size()]; int b = 1 + rng() % 4; int n = 1000 + (rng() % 151) * 100; bool f16 = rng() % 2;
      Out o = eval(b, h, kv, n, 0.05, false); double g = o.unsplit / o.best_t;
      if (o.blocks >= 8 * SMS || g < lo || g > hi) continue;
      std::printf("%d %d %d %d %s blocks %d | best split %d model %.3f | default %d\n", b, h, kv, n, f16 ? "fp16" : "bf16",
                  o.blocks, o.best_s, g, o.def); ++got; }
    return 0; }
  if (argc >= 5) { double mg = argc > 5 ? atof(argv[5]) : 0.05; Out o = eval(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), mg, true);
    std::printf("blocks %d unsplit %.0f | best split %d (%.3fx) | default (min_gain %.3f) %d\n", o.blocks, o.unsplit, o.best_s, o.unsplit / o.best_t, mg, o.def); return 0; }
  std::fprintf(stderr, "usage: causal_split_model B H KV N [MIN_GAIN] | causal_split_model draw SEED COUNT LO HI\n"); return 2;
}

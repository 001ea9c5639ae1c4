// Session 38 (issue 13): the tail split on grids of less than one wave, modelled offline as the kernels' host code has it
// (common/head_split.h: model_head_split() for the head split each backward would pick, model_tail_split_choice() for
// the tail's units: flash's cut the walk anywhere, flash-sm90's take whole query tiles of every head, 80-query steps
// where q80_kernel()'s non-causal rule picks them), d = 128 non-causal, 132 SMs, 128-key tiles. Not built by CMake:
//   g++ -std=c++17 -O2 -I kernels results/h200/s38/calls/subwave_model.cpp -o subwave_model
//   ./subwave_model B H KV N 128 [SEQ_K]   one shape (MIN_GAIN90=0.05: flash-sm90 as the probe `subwave`)
//   ./subwave_model draw SEED COUNT   call B's draw (seed 3810, 10);   ./subwave_model draw90 SEED COUNT   call C's (3820, 8)
//   ./subwave_model draw64 SEED COUNT   session 39's d = 64 draw for the probe `subwave64` (3900, 10)
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include "common/head_split.h"
using namespace fb; using namespace fb::cuda;
const int SMS = 132;
double g_min_gain90 = 0.01;  // flash-sm90's min_gain on grids of less than one wave (call C's probe `subwave`: 0.05)
struct Out { int nb, hs_f, S_f; double g_f; int hs_s, S_s; double g_s; };
Out eval(int b, int h, int kv, int n, int d, int nk = 0) { if (!nk) nk = n;
  AttentionParams p{}; p.batch=b; p.heads=h; p.kv_heads=kv; p.seq_q=n; p.seq_k=nk; p.head_dim=d; p.causal=false; p.dtype=Dtype::bf16;
  int group = h / kv; Out o{};
  long long nb = (long long)((nk + 127) / 128) * b * kv; o.nb = int(nb);
  // flash
  { int bm = d == 128 ? 64 : 128; HeadSplitModel m; m.max_split = std::max(group, 8); m.unsplit_plane_major = true;
    o.hs_f = group > 1 ? model_head_split(p, SMS, 128, bm, m) : 1;
    int qt = (n + bm - 1) / bm; o.S_f = 1; o.g_f = 1;
    if (o.hs_f == 1 && nb < SMS) { auto c = model_tail_split_choice(nb, SMS, qt, group); o.S_f = c.splits; o.g_f = (qt*double(group)+4)/c.time; } }
  // sm90 (64-query steps assumed)
  { int bm = 64; HeadSplitModel m; m.max_split = std::max(group, 8); m.near_best = 0; m.unsplit_query_tail = (d == 128);
    o.hs_s = group > 1 ? model_head_split(p, SMS, 128, bm, m) : 1;
    o.S_s = 1; o.g_s = 1;
    int r64 = (n + 63) / 64 * 64; int r80 = (n + 79) / 80 * 80; bool q80 = r80 <= 1.03 * r64; int bq = q80 ? 80 : 64; int qt2 = (n + bq - 1) / bq;
    if (d == 128 && o.hs_s == 1 && nb < SMS) { TailSplitModel tm; tm.whole_tiles = true; tm.min_gain = g_min_gain90; auto c = model_tail_split_choice(nb, SMS, qt2, group, tm); o.S_s = c.splits; o.g_s = (qt2*double(group)+4)/c.time; } }
  return o;
}
// Call B's shapes: d = 128 non-causal, batch 1-4, 4-64 query heads, any divisor as K/V heads, N 1000-13000 (MHA only
// above 4096, where flash has no kDescend walk), kept where either kernel's model splits a grid of less than one wave.
int draw(unsigned seed, int want) {
  std::mt19937 rng(seed); int got = 0;
  int hs[] = {4,6,8,10,12,16,20,24,28,32,40,48,64};
  while (got < want) { int h = hs[rng()%13]; std::vector<int> dv; for (int k=1;k<=h;++k) if (h%k==0) dv.push_back(k);
    int kv = dv[rng()%dv.size()]; int b = 1 + rng()%4; int n = 1000 + (rng()%121)*100; bool f16 = rng()%2;
    if (kv == h && n <= 4096) continue;
    Out o = eval(b,h,kv,n,128); if (o.nb >= SMS) continue; if (o.S_f <= 1 && o.S_s <= 1) continue;
    std::printf("%d %d %d %d %s blocks %d | flash split %d S %d model %.3f | sm90 split %d S %d model %.3f\n", b,h,kv,n,f16?"fp16":"bf16",o.nb,o.hs_f,o.S_f,o.g_f,o.hs_s,o.S_s,o.g_s); ++got; }
  return 0;
}
// Call C's shapes (seed 3820): as draw(), kept where flash-sm90's model splits with min_gain 0.05 (the probe `subwave`).
int draw90(unsigned seed, int want) {
  g_min_gain90 = 0.05;
  std::mt19937 rng(seed); int got = 0;
  int hs[] = {4,6,8,10,12,16,20,24,28,32,40,48,64};
  while (got < want) { int h = hs[rng()%13]; std::vector<int> dv; for (int k=1;k<=h;++k) if (h%k==0) dv.push_back(k);
    int kv = dv[rng()%dv.size()]; int b = 1 + rng()%4; int n = 1000 + (rng()%121)*100; bool f16 = rng()%2;
    Out o = eval(b,h,kv,n,128); if (o.nb >= SMS || o.S_s <= 1) continue;
    std::printf("%d %d %d %d %s blocks %d | sm90 split %d S %d model %.3f\n", b,h,kv,n,f16?"fp16":"bf16",o.nb,o.hs_s,o.S_s,o.g_s); ++got; }
  return 0;
}
// Session 39's shapes for the probe `subwave64` (seed 3900): d = 64 non-causal, batch 1-4, 4-64 query heads, any divisor
// as K/V heads, N 1000-13000, kept where flash's model splits a grid of less than one wave (128 queries a step).
int draw64(unsigned seed, int want) {
  std::mt19937 rng(seed); int got = 0;
  int hs[] = {4,6,8,10,12,16,20,24,28,32,40,48,64};
  while (got < want) { int h = hs[rng()%13]; std::vector<int> dv; for (int k=1;k<=h;++k) if (h%k==0) dv.push_back(k);
    int kv = dv[rng()%dv.size()]; int b = 1 + rng()%4; int n = 1000 + (rng()%121)*100; bool f16 = rng()%2;
    Out o = eval(b,h,kv,n,64); if (o.nb >= SMS || o.S_f <= 1) continue;
    std::printf("%d %d %d %d %s blocks %d | flash split %d S %d model %.3f\n", b,h,kv,n,f16?"fp16":"bf16",o.nb,o.hs_f,o.S_f,o.g_f); ++got; }
  return 0;
}
int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "draw") return draw(atoi(argv[2]), atoi(argv[3]));
  if (argc >= 4 && std::string(argv[1]) == "draw64") return draw64(atoi(argv[2]), atoi(argv[3]));
  if (argc >= 4 && std::string(argv[1]) == "draw90") return draw90(atoi(argv[2]), atoi(argv[3]));
  if (const char* g = std::getenv("MIN_GAIN90")) g_min_gain90 = std::atof(g);
  if (argc >= 6) { Out o = eval(atoi(argv[1]),atoi(argv[2]),atoi(argv[3]),atoi(argv[4]),atoi(argv[5]), argc>6?atoi(argv[6]):0);
    printf("blocks %d | flash split %d tail S %d model %.3f | sm90 split %d tail S %d model %.3f\n", o.nb, o.hs_f, o.S_f, o.g_f, o.hs_s, o.S_s, o.g_s); return 0; }
  std::fprintf(stderr, "usage: subwave_model B H KV N 128 [SEQ_K] | subwave_model draw|draw64|draw90 SEED COUNT\n");
  return 2;
}

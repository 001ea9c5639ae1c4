// The known-order MMA chain probe (issue 15; docs/perf-notes.md, flash-sm90 fp32 backward, "Session 19 ... prepared
// for session 20"). Session 19's cuBLAS probe measured fp16's accumulation 6.9x worse than TF32's, but cuBLAS's K
// order is its own (its TF32 kernel looked split-K). Here one warp per tile runs mma.sync chains whose order the
// program fixes (tests/mma_order_probe.cu), and the host replays exactly that order under three accumulator models
// (products exact, then after every MMA: rn = fp32 nearest, rz = toward zero, tr = every addend first truncated to
// the fp32 ulp of the step's largest addend, then toward zero; scripts/fp32_split_study.py's models), so that:
//   1. 1xFP16 / 1xTF32 chains (inputs in the format, positive and mixed signs): which model the hardware equals bit
//      for bit, and where its error lies between rz and tr: does fp16 keep fewer bits per MMA than TF32?
//   2. the split GEMMs built from those MMAs with hi * hi and the cross terms in separate accumulators: 3xTF32
//      (hi = tf32_rna(x), lo = tf32_rna(x - hi)) and 3xFP16 (power-of-two scale s per block, hi = fp16(x s),
//      lo = fp16((x s - hi) 2^11)), per tile (sums of `chunk` along K start fresh, joined in fp32: the kernel's
//      habit) and chained (one sum over all K, one scale per operand): is 3xFP16's max error within 2x of 3xTF32's?
// Errors are in fp32 ulps of sum |a||b| (the sum's own scale) against a long-double reference.
//   flashbench_mma_probe [--check] [--models-only] [--emulate-hw R16,R32] [--seed N] [--tiles N] [--kmax N]
//                        [--chunk N] [--budget SECONDS] [--json FILE]
// --check: the fragment layouts on small integers (every sum exact): exit 0 / 1. No CUDA device: exit 77 (ctest:
// skipped), except with --models-only (the models alone, no hardware columns: the prediction's numbers) or
// --emulate-hw (the models standing in for the hardware, e.g. tr,rz: a dry run of the tables; says EMULATED).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/numeric.h"
#include "mma_order_probe.h"

namespace {

using fb::test::kMmaCols;
using fb::test::kMmaRows;
using fb::test::MmaChainProblem;
using fb::test::MmaFormat;
using fb::test::MmaInstr;
using Vec = std::vector<float>;
using json = nlohmann::json;

constexpr double kEps32 = 0x1p-23;       // fp32 ulp of 1
constexpr double kLoShift = 0x1p11;      // fp16 residual shifted into fp16's normal range (Ootomo & Yokota 2022)
constexpr int kScaleTop = 14;            // a scaled block's max lies in [2^14, 2^15): fp16's max is 65504

// ---- rounding ----
float rz32(long double s) {
  float r = static_cast<float>(s);
  if (std::fabs(static_cast<long double>(r)) > std::fabs(s)) r = std::nextafter(r, 0.0f);
  return r;
}
float tf32_rna(float x) {  // cvt.rna.tf32.f32: nearest, ties away (the kernels' split)
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &u, 4);
  return x;
}
float fp16_rn(double x) {  // cvt.rn.f16.f32 of fp32(x): nearest even, subnormals kept, overflow to inf
  return fb::cpu::half_bits_to_float(fb::cpu::float_to_half_bits(static_cast<float>(x)));
}

// ---- the accumulator models, replaying the device's order ----
enum class Rounding { rn, rz, tr };
// A model: the rounding after every `group` products (the instruction's k, or half of it: were the hardware to
// add a k16 fp16 MMA as two k8 halves, the half models would match it bit for bit).
struct Model {
  Rounding r;
  bool half;
  std::string name(MmaFormat f) const {
    const char* n = r == Rounding::rn ? "rn" : r == Rounding::rz ? "rz" : "tr";
    return half ? std::string(n) + std::to_string(fb::test::mma_k_step(f) / 2) : n;
  }
};
// The split GEMMs use the first three; the one-chain probe all five.
const Model kModels[] = {{Rounding::rn, false}, {Rounding::rz, false}, {Rounding::tr, false},
                         {Rounding::rz, true}, {Rounding::tr, true}};
constexpr int kSplitModels = 3, kAllModels = 5;

// acc (an fp32 value) after adding the exact products p[0..n) in one rounding step.
float model_step(float acc, const double* p, int n, Rounding m) {
  long double s = acc;
  if (m == Rounding::tr) {
    double big = std::fabs(static_cast<double>(acc));
    for (int i = 0; i < n; ++i) big = std::max(big, std::fabs(p[i]));
    if (big == 0) return acc;
    int e;
    std::frexp(big, &e);
    const double ulp = std::ldexp(1.0, e - 1 - 23);
    for (int i = 0; i < n; ++i) s += std::trunc(p[i] / ulp) * ulp;
    return rz32(s);
  }
  for (int i = 0; i < n; ++i) s += p[i];
  return m == Rounding::rn ? static_cast<float>(s) : rz32(s);
}

// The device's loop (tests/mma_order_probe.cu) for tile t under model m: out[t][chunk][16][8].
void replay_tile(const MmaChainProblem& pr, int t, Model m, float* out) {
  const int step = fb::test::mma_k_step(pr.fmt), nch = pr.k / pr.chunk, group = m.half ? step / 2 : step;
  const std::size_t at = std::size_t(kMmaRows) * pr.k, bt = std::size_t(kMmaCols) * pr.k;
  double p[16];
  for (int r = 0; r < kMmaRows; ++r)
    for (int n = 0; n < kMmaCols; ++n) {
      float acc = 0.f;
      for (int k0 = 0; k0 < pr.k; k0 += step) {
        for (int term = 0; term < pr.terms; ++term) {
          const float* a = pr.a + (std::size_t(term) * pr.tiles + t) * at + std::size_t(r) * pr.k + k0;
          const float* b = pr.b + (std::size_t(term) * pr.tiles + t) * bt + std::size_t(n) * pr.k + k0;
          for (int i = 0; i < step; ++i) p[i] = double(a[i]) * double(b[i]);  // exact: <= 22 significant bits
          for (int i = 0; i < step; i += group) acc = model_step(acc, p + i, group, m.r);
        }
        if ((k0 + step) % pr.chunk == 0) {
          out[((std::size_t(t) * nch + (k0 + step) / pr.chunk - 1) * kMmaRows + r) * kMmaCols + n] = acc;
          acc = 0.f;
        }
      }
    }
}

// Runs fn(i) for i in [0, n) on the machine's cores.
void parallel_for(int n, const std::function<void(int)>& fn) {
  const int workers = std::max(1, std::min<int>(n, int(std::thread::hardware_concurrency())));
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (int i; (i = next++) < n;) fn(i);
    });
  for (auto& th : pool) th.join();
}

// The instructions the hardware runs the chains with; hw[i] empty when instruction i did not run (no device, or
// no sm_90a code for wgmma).
constexpr MmaInstr kInstrs[] = {MmaInstr::mma_sync, MmaInstr::wgmma};
constexpr int kNumInstrs = 2;
const char* instr_name(MmaInstr i) { return i == MmaInstr::wgmma ? "wgmma" : "mma.sync"; }

struct ChainOutputs {
  Vec hw[kNumInstrs];
  Vec mod[kAllModels];
};
// --emulate-hw R16,R32 (a dry run of the job and the table without a GPU): "hardware" is the model R16 for fp16,
// R32 for TF32 (rn | rz | tr, per MMA), for both instructions. Every line then says EMULATED.
int g_emulate[2] = {-1, -1};  // [fp16, tf32]: index into kModels, -1 = the real device

ChainOutputs run_all(MmaChainProblem pr, bool device, int models) {
  ChainOutputs o;
  const std::size_t n = fb::test::mma_chain_out_size(pr);
  const int emulate = g_emulate[pr.fmt == MmaFormat::tf32];
  for (int i = 0; device && i < kNumInstrs; ++i) {
    pr.instr = kInstrs[i];
    o.hw[i].resize(n);
    if (emulate >= 0)
      parallel_for(pr.tiles, [&](int t) { replay_tile(pr, t, kModels[emulate], o.hw[i].data()); });
    else if (!fb::test::run_mma_chains(pr, o.hw[i].data()))
      o.hw[i].clear();
  }
  for (int m = 0; m < models; ++m) o.mod[m].resize(n);
  parallel_for(models * pr.tiles, [&](int i) {
    replay_tile(pr, i % pr.tiles, kModels[i / pr.tiles], o.mod[i / pr.tiles].data());
  });
  return o;
}

// ---- operands: A [tiles][16][K], B^T [tiles][8][K] ----
struct Operands {
  int tiles = 0, k = 0;
  Vec a, b;
};

// Error statistics of out (tiles x 16 x 8) against the exact A B, in fp32 ulps of sum |a||b|.
struct ErrStats {
  double mean = 0, max = 0;
  bool finite = true;
};
struct Reference {
  std::vector<long double> exact;
  std::vector<double> unit;
};
Reference reference(const Operands& x) {
  Reference ref;
  const std::size_t n = std::size_t(x.tiles) * kMmaRows * kMmaCols;
  ref.exact.resize(n);
  ref.unit.resize(n);
  for (int t = 0; t < x.tiles; ++t)
    for (int r = 0; r < kMmaRows; ++r)
      for (int c = 0; c < kMmaCols; ++c) {
        const float* a = &x.a[(std::size_t(t) * kMmaRows + r) * x.k];
        const float* b = &x.b[(std::size_t(t) * kMmaCols + c) * x.k];
        long double s = 0, mag = 0;
        for (int i = 0; i < x.k; ++i) {
          const long double p = (long double)a[i] * b[i];
          s += p;
          mag += std::fabs(p);
        }
        const std::size_t j = (std::size_t(t) * kMmaRows + r) * kMmaCols + c;
        ref.exact[j] = s;
        int e;
        std::frexp(double(mag), &e);
        ref.unit[j] = mag > 0 ? std::ldexp(kEps32, e - 1) : std::numeric_limits<double>::min();
      }
  return ref;
}
ErrStats error_stats(const Vec& out, const Reference& ref) {
  ErrStats s;
  for (std::size_t j = 0; j < out.size(); ++j) {
    if (!std::isfinite(out[j])) {
      s.finite = false;
      s.max = INFINITY;
      continue;
    }
    const double e = double((out[j] - ref.exact[j]) / ref.unit[j]);
    s.mean += e / double(out.size());
    s.max = std::max(s.max, std::fabs(e));
  }
  return s;
}
double bitwise_equal(const Vec& x, const Vec& y) {
  std::size_t eq = 0;
  for (std::size_t j = 0; j < x.size(); ++j) eq += std::memcmp(&x[j], &y[j], 4) == 0;
  return x.empty() ? 0.0 : double(eq) / double(x.size());
}

// ---- the cases (seeded; shapes no config names) ----
struct Case {
  const char* name;
  bool positive;  // uniform [0, 1) rather than standard normal
  std::function<void(Operands&)> shape;
};
std::vector<Case> split_cases() {
  auto scale_rows = [](Vec& v, int rows, int k, int every, double f) {  // a quarter of the rows at 2^-20
    for (int r = 0; r < rows; r += every)
      for (int i = 0; i < k; ++i) v[std::size_t(r) * k + i] = float(v[std::size_t(r) * k + i] * f);
  };
  auto to_max = [](Vec& v, double top) {
    double mx = 0;
    for (float f : v) mx = std::max(mx, double(std::fabs(f)));
    for (float& f : v) f = float(f * (top / mx));
  };
  return {
      {"positive", true, [](Operands&) {}},
      {"mixed", false, [](Operands&) {}},
      {"rows2^-20", false, [=](Operands& x) {
         scale_rows(x.a, x.tiles * kMmaRows, x.k, 4, 0x1p-20);
         scale_rows(x.b, x.tiles * kMmaCols, x.k, 4, 0x1p-20);
       }},
      {"near65504", false, [=](Operands& x) {  // A up to 65,000, B^T 2^-13 (the study's Q / K)
         to_max(x.a, 65000.0);
         to_max(x.b, 0x1p-13);
       }},
      {"outside-fp16", false, [](Operands& x) {  // beyond fp16's range both ways (overflow, subnormals)
         for (float& f : x.a) f = float(f * 0x1p18);
         for (float& f : x.b) f = float(f * 0x1p-18);
       }},
      {"khalves2^24", false, [](Operands& x) {  // the first half of K 2^24 above the second (planes apart)
         for (std::size_t j = 0; j < x.a.size(); ++j) x.a[j] = float(x.a[j] * ((j % x.k) < std::size_t(x.k / 2) ? 0x1p12 : 0x1p-12));
       }},
  };
}
Operands make_operands(const Case& c, int tiles, int k, std::uint64_t seed) {
  Operands x{tiles, k, Vec(std::size_t(tiles) * kMmaRows * k), Vec(std::size_t(tiles) * kMmaCols * k)};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  std::normal_distribution<double> nrm(0.0, 1.0);
  for (float& f : x.a) f = float(c.positive ? uni(rng) : nrm(rng));
  for (float& f : x.b) f = float(c.positive ? uni(rng) : nrm(rng));
  // wgmma's four warps share B: tiles 4j..4j+3 get tile 4j's (mma.sync runs the same problem).
  const std::size_t bt = std::size_t(kMmaCols) * k;
  for (int t = 0; t < tiles; ++t)
    std::copy_n(x.b.begin() + std::ptrdiff_t(t / 4 * 4 * bt), bt, x.b.begin() + std::ptrdiff_t(t * bt));
  c.shape(x);
  return x;
}

// ---- the split GEMMs ----
enum class Split { tf32, fp16 };
// Power-of-two scale of a block with max |x| = mx: the scaled max in [2^14, 2^15).
double block_scale(double mx) {
  if (!(mx > 0) || !std::isfinite(mx)) return 1.0;
  int e;
  std::frexp(mx, &e);
  return std::ldexp(1.0, kScaleTop - (e - 1));
}
// Pieces of one operand ([tiles][rows][K]) and its scale per (tile, chunk) block (plane: one scale for it all).
struct Pieces {
  Vec hi, lo;
  std::vector<double> scale;  // [tiles][K / chunk]
};
Pieces split_operand(const Vec& x, int tiles, int rows, int k, int chunk, Split how, bool plane) {
  Pieces p{Vec(x.size()), Vec(x.size()), std::vector<double>(std::size_t(tiles) * (k / chunk), 1.0)};
  if (how == Split::fp16) {
    double all = 0;
    for (float f : x) all = std::max(all, double(std::fabs(f)));
    for (int t = 0; t < tiles; ++t)
      for (int c = 0; c < k / chunk; ++c) {
        double mx = 0;
        for (int r = 0; r < rows; ++r)
          for (int i = c * chunk; i < (c + 1) * chunk; ++i) mx = std::max(mx, double(std::fabs(x[(std::size_t(t) * rows + r) * k + i])));
        p.scale[std::size_t(t) * (k / chunk) + c] = block_scale(plane ? all : mx);
      }
  }
  for (int t = 0; t < tiles; ++t)
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < k; ++i) {
        const std::size_t j = (std::size_t(t) * rows + r) * k + i;
        if (how == Split::tf32) {
          p.hi[j] = tf32_rna(x[j]);
          p.lo[j] = tf32_rna(x[j] - p.hi[j]);  // exact in fp32
        } else {
          const double xs = double(x[j]) * p.scale[std::size_t(t) * (k / chunk) + i / chunk];
          p.hi[j] = fp16_rn(xs);
          p.lo[j] = fp16_rn((xs - p.hi[j]) * kLoShift);
        }
      }
  return p;
}

// One split form on one operand set: the joined results (tiles x 16 x 8) for each instruction and model, plus the
// accumulators' bitwise agreement of each instruction with each model.
struct SplitResult {
  Vec hw[kNumInstrs], mod[kSplitModels];
  double equal[kNumInstrs][kSplitModels] = {};
};
// chained: one sum over all K (chunk = K) with one scale per operand; else sums of `chunk` with a scale per block.
SplitResult run_split(const Operands& x, Split how, int chunk, bool chained, bool device) {
  const MmaFormat fmt = how == Split::tf32 ? MmaFormat::tf32 : MmaFormat::fp16;
  const Pieces pa = split_operand(x.a, x.tiles, kMmaRows, x.k, chunk, how, chained);
  const Pieces pb = split_operand(x.b, x.tiles, kMmaCols, x.k, chunk, how, chained);
  // hi * hi alone; the cross terms lo_a hi_b then hi_a lo_b in one accumulator, per k step (the kernel's order).
  MmaChainProblem big{fmt, MmaInstr::mma_sync, 1, x.tiles, x.k, chunk, pa.hi.data(), pb.hi.data()};
  Vec a2(pa.lo), b2(pb.hi);
  a2.insert(a2.end(), pa.hi.begin(), pa.hi.end());
  b2.insert(b2.end(), pb.lo.begin(), pb.lo.end());
  MmaChainProblem small{fmt, MmaInstr::mma_sync, 2, x.tiles, x.k, chunk, a2.data(), b2.data()};
  const ChainOutputs ob = run_all(big, device, kSplitModels), os = run_all(small, device, kSplitModels);
  const double w_small = how == Split::tf32 ? 1.0 : 1.0 / kLoShift;
  const int nch = x.k / chunk;
  auto join = [&](const Vec& vb, const Vec& vs) {  // per chunk: small * w + big, unscaled, then summed in fp32
    Vec out(std::size_t(x.tiles) * kMmaRows * kMmaCols, 0.f);
    for (int t = 0; t < x.tiles; ++t)
      for (int c = 0; c < nch; ++c)
        for (int r = 0; r < kMmaRows; ++r)
          for (int n = 0; n < kMmaCols; ++n) {
            const std::size_t j = ((std::size_t(t) * nch + c) * kMmaRows + r) * kMmaCols + n;
            const float v0 = float(double(vs[j]) * w_small);
            const float v1 = v0 + vb[j];
            const double s = pa.scale[std::size_t(t) * nch + c] * pb.scale[std::size_t(t) * nch + c];
            float& o = out[(std::size_t(t) * kMmaRows + r) * kMmaCols + n];
            o = o + float(double(v1) / s);
          }
    return out;
  };
  SplitResult res;
  for (int m = 0; m < kSplitModels; ++m) res.mod[m] = join(ob.mod[m], os.mod[m]);
  for (int i = 0; i < kNumInstrs; ++i) {
    if (ob.hw[i].empty() || os.hw[i].empty()) continue;
    res.hw[i] = join(ob.hw[i], os.hw[i]);
    for (int m = 0; m < kSplitModels; ++m)
      res.equal[i][m] = 0.5 * (bitwise_equal(ob.hw[i], ob.mod[m]) + bitwise_equal(os.hw[i], os.mod[m]));
  }
  return res;
}

// ---- the layout check: small integers, every sum exact whatever the rounding ----
// Both formats, both instructions, 2 terms, 8 tiles (B shared by each 4), K = 1024 in chunks of 256 (two wgmma
// stages, four chunk resets): every product and sum is an integer below 2^24, so any fp32 accumulator is exact and a
// mismatch is a fragment, descriptor or ordering bug. wgmma without sm_90a code: reported, not failed.
int layout_check(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> small(-3, 3);
  int bad = 0;
  for (MmaFormat fmt : {MmaFormat::fp16, MmaFormat::tf32})
    for (MmaInstr instr : kInstrs) {
      const int terms = 2, tiles = 8, k = 1024, chunk = 256;
      const std::size_t bt = std::size_t(kMmaCols) * k;
      Vec a(std::size_t(terms) * tiles * kMmaRows * k), b(std::size_t(terms) * tiles * bt);
      for (float& f : a) f = float(small(rng));
      for (float& f : b) f = float(small(rng));
      for (int u = 0; u < terms * tiles; ++u)  // B of tiles 4j..4j+3 equal (per term)
        std::copy_n(b.begin() + std::ptrdiff_t(u / 4 * 4 * bt), bt, b.begin() + std::ptrdiff_t(u * bt));
      const MmaChainProblem pr{fmt, instr, terms, tiles, k, chunk, a.data(), b.data()};
      Vec hw(fb::test::mma_chain_out_size(pr)), want(hw.size());
      const char* what = fmt == MmaFormat::fp16 ? "fp16" : "tf32";
      if (!fb::test::run_mma_chains(pr, hw.data())) {
        std::printf("layout check %s %s: no code for this device in this build, skipped\n", instr_name(instr), what);
        continue;
      }
      for (int t = 0; t < tiles; ++t) replay_tile(pr, t, kModels[0], want.data());
      int here = 0;
      for (std::size_t j = 0; j < hw.size(); ++j)
        if (hw[j] != want[j] && here++ < 3)
          std::printf("layout check FAILED (%s %s): element %zu: device %g, exact %g\n", instr_name(instr), what, j,
                      double(hw[j]), double(want[j]));
      std::printf("layout check %s %s (2 terms, 8 tiles, K 1024 in chunks of 256): %s\n", instr_name(instr), what,
                  here ? "FAILED" : "passed");
      bad += here;
    }
  return bad ? 1 : 0;
}

std::string fmt_num(double v) {
  char buf[32];
  if (!std::isfinite(v)) return "inf";
  std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 ? "%.0f" : std::fabs(v) >= 10 ? "%.1f" : "%.2f", v);
  return buf;
}

}  // namespace

int run(int argc, char** argv) {
  bool check = false, models_only = false;
  std::uint64_t seed = 20;
  int tiles = 8, kmax = 16384, chunk = 128;
  double budget = 0;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--check") check = true;
    else if (arg == "--models-only") models_only = true;
    else if (arg == "--emulate-hw") {
      const std::string v = value();
      auto idx = [](const std::string& r) { return r == "rn" ? 0 : r == "rz" ? 1 : r == "tr" ? 2 : -2; };
      const auto comma = v.find(',');
      g_emulate[0] = idx(v.substr(0, comma));
      g_emulate[1] = comma == std::string::npos ? -2 : idx(v.substr(comma + 1));
      if (g_emulate[0] < 0 || g_emulate[1] < 0) throw std::invalid_argument("--emulate-hw R16,R32 (rn|rz|tr)");
    }
    else if (arg == "--seed") seed = std::stoull(value());
    else if (arg == "--tiles") tiles = std::stoi(value());
    else if (arg == "--kmax") kmax = std::stoi(value());
    else if (arg == "--chunk") chunk = std::stoi(value());
    else if (arg == "--budget") budget = std::stod(value());
    else if (arg == "--json") json_path = value();
    else {
      std::fprintf(stderr, "usage: %s [--check] [--models-only] [--emulate-hw R16,R32] [--seed N] [--tiles N] "
                           "[--kmax N] [--chunk N] [--budget S] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  if (chunk < 16 || chunk % 16 || tiles < 4 || tiles % 4) {
    std::fprintf(stderr, "--chunk must be a multiple of 16, --tiles of 4\n");
    return 2;
  }
  const bool emulated = g_emulate[0] >= 0;
  const bool device = !models_only && (emulated || fb::test::mma_probe_device_available());
  if (!device && !models_only) {
    std::puts("no CUDA device visible: the MMA chain probe skipped (--models-only runs the models alone)");
    return 77;
  }
  try {
    if (check) {
      if (!emulated) return layout_check(seed);
      std::puts("layout check: not run (--emulate-hw: no device)");
      return 0;
    }
    if (emulated)
      std::printf("## EMULATED hardware (--emulate-hw: fp16 = %s, TF32 = %s per MMA): a dry run, not a measurement\n",
                  kModels[g_emulate[0]].name(MmaFormat::fp16).c_str(),
                  kModels[g_emulate[1]].name(MmaFormat::tf32).c_str());
    std::vector<int> ks;
    for (int k = 64; k <= kmax; k *= 4) ks.push_back(k);
    json doc{{"probe", "known-order MMA chains (tests/mma_order_main.cpp)"}, {"emulated", emulated},
             {"seed", seed}, {"tiles", tiles},
             {"chunk", chunk}, {"device", device}, {"unit", "fp32 ulps of sum |a||b|"},
             {"accumulation", json::array()}, {"split", json::array()}};
    // Every line is printed as it is made (a cut by the job's timeout keeps what was done); past --budget seconds
    // the remaining rows are skipped, and the output says so.
    const auto t0 = std::chrono::steady_clock::now();
    auto over_budget = [&] {
      return budget > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > budget;
    };
    int skipped = 0;
    auto emit = [](const std::string& line) {
      std::puts(line.c_str());
      std::fflush(stdout);
    };
    char buf[640];
    auto mm = [](const ErrStats& e) { return fmt_num(e.mean) + " / " + fmt_num(e.max); };
    auto pct = [](double v) { return fmt_num(100 * v); };

    // 1. 1xFP16 / 1xTF32 chains: the accumulator alone.
    emit("## 1. one chain per output, inputs in the format: error mean / max (fp32 ulps of sum |a||b|); "
                    "models round per MMA (rn, rz, tr) or per half MMA (rz8 / tr8 fp16, rz4 / tr4 TF32); bitwise = % "
                    "of outputs equal to rn/rz/tr/rz-half/tr-half; pos = (hw - rz) / (tr - rz) of the means");
    emit("| format | inputs | K | rn | rz | tr | rz half | tr half | instr | hw | bitwise % | pos |");
    emit("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    const auto cases = split_cases();
    // pos and the max error per (instr, format, inputs, K), for the verdicts below
    std::vector<json> acc_rows;
    for (int ci = 0; ci < 2; ++ci)
      for (int k : ks)
        for (MmaFormat fmt : {MmaFormat::fp16, MmaFormat::tf32}) {
          if (over_budget()) {
            ++skipped;
            continue;
          }
          Operands x = make_operands(cases[ci], tiles, k, seed + k);  // the same draws for both formats
          for (float& f : x.a) f = fmt == MmaFormat::fp16 ? fp16_rn(f) : tf32_rna(f);
          for (float& f : x.b) f = fmt == MmaFormat::fp16 ? fp16_rn(f) : tf32_rna(f);
          const Reference ref = reference(x);
          const MmaChainProblem pr{fmt, MmaInstr::mma_sync, 1, tiles, k, k, x.a.data(), x.b.data()};
          const ChainOutputs o = run_all(pr, device, kAllModels);
          ErrStats mod[kAllModels];
          const char* fname = fmt == MmaFormat::fp16 ? "fp16" : "tf32";
          json row{{"format", fname}, {"inputs", cases[ci].name}, {"k", k}};
          std::string models;
          for (int m = 0; m < kAllModels; ++m) {
            mod[m] = error_stats(o.mod[m], ref);
            row["model_" + kModels[m].name(fmt)] = {mod[m].mean, mod[m].max};
            models += " " + mm(mod[m]) + " |";
          }
          const std::string head = std::string("| ") + (fmt == MmaFormat::fp16 ? "fp16 k16" : "tf32 k8") + " | " +
                                   cases[ci].name + " | " + std::to_string(k) + " |" + models;
          bool any = false;
          for (int i = 0; i < kNumInstrs; ++i) {
            if (o.hw[i].empty()) continue;
            any = true;
            const ErrStats hw = error_stats(o.hw[i], ref);
            const double pos = (hw.mean - mod[1].mean) / (mod[2].mean - mod[1].mean);
            json h{{"mean", hw.mean}, {"max", hw.max}, {"pos", pos}};
            std::string eq;
            for (int m = 0; m < kAllModels; ++m) {
              const double e = bitwise_equal(o.hw[i], o.mod[m]);
              h["bitwise_" + kModels[m].name(fmt)] = e;
              eq += (m ? "/" : "") + pct(e);
            }
            if (i == 1 && !o.hw[0].empty()) h["bitwise_mma_sync"] = bitwise_equal(o.hw[0], o.hw[1]);
            row[instr_name(kInstrs[i])] = h;
            // pos means something only where rz and tr differ clearly: positive inputs (mixed signs: both ~0)
            emit(head + " " + instr_name(kInstrs[i]) + " | " + mm(hw) + " | " + eq + " | " +
                            (cases[ci].positive ? fmt_num(pos) : std::string("-")) + " |");
          }
          if (!any) emit(head + " - | - | - | - |");
          doc["accumulation"].push_back(row);
        }

    // 2. The split GEMMs: per tile (chunk) and chained (one sum, one scale per operand).
    std::snprintf(buf, sizeof buf, "## 2. split GEMMs, max error (fp32 ulps of sum |a||b|), hardware then [models rn "
                                   "/ rz / tr]; tile = sums of %d along K, a scale per block, joined in fp32; chain = "
                                   "one sum, one scale per operand; ratio = 3xFP16 / 3xTF32 (hardware, else tr)",
                  chunk);
    emit(buf);
    emit("| case | K | instr | 3xTF32 tile | 3xFP16 tile | ratio | 3xTF32 chain | 3xFP16 chain | ratio |");
    emit("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    // worst ratios per instruction (index kNumInstrs: the tr model), tile / chain, over every case and K
    double worst[kNumInstrs + 1][2] = {};
    for (int k : ks)  // K outer: a budget cut drops the longest K of every case, not whole cases
      for (const Case& c : cases) {
        if (over_budget()) {
          ++skipped;
          continue;
        }
        const Operands x = make_operands(c, tiles, k, seed + 7 * k + 1);
        const Reference ref = reference(x);
        json row{{"case", c.name}, {"k", k}};
        std::string cells[kNumInstrs + 1];
        for (int chained = 0; chained < 2; ++chained) {
          const int ch = chained ? k : std::min(chunk, k);
          double mx[kNumInstrs + 1][2] = {};  // [instr or tr][tf32, fp16]
          std::string part[kNumInstrs + 1];
          for (Split how : {Split::tf32, Split::fp16}) {
            const SplitResult r = run_split(x, how, ch, chained, device);
            ErrStats mod[kSplitModels];
            for (int m = 0; m < kSplitModels; ++m) mod[m] = error_stats(r.mod[m], ref);
            const std::string models = "[" + fmt_num(mod[0].max) + " / " + fmt_num(mod[1].max) + " / " +
                                       fmt_num(mod[2].max) + "]";
            json f{{"rn", mod[0].max}, {"rz", mod[1].max}, {"tr", mod[2].max}};
            const int fi = how == Split::fp16;
            mx[kNumInstrs][fi] = mod[2].max;
            part[kNumInstrs] += " " + models + " |";
            for (int i = 0; i < kNumInstrs; ++i) {
              if (r.hw[i].empty()) continue;
              const ErrStats hw = error_stats(r.hw[i], ref);
              f[instr_name(kInstrs[i])] = {{"max", hw.max}, {"mean", hw.mean},
                                           {"bitwise_rn_rz_tr", {r.equal[i][0], r.equal[i][1], r.equal[i][2]}}};
              mx[i][fi] = hw.max;
              part[i] += " " + fmt_num(hw.max) + " " + models + " |";
            }
            row[std::string(how == Split::tf32 ? "3xTF32" : "3xFP16") + (chained ? "-chain" : "-tile")] = f;
          }
          for (int i = 0; i <= kNumInstrs; ++i) {
            if (part[i].empty()) continue;
            const double ratio = mx[i][1] / std::max(mx[i][0], 1e-300);
            worst[i][chained] = std::max(worst[i][chained], ratio);
            cells[i] += part[i] + " " + fmt_num(ratio) + " |";
            row[std::string("ratio_") + (chained ? "chain_" : "tile_") + (i < kNumInstrs ? instr_name(kInstrs[i]) : "tr")] = ratio;
          }
        }
        for (int i = 0; i <= kNumInstrs; ++i)
          if (!cells[i].empty() && (i < kNumInstrs || !device))
            emit("| " + std::string(c.name) + " | " + std::to_string(k) + " | " +
                            (i < kNumInstrs ? instr_name(kInstrs[i]) : "models") + " |" + cells[i]);
        doc["split"].push_back(row);
      }

    // 3. The verdicts (the pre-registered rule: docs/perf-notes.md, flash-sm90 fp32 backward, "Session 19 ...
    // prepared for session 20"). Per instruction:
    //   loss ratio: fp16's mean error per MMA over TF32's, positive inputs (2 mean16 / mean32: fp16 has half as many
    //     MMAs at equal K), the smaller of K = 4096 and 16384; >= 1.5 = "fp16 keeps fewer bits per MMA";
    //   1x ratio: 1xFP16 / 1xTF32 max error, worst over both inputs, at K <= 1024 (session 19's cuBLAS probe was
    //     K = 512: its condition 2 redone in a known order) and, for the record, at K >= 4096;
    //   tile / chain ratio: 3xFP16 / 3xTF32 max error, worst over every case and K.
    // Decision (on wgmma, the kernel's instruction; mma.sync where wgmma did not run, and it says so): fp16 pairs
    // are the recommended next kernel step iff the 1x ratio at K <= 1024 <= 2 and the tile ratio <= 2.
    if (skipped) {
      std::snprintf(buf, sizeof buf, "# BUDGET: %d rows skipped past --budget %.0f s (the verdicts cover the rows "
                                     "above only)", skipped, budget);
      emit(buf);
      doc["skipped_rows"] = skipped;
    }
    emit("## 3. verdicts");
    std::string decided;
    for (int i = 0; i <= kNumInstrs; ++i) {
      const bool model = i == kNumInstrs;
      if (model ? device : !device) continue;  // the tr model's line only without hardware
      const std::string who = model ? "tr model" : instr_name(kInstrs[i]);
      if (!model && worst[i][0] == 0) continue;  // this instruction did not run
      if (!model) {
        double loss = INFINITY, r_short = 0, r_long = 0;
        for (const json& r16 : doc["accumulation"]) {
          if (r16["format"] != "fp16" || !r16.contains(who)) continue;
          for (const json& r32 : doc["accumulation"]) {
            if (r32["format"] != "tf32" || r32["inputs"] != r16["inputs"] || r32["k"] != r16["k"] ||
                !r32.contains(who))
              continue;
            const int k = r16["k"].get<int>();
            const double r = r16[who]["max"].get<double>() / r32[who]["max"].get<double>();
            (k <= 1024 ? r_short : r_long) = std::max(k <= 1024 ? r_short : r_long, r);
            if (r16["inputs"] == "positive" && k >= 4096)
              loss = std::min(loss, 2 * r16[who]["mean"].get<double>() / r32[who]["mean"].get<double>());
          }
        }
        std::snprintf(buf, sizeof buf, "%s: fp16 / TF32 mean loss per MMA (positive, K >= 4096) %s (%s bits): fp16 "
                                       "keeps fewer bits per MMA: %s; 1xFP16 / 1xTF32 max error: K <= 1024 %s (<= 2: "
                                       "%s), K >= 4096 %s",
                      who.c_str(), fmt_num(loss).c_str(), fmt_num(std::log2(loss)).c_str(),
                      std::isfinite(loss) ? (loss >= 1.5 ? "YES" : "no") : "n/a (K < 4096)",
                      fmt_num(r_short).c_str(), r_short <= 2 ? "yes" : "NO", r_long > 0 ? fmt_num(r_long).c_str() : "-");
        emit(buf);
        doc["verdict_" + who] = {{"loss_ratio_per_mma", loss}, {"ratio_1x_k_le_1024", r_short},
                                 {"ratio_1x_k_ge_4096", r_long}, {"ratio_tile", worst[i][0]},
                                 {"ratio_chain", worst[i][1]}};
        const bool yes = r_short <= 2 && worst[i][0] <= 2;
        if (kInstrs[i] == MmaInstr::wgmma || decided.empty())
          decided = std::string("DECISION (") + who + (kInstrs[i] == MmaInstr::wgmma ? "" : "; wgmma did not run") +
                    "): fp16 pairs " + (yes ? "ARE" : "are NOT") + " the recommended next kernel step (1x ratio at K "
                    "<= 1024 " + fmt_num(r_short) + ", tile ratio " + fmt_num(worst[i][0]) + ", both <= 2 needed); "
                    "the chained form " + (worst[i][1] <= 2 ? "also within 2x" : "NOT within 2x: per-tile sums only");
      }
      std::snprintf(buf, sizeof buf, "%s: 3xFP16 / 3xTF32 max error, worst over cases and K: tile %s (<= 2: %s), "
                                     "chain %s (<= 2: %s)",
                    who.c_str(), fmt_num(worst[i][0]).c_str(), worst[i][0] <= 2 ? "yes" : "NO",
                    fmt_num(worst[i][1]).c_str(), worst[i][1] <= 2 ? "yes" : "NO");
      emit(buf);
      if (model) doc["worst_ratio_tr_model"] = {{"tile", worst[i][0]}, {"chain", worst[i][1]}};
    }
    if (!decided.empty()) {
      emit(decided);
      doc["decision"] = decided;
    }
    if (!json_path.empty()) std::ofstream(json_path) << doc.dump(1) << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashbench_mma_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashbench_mma_probe: %s\n", e.what());
    return 2;
  }
}

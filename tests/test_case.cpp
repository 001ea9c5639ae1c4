#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/backend.h"
#include "case.h"
#include "catch.h"
#include "judge.h"
#include "registry.h"
#include "record.h"
#include "runner.h"

using namespace fb;

TEST_CASE("FLOPs follow FlashAttention's convention", "[case]") {
  Case c;
  c.batch = 2;
  c.heads = 16;
  c.kv_heads = 16;
  c.set_seq(4096);
  c.head_dim = 128;
  const double fwd = 4.0 * 2 * 16 * 4096.0 * 4096.0 * 128;
  REQUIRE(flops(c) == fwd);
  c.causal = true;
  REQUIRE(flops(c) == fwd / 2);
  c.causal = false;
  c.pass = Pass::bwd;
  REQUIRE(flops(c) == 2.5 * fwd);
  c.pass = Pass::fwd_bwd;
  REQUIRE(flops(c) == 3.5 * fwd);
}

TEST_CASE("modelled bytes: naive grows as N^2, flash as N^2/Br", "[case]") {
  Case c;
  c.heads = c.kv_heads = 32;
  c.head_dim = 128;
  c.dtype = Dtype::bf16;
  c.set_seq(4096);
  const double naive = naive_bytes(c, 0);
  const double flash = tiled_bytes(c, 128);
  // Naive moves S and P four times (N^2 elements of 2 bytes each): 32*4096^2*2*4 bytes at least.
  REQUIRE(naive >= 32.0 * 4096 * 4096 * 2 * 4);
  // Flash re-reads K and V once per query tile: (2*N*d*e) * N/Br against naive's 4*N^2*e, a ratio of
  // d / (2*Br) = 0.5 here. The model is an upper bound: on a GPU most K/V re-reads hit L2.
  REQUIRE(std::abs(flash / naive - 128.0 / (2 * 128)) < 0.05);
  // Doubling N nearly quadruples naive: the N^2 terms dominate.
  Case c2 = c;
  c2.set_seq(8192);
  REQUIRE(std::abs(naive_bytes(c2, 0) / naive - 4.0) < 0.1);  // + linear Q/K/V/O terms
  // Causal: naive still writes every score (cuBLAS has no mask), the tiled kernel skips half the tiles.
  Case causal = c;
  causal.causal = true;
  REQUIRE(naive_bytes(causal, 0) == naive);
  REQUIRE(tiled_bytes(causal, 128) < 0.6 * flash);
}

TEST_CASE("modelled bytes: the tiled backward re-reads Q and dO once per key tile", "[case]") {
  Case c;
  c.heads = c.kv_heads = 16;
  c.head_dim = 128;
  c.dtype = Dtype::bf16;
  c.set_seq(8192);
  c.pass = Pass::bwd;
  const double q_bytes = 16.0 * 8192 * 128 * 2;
  // Halving the key tile doubles the per-tile re-reads of Q and dO (2 tensors x N/tile tiles).
  const double d = tiled_bytes(c, 64) - tiled_bytes(c, 128);
  REQUIRE(d >= 2 * q_bytes * (8192 / 64 - 8192 / 128));
  REQUIRE(tiled_bytes(c, 128) < naive_bytes(c, 0));}

TEST_CASE("case keys are stable and distinguish every field", "[case]") {
  Case a;
  a.batch = 1;
  a.heads = 16;
  a.kv_heads = 4;
  a.set_seq(1024);
  a.head_dim = 64;
  a.dtype = Dtype::fp16;
  a.causal = true;
  a.pass = Pass::fwd_bwd;
  REQUIRE(a.key() == "b1-h16-kv4-n1024-d64-fp16-causal-fwd+bwd");
  Case b = a;
  b.kv_heads = 16;
  REQUIRE(!(a == b));
  REQUIRE(a.params().group() == 4);
  REQUIRE(std::abs(a.params().scale - 0.125) < 1e-15);
}

TEST_CASE("dtype and pass names round-trip", "[case]") {
  for (Dtype t : kDtypes) REQUIRE(parse_dtype(to_string(t)) == t);
  for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwd_bwd}) REQUIRE(parse_pass(to_string(p)) == p);
  REQUIRE(parse_dtype("fp8") == Dtype::fp8);
  REQUIRE(!parse_dtype("e5m2"));
  REQUIRE(!parse_dtype("FP8"));
  REQUIRE(!parse_pass("both"));
}

TEST_CASE("registry: names unique, head_dim, dtype and role from the descriptor", "[case]") {
  REQUIRE(builtin_kernels().baseline() == find_kernel("naive"));
  REQUIRE(builtin_kernels().reference() != nullptr);
  REQUIRE(kernel_names().find("reference") == std::string::npos);  // not a user kernel
  Case fp32;
  fp32.head_dim = 64;
  fp32.dtype = Dtype::fp32;
  REQUIRE(!unsupported_reason(*find_kernel("flash-sm90"), fp32).has_value());  // 3xTF32 on wgmma
  REQUIRE(!unsupported_reason(*find_kernel("flash"), fp32).has_value());
  Case fp64 = fp32;
  fp64.dtype = Dtype::fp64;
  REQUIRE(unsupported_reason(*find_kernel("flash-sm90"), fp64).has_value());
  KernelSet set;
  Descriptor d = *find_kernel("flash");
  set.add(d);
  REQUIRE_THROWS_AS(set.add(d), std::invalid_argument);  // a name is registered once
  REQUIRE(find_kernel("naive") != nullptr);
  REQUIRE(find_kernel("flash") != nullptr);
  REQUIRE(find_kernel("nope") == nullptr);
  Case c;
  c.head_dim = 80;
  REQUIRE(unsupported_reason(*find_kernel("flash"), c).has_value());
  REQUIRE(!unsupported_reason(*find_kernel("naive"), c).has_value());
  c.head_dim = 128;
  REQUIRE(!unsupported_reason(*find_kernel("flash"), c).has_value());
}

TEST_CASE("registry: cudnn is a CUDA-only peer in fp16/bf16, named but never run by default", "[case]") {
  const Descriptor* k = find_kernel("cudnn");
  REQUIRE(k != nullptr);
  CHECK(k->role == Role::peer);
  CHECK(is_peer("cudnn"));
  for (const Descriptor* d : builtin_kernels().default_kernels()) CHECK(d->name != "cudnn");
  CHECK_FALSE(k->runs_on(BackendId::cpu));
  CHECK(unavailable_on(*k, "cpu").has_value());
  Case c;
  c.head_dim = 128;
  c.set_seq(4096);
  c.dtype = Dtype::bf16;
  CHECK_FALSE(unsupported_reason(*k, c).has_value());
  c.dtype = Dtype::fp32;
  CHECK(unsupported_reason(*k, c).has_value());
  // Its bytes: every tensor once (Q, K, V, O in bf16 and the fp32 LSE), whatever the length.
  c.dtype = Dtype::bf16;
  const double tensor = double(c.batch) * c.heads * c.seq_q * c.head_dim * 2;
  CHECK(k->bytes(c, 0) == tensor * 4 + double(c.batch) * c.heads * c.seq_q * 4);
#if FLASHBENCH_HAVE_CUDA && !FLASHBENCH_HAVE_CUDNN
  // A CUDA build without cuDNN still lists it, and says why it cannot run.
  const auto why = k->cuda.unsupported(Pass::fwd, c.params());
  REQUIRE(why.has_value());
  CHECK(why->find("built without cuDNN") != std::string::npos);
#elif FLASHBENCH_HAVE_CUDA && FLASHBENCH_HAVE_CUDNN
  // What the graph cannot express is refused before cuDNN is asked (no device needed).
  Case wide = c;
  wide.seq_q = 256;
  wide.seq_k = 128;
  wide.causal = true;
  auto why = k->cuda.unsupported(Pass::fwd, wide.params());
  REQUIRE(why.has_value());
  CHECK(why->find("seq_q <= seq_k") != std::string::npos);
  Case odd_dim = c;
  odd_dim.head_dim = 36;
  why = k->cuda.unsupported(Pass::fwd, odd_dim.params());
  REQUIRE(why.has_value());
  CHECK(why->find("head_dim") != std::string::npos);
  // A shape it would plan: on a machine without a GPU the answer is a reason, never a throw.
  if (!cuda_device_available()) {
    why = k->cuda.unsupported(Pass::fwd_bwd, c.params());
    REQUIRE(why.has_value());
    CHECK(why->find("cuDNN") != std::string::npos);
    CHECK(k->cuda.workspace_bytes(Pass::fwd_bwd, c.params()) == 0);
  }
#endif
}

TEST_CASE("verification bounds are at the tensor's own scale", "[case]") {
  // No max(1, .): a tensor of magnitude 0.06 is judged at 0.06.
  REQUIRE(bound_for(Rule::tiled_no_baseline, "O", Dtype::bf16, 0.06, 0) < 0.06 / 16);
  REQUIRE(bound_for(Rule::tiled_no_baseline, "O", Dtype::bf16, 600, 0) ==
          10000 * bound_for(Rule::tiled_no_baseline, "O", Dtype::bf16, 0.06, 0));
  // Tighter with precision, for every rule.
  for (Rule r : {Rule::baseline, Rule::tiled_no_baseline}) {
    REQUIRE(bound_for(r, "O", Dtype::fp64, 1, 0) < bound_for(r, "O", Dtype::fp32, 1, 0));
    REQUIRE(bound_for(r, "O", Dtype::fp32, 1, 0) < bound_for(r, "O", Dtype::fp16, 1, 0));
    REQUIRE(bound_for(r, "O", Dtype::fp16, 1, 0) < bound_for(r, "O", Dtype::bf16, 1, 0));
  }
  // LSE is stored in fp32: its floor is fp32's, whatever the input dtype.
  REQUIRE(floor_of("LSE", Dtype::bf16, 8.0) == floor_of("O", Dtype::fp32, 8.0));
  REQUIRE(floor_of("LSE", Dtype::bf16, 8.0) < 1e-5);
  REQUIRE(ulp_at(1.0, Dtype::bf16) == 0x1p-7);
  REQUIRE(ulp_at(0.1, Dtype::bf16) == 0x1p-11);  // 0.1 is in [2^-4, 2^-3)
  REQUIRE(ulp_at(0.0, Dtype::bf16) == 0.0);
  // The relative rule: 2x (3x for gradients) the baseline's error plus 2 ulps at the scale.
  // Plus the accumulation of seq_k terms in fp32: eps_fp32 * sqrt(seq_k) * M.
  const double acc = 0x1p-23 * 64;
  REQUIRE(bound_for(Rule::relative, "O", Dtype::bf16, 1.0, 0.01, 4096) == 0.02 + 2 * 0x1p-7 + acc);
  REQUIRE(bound_for(Rule::relative, "dQ", Dtype::bf16, 1.0, 0.01, 4096) == 0.03 + 2 * 0x1p-7 + acc);
  // In fp32 the accumulation term is what separates two correct kernels (ulps of fp32 are far less).
  REQUIRE(floor_of("O", Dtype::fp32, 0.1, 4096) > 40 * floor_of("O", Dtype::fp32, 0.1, 1) / 2);
  // dQ and dK vanish with one key (dS = 0): judged at no less than dV's scale / 16.
  REQUIRE(judged_scale("dK", 0.0, 128.0) == 8.0);
  REQUIRE(judged_scale("dK", 10.0, 128.0) == 10.0);
  REQUIRE(judged_scale("dV", 0.0, 128.0) == 0.0);
  REQUIRE(judged_scale("O", 0.5, std::numeric_limits<double>::quiet_NaN()) == 0.5);
}

TEST_CASE("ceilings give each ok result its roofline percentages, kept through JSON", "[case]") {
  Results res;
  Record ok;
  ok.kernel = "flash";
  ok.tflops = 395;
  ok.gbps = 2128;
  ok.bytes_moved = 1e9;
  Record skipped = ok;
  skipped.status = Status::skipped;
  res.records = {ok, skipped};
  attach_ceilings(res, {{"gemm_bf16_tflops", 790.0}, {"copy_gbps", 4256.0}});
  REQUIRE(res.device["ceilings"]["copy_gbps"] == 4256.0);
  REQUIRE(std::abs(res.records[0].roofline["pct_of_gemm_peak"].get<double>() - 50.0) < 1e-12);
  REQUIRE(std::abs(res.records[0].roofline["pct_of_copy_bandwidth"].get<double>() - 50.0) < 1e-12);
  REQUIRE(res.records[1].roofline.empty());
  const Record back = record_from_json(to_json(res.records[0]));
  REQUIRE(back.roofline == res.records[0].roofline);
  REQUIRE(record_from_json(to_json(res.records[1])).roofline.empty());
}

// ---- seq_q != seq_k ----

namespace {
// The causal rule written out directly (bottom-right aligned), for the mask's unit tests.
bool sees(int seq_q, int seq_k, bool causal, int i, int j) {
  return j >= 0 && j < seq_k && (!causal || j <= i + (seq_k - seq_q));
}
}  // namespace

TEST_CASE("causal mask: bottom-right aligned, with its tile helpers, against brute force", "[case]") {
  const int lengths[] = {1, 2, 3, 7, 16, 17, 40};
  const int tiles[] = {1, 3, 8, 16};
  for (int nq : lengths)
    for (int nk : lengths)
      for (bool causal : {false, true}) {
        const CausalMask m{nq, nk, causal};
        INFO("seq_q " << nq << " seq_k " << nk << " causal " << causal);
        double pairs = 0;
        for (int i = 0; i < nq; ++i) {
          int end = 0;
          for (int j = 0; j < nk; ++j) {
            REQUIRE(m.visible(i, j) == sees(nq, nk, causal, i, j));
            if (sees(nq, nk, causal, i, j)) end = j + 1, ++pairs;
          }
          REQUIRE(m.key_end(i) == end);  // visible keys are a prefix [0, end)
          REQUIRE(m.row_empty(i) == (end == 0));
        }
        REQUIRE(m.visible_pairs() == pairs);
        // The last query row sees every key; the first row that sees key j sees every key before it.
        REQUIRE(m.key_end(nq - 1) == nk);
        for (int j = 0; j < nk; ++j) {
          const int first = m.first_row(j);
          REQUIRE(first < nq);
          REQUIRE(sees(nq, nk, causal, first, j));
          if (first > 0) REQUIRE_FALSE(sees(nq, nk, causal, first - 1, j));
        }
        for (int br : tiles)
          for (int bc : tiles)
            for (int q0 = 0; q0 < nq; q0 += br) {
              int end = 0;  // one past the last key any row of the tile sees
              for (int i = q0; i < std::min(q0 + br, nq); ++i) end = std::max(end, m.key_end(i));
              REQUIRE(m.key_end(q0, br) == end);
              REQUIRE(m.kv_tiles(q0, br, bc) == (end + bc - 1) / bc);
              for (int k0 = 0; k0 < nk; k0 += bc) {
                bool hides = false;  // some (row, key) of the tile masked, real rows or padded ones
                for (int i = q0; i < q0 + br; ++i)
                  for (int j = k0; j < k0 + bc; ++j) hides |= !sees(nq, nk, causal, i, j);
                // tile_needs_mask may be conservative, never wrong.
                if (hides) REQUIRE(m.tile_needs_mask(q0, k0, bc));
              }
            }
        // first_q_tile: tiles before it hold no row that sees any key at or after k0.
        for (int br : tiles)
          for (int k0 = 0; k0 < nk; ++k0) {
            const int t = m.first_q_tile(k0, br);
            for (int i = 0; i < std::min(t * br, nq); ++i) REQUIRE(m.key_end(i) <= k0);
          }
      }
}

TEST_CASE("seq_q != seq_k: case key, params, FLOPs and bytes", "[case]") {
  Case c;
  c.heads = 32;
  c.kv_heads = 8;
  c.head_dim = 128;
  c.dtype = Dtype::bf16;
  c.seq_q = 1;
  c.seq_k = 4096;
  REQUIRE(c.key() == "b1-h32-kv8-q1-k4096-d128-bf16-full-fwd");
  c.causal = true;
  REQUIRE(c.key() == "b1-h32-kv8-q1-k4096-d128-bf16-causal-fwd");
  Case square = c;
  square.set_seq(4096);
  REQUIRE(square.key() == "b1-h32-kv8-n4096-d128-bf16-causal-fwd");  // the key results had before
  REQUIRE(!(square == c));

  const AttentionParams p = c.params();
  REQUIRE(p.seq_q == 1);
  REQUIRE(p.seq_k == 4096);
  REQUIRE(p.q_elems() == 32 * 128);
  REQUIRE(p.kv_elems() == 8 * 4096 * 128);
  REQUIRE(p.rows() == 32);
  REQUIRE(input_bytes(c) == std::uint64_t(32 * 128 + 2 * 8 * 4096 * 128) * 2);

  // Decode: the one query row sees every key, causal or not: no halving.
  const double full = 4.0 * 32 * 1 * 4096 * 128;
  REQUIRE(flops(c) == full);
  // seq_q < seq_k causal: exact visible pairs, e.g. 2 x 5: rows see 4 and 5 keys.
  c.seq_q = 2;
  c.seq_k = 5;
  REQUIRE(flops(c) == 4.0 * 32 * 9 * 128);
  // seq_q > seq_k causal: 5 x 2: rows 0-2 see nothing, rows 3 and 4 see 1 and 2 keys.
  c.seq_q = 5;
  c.seq_k = 2;
  REQUIRE(flops(c) == 4.0 * 32 * 3 * 128);
  c.causal = false;
  REQUIRE(flops(c) == 4.0 * 32 * 10 * 128);
  // Square causal keeps FlashAttention's halving.
  REQUIRE(flops(square) == 4.0 * 32 * 4096.0 * 4096 * 128 / 2);

  // Bytes: decode flash reads K and V once (one query tile), Q and writes O once.
  Case dec = c;
  dec.seq_q = 1;
  dec.seq_k = 4096;
  dec.causal = true;
  const double e = 2, kv = 8.0 * 4096 * 128 * e, q = 32.0 * 128 * e;
  REQUIRE(std::abs(tiled_bytes(dec, 128) - (2 * q + 2 * kv + 32 * 4.0)) < 1);
  // Naive decode: S and P are 1 x seq_k per head.
  REQUIRE(naive_bytes(dec, 0) >= 4.0 * 32 * 4096 * e);
  REQUIRE(naive_bytes(dec, 0) < naive_bytes(square, 0) / 100);
}

// GPU tests [gpu][decode]: the split-KV decode kernel (flash-decode) against the fp64 reference on odd
// shapes and forced split counts, with outputs poisoned before every run (gpu_main.cpp skips without a
// device).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "gpu_support.h"
#include "common/splitkv.h"
#include "registry.h"
#include "runner.h"

namespace {

using namespace fb::test;

using namespace fb;

constexpr std::uint64_t kSeed = 20261130;

// Decode shapes: 1, 17, 1000 and 40000 keys against 1, 3 and 16 query rows; GQA 32/8 and 64/8, d 64
// and 128, bf16 and fp16, causal and not rotating through them; splits auto, 1, 7, and more splits than
// K/V tiles (most of them empty).
std::vector<Case> decode_cases() {
  std::vector<Case> cases;
  int i = 0;
  for (int seq_k : {1, 17, 1000, 40000})
    for (int seq_q : {1, 3, 16}) {
      Case c;
      c.batch = i % 3 == 0 ? 2 : 1;
      c.heads = i % 2 ? 64 : 32;
      c.kv_heads = 8;
      c.seq_q = seq_q;
      c.seq_k = seq_k;
      c.head_dim = (i / 2) % 2 ? 64 : 128;
      c.dtype = i % 2 ? Dtype::fp16 : Dtype::bf16;
      c.causal = (i / 3) % 2 == 1;
      c.pass = Pass::fwd;
      for (int splits : {0, 1, 7, std::min(kMaxKvSplits, seq_k / 32 + 9)}) {
        c.splits = splits;
        cases.push_back(c);
      }
      ++i;
    }
  return cases;
}

}  // namespace

TEST_CASE("flash-decode verifies against fp64 with auto, one, several and more splits than tiles",
          "[gpu][decode]") {
  CudaBackend& b = gpu();
  const Descriptor& decode = kernel("flash-decode");
  const Descriptor& naive = kernel("naive");
  for (const Case& c : decode_cases()) {
    INFO("case " << c.key());
    b.prepare(c, kSeed);
    std::vector<Record> records;
    if (c.splits == 0) {  // naive runs splits = 0 only; its error sets flash-decode's bound
      REQUIRE_FALSE(b.check_fits(c, naive).has_value());
      REQUIRE(b.run(naive, 0, 1).times_ms.size() == 1);
      records.push_back(ok_record(c, "naive"));
    }
    const auto why = b.check_fits(c, decode);
    INFO("flash-decode: " << why.value_or("fits"));
    REQUIRE_FALSE(why.has_value());
    const KernelRun run = b.run(decode, 0, 1);
    REQUIRE(run.times_ms.size() == 1);
    REQUIRE(run.tile >= 1);  // keys per split
    if (c.splits > 0) CHECK(splits_used(c, run.tile) == c.splits);
    records.push_back(ok_record(c, "flash-decode"));
    verify_case(b, records, builtin_kernels());
    for (const Record& r : records) {
      INFO(r.kernel << " errors " << r.errors.dump());
      REQUIRE(r.verified.has_value());
      CHECK(*r.verified);
    }
    b.release();
  }
}

// One query row on grids past one CTA per SM (batch 24 and 160 x 8 K/V heads), every key count leaving
// a partial tail tile. Up to sixteen rows a head run the TMA ring by default on sm_90a (elsewhere the
// cp.async ring); scripts/decode_ab_h200.sh runs this file again with FB_DECODE_RING=std (the cp.async
// ring) and tmadeep. scripts/decode_ring_h200.sh also runs this file with FB_DECODE_RING = deepall,
// tmadeep and tma (flash_decode.h): the deep cp.async ring and the TMA rings (deep up to one CTA per SM,
// standard past it: these cases) on every case of up to sixteen rows; scripts/decode_ab_h200.sh with
// the probes FB_DECODE_SYNC=warp, FB_DECODE_STREAMK=1 (stream-K: here a CTA's key range runs across
// several heads' keys, 777 and 3001 not being multiples of it, so pieces begin and end mid-head and
// mid-tile) and FB_DECODE_ROTATE=1 (the partial tail tile then comes mid-loop).
TEST_CASE("flash-decode: one query row, grids past one CTA per SM, keys not a multiple of the tile",
          "[gpu][decode]") {
  CudaBackend& b = gpu();
  const Descriptor& decode = kernel("flash-decode");
  for (int d : {128, 64})
    for (int batch : {24, 160}) {
      Case c;
      c.batch = batch;
      c.heads = 32;
      c.kv_heads = 8;
      c.seq_q = 1;
      c.seq_k = batch == 24 ? 3001 : 777;
      c.head_dim = d;
      c.dtype = d == 64 ? Dtype::fp16 : Dtype::bf16;
      c.causal = true;
      c.pass = Pass::fwd;
      for (int splits : {0, 5}) {
        c.splits = splits;
        INFO("case " << c.key());
        b.prepare(c, kSeed);
        REQUIRE_FALSE(b.check_fits(c, decode).has_value());
        REQUIRE(b.run(decode, 0, 1).times_ms.size() == 1);
        std::vector<Record> records{ok_record(c, "flash-decode")};
        verify_case(b, records, builtin_kernels());
        REQUIRE(records[0].verified.has_value());
        CHECK(*records[0].verified);
        b.release();
      }
    }
}

TEST_CASE("flash-decode: rows with no key are O = 0, LSE = -inf; unwritten outputs never pass",
          "[gpu][decode]") {
  CudaBackend& b = gpu();
  const Descriptor& decode = kernel("flash-decode");
  Case c;
  c.heads = 32;
  c.kv_heads = 8;
  c.seq_q = 16;
  c.seq_k = 5;  // causal: the first 11 query rows of every head see no key
  c.head_dim = 128;
  c.dtype = Dtype::bf16;
  c.causal = true;
  for (int splits : {1, 3, 0}) {
    c.splits = splits;
    INFO("splits " << splits);
    b.prepare(c, kSeed);
    REQUIRE(b.run(decode, 0, 1).times_ms.size() == 1);
    for (const HostTensor& t : b.fetch("flash-decode")) {
      const std::size_t width = t.name == "LSE" ? 1 : std::size_t(c.head_dim);
      std::size_t bad = 0;
      for (std::size_t r = 0; r < t.values.size() / width; ++r) {
        const bool empty = int(r % std::size_t(c.seq_q)) < c.seq_q - c.seq_k;
        for (std::size_t x = 0; x < width; ++x) {
          const double v = t.values[r * width + x];
          bad += !(empty ? (t.name == "LSE" ? v == -std::numeric_limits<double>::infinity() : v == 0.0)
                         : std::isfinite(v));
        }
      }
      INFO(t.name);
      CHECK(bad == 0);
    }
    std::vector<Record> records{ok_record(c, "flash-decode")};
    verify_case(b, records, builtin_kernels());
    REQUIRE(records[0].verified.has_value());
    CHECK(*records[0].verified);
    b.release();
  }
  // Poison only (no rep runs): the NaN left in O and LSE must fail verification.
  c.causal = false;
  c.seq_k = 1000;
  c.splits = 4;
  b.prepare(c, kSeed);
  b.run(decode, 0, 0);
  std::vector<Record> records{ok_record(c, "flash-decode")};
  verify_case(b, records, builtin_kernels());
  REQUIRE(records[0].verified.has_value());
  CHECK_FALSE(*records[0].verified);
  b.release();
}

// Sixteen rows a K/V head (GQA group 4 x 4 query positions, Cfg16's one row block) with causal rows that
// see no key (seq_k 2: positions 0 and 1) or only part of the last tile, on 37 x 8 heads: with
// FB_DECODE_STREAMK=1 the auto split runs stream-K pieces that hold such rows.
TEST_CASE("flash-decode: sixteen rows a head, empty causal rows, pieces across heads", "[gpu][decode]") {
  CudaBackend& b = gpu();
  const Descriptor& decode = kernel("flash-decode");
  Case c;
  c.batch = 37;
  c.heads = 32;
  c.kv_heads = 8;
  c.seq_q = 4;
  c.head_dim = 128;
  c.dtype = Dtype::bf16;
  c.causal = true;
  c.pass = Pass::fwd;
  for (int seq_k : {2, 130, 4099})
    for (int splits : {0, 3}) {
      c.seq_k = seq_k;
      c.splits = splits;
      INFO("case " << c.key());
      b.prepare(c, kSeed);
      REQUIRE_FALSE(b.check_fits(c, decode).has_value());
      REQUIRE(b.run(decode, 0, 1).times_ms.size() == 1);
      for (const HostTensor& t : b.fetch("flash-decode")) {
        if (t.name != "LSE") continue;
        std::size_t bad = 0;
        for (std::size_t r = 0; r < t.values.size(); ++r) {
          const bool empty = int(r % std::size_t(c.seq_q)) < c.seq_q - c.seq_k;
          bad += empty ? t.values[r] != -std::numeric_limits<double>::infinity() : !std::isfinite(t.values[r]);
        }
        CHECK(bad == 0);
      }
      std::vector<Record> records{ok_record(c, "flash-decode")};
      verify_case(b, records, builtin_kernels());
      REQUIRE(records[0].verified.has_value());
      CHECK(*records[0].verified);
      b.release();
    }
}

// The default's other ring at d = 128 (flash_decode.cu, default_ring): a grid of at most one CTA per SM
// whose CTAs stream >= 8192 keys (128 CTAs of 9001 keys; batch 16 x 8 K/V heads) runs the cp.async ring
// with the .L2::128B hint on sm_90a, where every other one-row case above runs TMA.
TEST_CASE("flash-decode: one row, long splits on a one-wave grid (the default's cp.async ring)", "[gpu][decode]") {
  CudaBackend& b = gpu();
  const Descriptor& decode = kernel("flash-decode");
  Case c;
  c.batch = 16;
  c.heads = 32;
  c.kv_heads = 8;
  c.seq_q = 1;
  c.seq_k = 9001;
  c.head_dim = 128;
  c.pass = Pass::fwd;
  for (Dtype t : {Dtype::bf16, Dtype::fp16}) {
    c.dtype = t;
    c.causal = t == Dtype::bf16;
    INFO("case " << c.key());
    b.prepare(c, kSeed);
    REQUIRE_FALSE(b.check_fits(c, decode).has_value());
    REQUIRE(b.run(decode, 0, 1).times_ms.size() == 1);
    std::vector<Record> records{ok_record(c, "flash-decode")};
    verify_case(b, records, builtin_kernels());
    REQUIRE(records[0].verified.has_value());
    CHECK(*records[0].verified);
    b.release();
  }
}

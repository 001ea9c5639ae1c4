#include <cmath>

#include "case.h"
#include "catch.h"
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
  const double naive = bytes_moved(c, Algo::naive, 0);
  const double flash = bytes_moved(c, Algo::flash, 128);
  // Naive moves S and P four times (N^2 elements of 2 bytes each): 32*4096^2*2*4 bytes at least.
  REQUIRE(naive >= 32.0 * 4096 * 4096 * 2 * 4);
  // Flash re-reads K and V once per query tile: (2*N*d*e) * N/Br against naive's 4*N^2*e, a ratio of
  // d / (2*Br) = 0.5 here. The model is an upper bound: on a GPU most K/V re-reads hit L2.
  REQUIRE(std::abs(flash / naive - 128.0 / (2 * 128)) < 0.05);
  // Doubling N nearly quadruples naive: the N^2 terms dominate.
  Case c2 = c;
  c2.set_seq(8192);
  REQUIRE(std::abs(bytes_moved(c2, Algo::naive, 0) / naive - 4.0) < 0.1);  // + linear Q/K/V/O terms
  REQUIRE(bytes_moved(c, Algo::reference, 0) == 0);
}

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
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::fp16, Dtype::bf16})
    REQUIRE(parse_dtype(to_string(t)) == t);
  for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwd_bwd}) REQUIRE(parse_pass(to_string(p)) == p);
  REQUIRE(!parse_dtype("fp8"));
  REQUIRE(!parse_pass("both"));
}

TEST_CASE("registry: names unique, head_dim support checked", "[case]") {
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

TEST_CASE("verification bounds tighten with precision", "[case]") {
  REQUIRE(dtype_tolerance(Dtype::fp64) < dtype_tolerance(Dtype::fp32));
  REQUIRE(dtype_tolerance(Dtype::fp32) < dtype_tolerance(Dtype::fp16));
  REQUIRE(dtype_tolerance(Dtype::fp16) < dtype_tolerance(Dtype::bf16));
  REQUIRE(rounding_floor(Dtype::fp64) < 1e-15);
  REQUIRE(rounding_floor(Dtype::bf16) > rounding_floor(Dtype::fp16));
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

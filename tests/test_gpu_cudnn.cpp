// GPU tests [gpu][cudnn]: cuDNN's fused attention (the `cudnn` peer) through the normal runner path —
// outputs poisoned, run, then judged against the fp64 reference by the same rule as every kernel (its
// error at most 2x naive's, per tensor), fp8 included (with what cuDNN's e4m3 O adds on Hopper, see
// check_fp8_records). gpu_main.cpp skips without a device; in a build without cuDNN the kernel must
// say so.
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#if FLASHBENCH_HAVE_CUDNN
#include "cudnn/cudnn_sdpa.h"
#endif
#include "gpu_cases.h"
#include "gpu_support.h"
#include "judge.h"
#include "registry.h"
#include "runner.h"

namespace {

using namespace fb::test;

using namespace fb;

constexpr std::uint64_t kSeed = 20261130;

// Runs naive and cudnn on `c` (one rep each, after the runner's poisoning) and judges both.
std::vector<Record> run_and_verify(const Case& c, int cudnn_reps = 1) {
  CudaBackend& b = gpu();
  b.prepare(c, kSeed);
  const Descriptor& naive = kernel("naive");
  const Descriptor& cudnn = kernel("cudnn");
  REQUIRE_FALSE(b.check_fits(c, naive).has_value());
  REQUIRE(b.run(naive, 0, 1).times_ms.size() == 1);
  const auto why = b.check_fits(c, cudnn);
  INFO("cudnn: " << why.value_or("fits"));
  REQUIRE_FALSE(why.has_value());
  const KernelRun run = b.run(cudnn, 0, cudnn_reps);
  REQUIRE(run.times_ms.size() == std::size_t(cudnn_reps));
  std::vector<Record> records{ok_record(c, "naive"), ok_record(c, "cudnn")};
  verify_case(b, records, builtin_kernels());
  b.release();
  return records;
}

}  // namespace

#if FLASHBENCH_HAVE_CUDNN

namespace {

// Whether cudnn takes `c`; where it does not, the reason (logged) must be cuDNN's.
bool cudnn_takes(const Case& c) {
  const auto why = gpu().check_fits(c, kernel("cudnn"));
  if (!why) return true;
  WARN("cudnn refuses " << c.key() << ": " << *why);
  CHECK(why->find("cuDNN") != std::string::npos);
  return false;
}

// cudnn refuses `c`, with a reason that names `what` (by default: any reason).
void check_refused(const Case& c, const char* what = "") {
  const auto why = gpu().check_fits(c, kernel("cudnn"));
  REQUIRE(why.has_value());
  INFO("cudnn: " << *why);
  CHECK(why->find(what) != std::string::npos);
}

// naive run on `c` and cudnn's outputs poisoned but never written: they fail verification, and the
// tracked peak holds at least the workspace cudnn asks for (returned, for the test's check of its size).
std::size_t check_unwritten_fails(const Case& c) {
  CudaBackend& b = gpu();
  b.prepare(c, kSeed);
  const Descriptor& cudnn = kernel("cudnn");
  REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
  const std::size_t ws = cudnn.cuda.workspace_bytes(c.pass, c.params());
  const KernelRun run = b.run(cudnn, 0, 0);  // poisoned, never run
  CHECK(run.peak_bytes >= ws);
  std::vector<Record> records{ok_record(c, "naive"), ok_record(c, "cudnn")};
  verify_case(b, records, builtin_kernels());
  REQUIRE(records[1].verified.has_value());
  CHECK_FALSE(*records[1].verified);
  b.release();
  return ws;
}

// naive's and cudnn's fp8 records of one case. naive and LSE: flashbench's verdict. cudnn's O: the
// verdict too when cuDNN stores O in bf16; when it stores e4m3 (Hopper), that rounding (half an e4m3
// ulp at the output's magnitude, up to 2^-4 of it) comes on top of what the 2x-naive rule allows,
// which it can exceed on its own: then the O error must stay within the rule's bound plus that
// rounding (a missing or wrong factor is of the order of the output), and the verdict is logged.
void check_fp8_records(const std::vector<Record>& records, int o_bits) {
  for (const Record& r : records) {
    INFO(r.kernel << " errors " << r.errors.dump());
    REQUIRE(r.verified.has_value());
    if (r.kernel != "cudnn" || o_bits != 8 || *r.verified) {
      CHECK(*r.verified);
      continue;
    }
    const auto& o = r.errors.at("O");
    const auto& lse = r.errors.at("LSE");
    CHECK(lse.at("ref").get<double>() <= lse.at("bound").get<double>());
    const double e4m3_rounding = ulp_at(o.at("scale").get<double>(), Dtype::fp8) / 2;
    CHECK(o.at("ref").get<double>() <= o.at("bound").get<double>() + e4m3_rounding);
    WARN("cudnn fp8 " << r.c.key() << ": O error " << o.at("ref").get<double>() << " over the 2x-naive bound "
                      << o.at("bound").get<double>() << " (cuDNN's e4m3 O: half an ulp is " << e4m3_rounding << ")");
  }
}

}  // namespace

TEST_CASE("cudnn is a peer: listed, named only, forward and backward in fp16/bf16, fp8 forward", "[gpu][cudnn]") {
  const Descriptor& k = kernel("cudnn");
  CHECK(k.role == Role::peer);
  CHECK(k.runs_on(BackendId::cuda));
  CHECK_FALSE(k.runs_on(BackendId::cpu));
  CHECK(gpu().device().contains("cudnn_version"));
}

TEST_CASE("cudnn verifies against fp64: plain, causal square and bottom-right, GQA/MQA, decode", "[gpu][cudnn]") {
  // Backward shapes keep seq_k a multiple of 128 (cuDNN < 9.16 needs a workaround otherwise: see the
  // next test).
  const std::vector<Case> cases = {
      make_case(2, 8, 8, 256, 256, 64, Dtype::bf16, false, Pass::fwd_bwd),
      make_case(1, 8, 8, 384, 384, 128, Dtype::fp16, true, Pass::fwd_bwd),
      make_case(1, 8, 2, 128, 512, 128, Dtype::bf16, true, Pass::fwd_bwd),   // GQA 4:1, bottom-right causal
      make_case(1, 4, 4, 96, 256, 64, Dtype::fp16, true, Pass::fwd_bwd),     // causal, seq_q < seq_k, odd seq_q
      make_case(2, 16, 1, 200, 333, 64, Dtype::fp16, true, Pass::fwd),       // MQA, odd lengths
      make_case(1, 8, 8, 300, 300, 128, Dtype::bf16, false, Pass::fwd),
      make_case(4, 32, 8, 1, 4096, 128, Dtype::bf16, false, Pass::fwd),      // decode, GQA 32/8
      make_case(2, 32, 8, 1, 1000, 128, Dtype::fp16, true, Pass::fwd),       // decode, causal: the row sees all
      make_case(2, 64, 8, 4, 2048, 64, Dtype::bf16, true, Pass::fwd),        // 4 query rows, GQA 64/8
      make_case(1, 8, 2, 1, 1024, 128, Dtype::fp16, false, Pass::fwd_bwd),   // decode backward
      make_case(1, 8, 8, 256, 256, 64, Dtype::fp16, false, Pass::bwd),       // the backward alone
  };
  for (const Case& c : cases) {
    INFO("case " << c.key());
    require_verified(run_and_verify(c));
  }
}

TEST_CASE("cudnn backward with seq_k not a multiple of 128 (the padding-mask workaround before cuDNN 9.16)",
          "[gpu][cudnn]") {
  // On cuDNN < 9.16 the backward graph carries a padding mask at the full lengths (masks nothing):
  // without it that cuDNN is wrong here. Verified, or refused with cuDNN's reason.
  const std::vector<Case> cases = {
      make_case(1, 8, 8, 1000, 1000, 128, Dtype::bf16, false, Pass::fwd_bwd),
      make_case(1, 8, 2, 300, 333, 64, Dtype::fp16, true, Pass::fwd_bwd),     // GQA, bottom-right causal
      make_case(2, 4, 4, 200, 200, 128, Dtype::bf16, true, Pass::bwd),
      make_case(1, 16, 1, 64, 1000, 64, Dtype::fp16, false, Pass::fwd_bwd),   // MQA, seq_q < seq_k
  };
  for (const Case& c : cases) {
    INFO("case " << c.key());
    if (!cudnn_takes(c)) continue;
    require_verified(run_and_verify(c));
  }
}

TEST_CASE("cudnn at head_dim 256: verified where cuDNN has an engine, else refused with its reason",
          "[gpu][cudnn]") {
  for (const Pass pass : {Pass::fwd, Pass::fwd_bwd}) {
    const Case c = make_case(1, 4, 4, 512, 512, 256, Dtype::bf16, true, pass);
    INFO("case " << c.key());
    if (!cudnn_takes(c)) continue;
    require_verified(run_and_verify(c));
  }
}

TEST_CASE("cudnn refuses what its graph cannot express with a reason, and never crashes", "[gpu][cudnn]") {
  CudaBackend& b = gpu();
  const Descriptor& cudnn = kernel("cudnn");
  // Causal with seq_q > seq_k: rows with no key are outside cuDNN's bottom-right mask.
  check_refused(make_case(1, 4, 4, 256, 128, 64, Dtype::bf16, true, Pass::fwd), "seq_q <= seq_k");
  // Head dims off cuDNN's grid.
  check_refused(make_case(1, 4, 4, 128, 128, 36, Dtype::bf16, false, Pass::fwd), "head_dim");
  // The same shape asked twice answers the same (the reason is kept with the plan).
  const Case odd = make_case(1, 4, 4, 64, 1000, 64, Dtype::fp16, false, Pass::fwd_bwd);
  const auto first = b.check_fits(odd, cudnn);
  CHECK(first == b.check_fits(odd, cudnn));
  // fp32 is not in the descriptor: the runner's dtype check names it.
  CHECK(unsupported_reason(cudnn, make_case(1, 4, 4, 64, 64, 64, Dtype::fp32, false, Pass::fwd)).has_value());
}

TEST_CASE("cudnn: outputs it never writes fail verification (poison), the workspace is tracked",
          "[gpu][cudnn]") {
  const Case c = make_case(1, 8, 8, 256, 256, 64, Dtype::bf16, true, Pass::fwd_bwd);
  // The backward keeps an fp32 dQ accumulator in flashbench's workspace.
  CHECK(check_unwritten_fails(c) >= std::size_t(c.params().q_elems()) * sizeof(float));
}

// fp8 (e4m3 Q, K, V with per-tensor descales, O in bf16; kernels/attention.h): the same runner path
// and rule as above (naive's fp8 path the baseline, cudnn's O and LSE within 2x its error plus the
// floor). On Hopper cuDNN stores O in e4m3 and the kernel widens it: the log says which.
TEST_CASE("cudnn fp8 forward verifies against fp64: d 128 and 64, causal square, GQA; odd lengths, decode",
          "[gpu][cudnn]") {
  // Shapes cuDNN's FP8 engine must take on Hopper (d a multiple of 16, causal only where top-left and
  // bottom-right coincide).
  const std::vector<Case> cases = {
      make_case(2, 8, 8, 1024, 1024, 128, Dtype::fp8, false, Pass::fwd),
      make_case(1, 8, 8, 1024, 1024, 128, Dtype::fp8, true, Pass::fwd),   // causal square
      make_case(2, 8, 8, 512, 512, 64, Dtype::fp8, false, Pass::fwd),
      make_case(1, 8, 8, 768, 768, 64, Dtype::fp8, true, Pass::fwd),      // d 64, causal
      make_case(1, 16, 4, 512, 512, 128, Dtype::fp8, true, Pass::fwd),    // GQA 4:1, causal
      make_case(2, 8, 2, 256, 1024, 128, Dtype::fp8, false, Pass::fwd),   // GQA, seq_q < seq_k, no mask
  };
  CudaBackend& b = gpu();
  const int o_bits = cuda::cudnn_sdpa::fp8_o_bits(cases.front().params());
  WARN("cudnn " << cuda::cudnn_version() << ": fp8 O stored by cuDNN in "
                << (o_bits == 8 ? "e4m3 (widened to bf16)" : o_bits == 16 ? "bf16" : "? (no plan)"));
  for (const Case& c : cases) {
    INFO("case " << c.key());
    INFO("cudnn: " << b.check_fits(c, kernel("cudnn")).value_or("fits"));
    check_fp8_records(run_and_verify(c), o_bits);
  }
  // Decode, odd query lengths (seq_k 1008 is a multiple of 16, which naive's FP8 path needed before it
  // padded any length: kernels/naive/fp8_pad.h), and the configs/cudnn-fp8-h200.json shape where cuDNN's
  // Hopper engine races (cudnn_sdpa.cpp, fp8_race_shape; test_gpu_cudnn_fp8.cpp): verified where cudnn
  // takes them, else refused with the reason.
  for (const Case& c : {make_case(8, 16, 16, 2048, 2048, 128, Dtype::fp8, false, Pass::fwd),
                        make_case(8, 16, 16, 2048, 2048, 128, Dtype::fp8, true, Pass::fwd),
                        make_case(1, 8, 8, 200, 1008, 128, Dtype::fp8, false, Pass::fwd),
                        make_case(2, 16, 4, 333, 1008, 64, Dtype::fp8, false, Pass::fwd),  // GQA, d 64
                        make_case(4, 32, 8, 1, 4096, 128, Dtype::fp8, true, Pass::fwd)}) {  // the row sees all
    INFO("case " << c.key());
    if (!cudnn_takes(c)) continue;
    check_fp8_records(run_and_verify(c), o_bits);
  }
}

TEST_CASE("cudnn fp8 refuses what cuDNN's FP8 engine cannot do, naming why", "[gpu][cudnn]") {
  // Bottom-right causal with seq_q < seq_k: Hopper's FP8 engine masks top-left only.
  check_refused(make_case(1, 4, 4, 128, 512, 128, Dtype::fp8, true, Pass::fwd), "top-left");
  // seq_q > seq_k causal.
  check_refused(make_case(1, 4, 4, 512, 128, 128, Dtype::fp8, true, Pass::fwd));
  // A head dim off the FP8 grid (a multiple of 8 that the 16-bit graphs take).
  check_refused(make_case(1, 4, 4, 128, 128, 40, Dtype::fp8, false, Pass::fwd), "multiple of 16");
  // No fp8 backward.
  check_refused(make_case(1, 4, 4, 128, 128, 128, Dtype::fp8, false, Pass::fwd_bwd), "forward only");
  CHECK(cuda::cudnn_sdpa::fp8_o_bits(make_case(1, 4, 4, 128, 512, 128, Dtype::fp8, true, Pass::fwd).params()) == 0);
}

TEST_CASE("cudnn fp8: an O it never writes fails verification (poison), the e4m3 O is in the workspace",
          "[gpu][cudnn]") {
  const Case c = make_case(1, 8, 8, 512, 512, 128, Dtype::fp8, false, Pass::fwd);
  REQUIRE_FALSE(gpu().check_fits(c, kernel("cudnn")).has_value());
  // The e4m3 O cuDNN writes on Hopper lies in flashbench's workspace.
  const std::size_t ws = check_unwritten_fails(c);
  if (cuda::cudnn_sdpa::fp8_o_bits(c.params()) == 8) CHECK(ws >= std::size_t(c.params().q_elems()));
}

#else

TEST_CASE("cudnn in a build without cuDNN: listed, skipped with the reason", "[gpu][cudnn]") {
  const Descriptor& k = kernel("cudnn");
  CHECK(k.role == Role::peer);
  const Case c = make_case(1, 4, 4, 128, 128, 64, Dtype::bf16, false, Pass::fwd);
  const auto why = gpu().check_fits(c, k);
  REQUIRE(why.has_value());
  CHECK(why->find("built without cuDNN") != std::string::npos);
}

#endif

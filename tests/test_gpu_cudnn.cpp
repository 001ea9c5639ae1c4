// GPU tests [gpu][cudnn]: cuDNN's fused attention (the `cudnn` peer) through the normal runner path —
// outputs poisoned, run, then judged against the fp64 reference by the same rule as every kernel (its
// error at most 2x naive's, per tensor). gpu_main.cpp skips without a device; in a build without
// cuDNN the kernel must say so.
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "gpu_support.h"
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

TEST_CASE("cudnn is a peer: listed, named only, forward and backward in fp16/bf16", "[gpu][cudnn]") {
  const Descriptor& k = kernel("cudnn");
  CHECK(k.role == Role::peer);
  CHECK(k.runs_on(BackendId::cuda));
  CHECK_FALSE(k.runs_on(BackendId::cpu));
  CHECK(gpu().device().contains("cudnn_version"));
}

TEST_CASE("cudnn verifies against fp64: plain, causal square and bottom-right, GQA/MQA, decode", "[gpu][cudnn]") {
  // Backward shapes keep seq_k a multiple of 128 (cuDNN < 9.16 refuses others: see the next test).
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
    for (const Record& r : run_and_verify(c)) {
      INFO(r.kernel << " errors " << r.errors.dump());
      REQUIRE(r.verified.has_value());
      CHECK(*r.verified);
    }
  }
}

TEST_CASE("cudnn at head_dim 256: verified where cuDNN has an engine, else refused with its reason",
          "[gpu][cudnn]") {
  for (const Pass pass : {Pass::fwd, Pass::fwd_bwd}) {
    const Case c = make_case(1, 4, 4, 512, 512, 256, Dtype::bf16, true, pass);
    INFO("case " << c.key());
    CudaBackend& b = gpu();
    const auto why = b.check_fits(c, kernel("cudnn"));
    if (why) {
      WARN("cudnn refuses " << c.key() << ": " << *why);
      CHECK(why->find("cuDNN") != std::string::npos);
      continue;
    }
    for (const Record& r : run_and_verify(c)) {
      INFO(r.kernel << " errors " << r.errors.dump());
      REQUIRE(r.verified.has_value());
      CHECK(*r.verified);
    }
  }
}

TEST_CASE("cudnn refuses what its graph cannot express with a reason, and never crashes", "[gpu][cudnn]") {
  CudaBackend& b = gpu();
  const Descriptor& cudnn = kernel("cudnn");
  // Causal with seq_q > seq_k: rows with no key are outside cuDNN's bottom-right mask.
  auto why = b.check_fits(make_case(1, 4, 4, 256, 128, 64, Dtype::bf16, true, Pass::fwd), cudnn);
  REQUIRE(why.has_value());
  CHECK(why->find("seq_q <= seq_k") != std::string::npos);
  // Head dims off cuDNN's grid.
  why = b.check_fits(make_case(1, 4, 4, 128, 128, 36, Dtype::bf16, false, Pass::fwd), cudnn);
  REQUIRE(why.has_value());
  CHECK(why->find("head_dim") != std::string::npos);
  // The same shape asked twice answers the same (the reason is kept with the plan).
  const Case odd = make_case(1, 4, 4, 64, 1000, 64, Dtype::fp16, false, Pass::fwd_bwd);
  const auto first = b.check_fits(odd, cudnn);
  CHECK(first == b.check_fits(odd, cudnn));
  // fp32 is not in the descriptor: the runner's dtype check names it.
  CHECK(unsupported_reason(cudnn, make_case(1, 4, 4, 64, 64, 64, Dtype::fp32, false, Pass::fwd)).has_value());
}

TEST_CASE("cudnn: outputs it never writes fail verification (poison), the workspace is tracked",
          "[gpu][cudnn]") {
  CudaBackend& b = gpu();
  const Case c = make_case(1, 8, 8, 256, 256, 64, Dtype::bf16, true, Pass::fwd_bwd);
  b.prepare(c, kSeed);
  const Descriptor& cudnn = kernel("cudnn");
  REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
  // The backward keeps an fp32 dQ accumulator in flashbench's workspace.
  const std::size_t ws = cudnn.cuda.workspace_bytes(c.pass, c.params());
  CHECK(ws >= std::size_t(c.params().q_elems()) * sizeof(float));
  const KernelRun run = b.run(cudnn, 0, 0);  // poisoned, never run
  CHECK(run.peak_bytes >= ws);
  std::vector<Record> records{ok_record(c, "naive"), ok_record(c, "cudnn")};
  verify_case(b, records, builtin_kernels());
  REQUIRE(records[1].verified.has_value());
  CHECK_FALSE(*records[1].verified);
  b.release();
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

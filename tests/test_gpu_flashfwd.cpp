// GPU tests [gpu][flashfwd]: the portable flash forward (mma.sync) at bf16, d = 64 and 128, the cases whose
// kernel the timing probes swap (FB_FLASH_FWD_PROBE, kernels/flash/flash_fwd_config.h: e.g. `old`, session 7's
// 128 x 32 kernel at d = 128, also what GPUs with less shared memory a block run).
// The probe is read once per process, so a device call runs this binary once per probe setting; without
// the variable the shipped kernels run. gpu_main.cpp skips the tests without a device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "gpu_support.h"
#include "judge.h"
#include "registry.h"
#include "runner.h"

namespace {

using namespace fb::test;

using namespace fb;

constexpr std::uint64_t kSeed = 20261201;

// Lengths around the tiles (128 query rows; 32 or 64 keys, 2 or 3 stages): fewer KV tiles than
// stages, one tile, a diagonal that cuts a warp's 32 rows, seq_q != seq_k both ways (causal: rows and
// whole warps with no key, and warps whose first visible tile is not the block's), MQA/GQA/MHA, both masks.
std::vector<Case> flashfwd_cases() {
  struct Len {
    int q, k;
  };
  const Len lengths[] = {{1, 1},     {17, 17},   {33, 33},     {100, 100}, {129, 129}, {255, 257},
                         {1000, 1000}, {1025, 1025}, {300, 100}, {100, 1000}, {1000, 1}, {4099, 4099},
                         {200, 40}};
  const int heads[][2] = {{4, 1}, {4, 2}, {2, 2}};
  std::vector<Case> cases;
  int i = 0;
  for (int dim : {64, 128})
    for (const Len& l : lengths)
      for (bool causal : {false, true}) {
        cases.push_back(make_case(1 + i % 2, heads[i % 3][0], heads[i % 3][1], l.q, l.k, dim, Dtype::bf16,
                                  causal, Pass::fwd));
        ++i;
      }
  return cases;
}

// O and LSE of `name` are finite everywhere except the rows with no visible key (causal, seq_q > seq_k:
// the first seq_q - seq_k rows of each head), which hold exactly O = 0 and LSE = -inf. The backend
// fills outputs with NaN before a run: an element the kernel never wrote fails here.
void check_outputs_written(CudaBackend& b, const Case& c, const std::string& name) {
  const int empty = c.causal ? std::max(0, c.seq_q - c.seq_k) : 0;
  for (const HostTensor& t : b.fetch(name)) {
    const std::size_t width = t.name == "LSE" ? 1 : std::size_t(c.head_dim);
    const std::size_t rows = t.values.size() / width;
    INFO(name << " " << t.name << ", " << empty << " empty rows per head");
    REQUIRE(rows == std::size_t(c.batch) * c.heads * c.seq_q);
    std::size_t bad = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const bool is_empty = int(r % std::size_t(c.seq_q)) < empty;
      for (std::size_t x = 0; x < width; ++x) {
        const double v = t.values[r * width + x];
        bad += is_empty ? !(t.name == "LSE" ? v == -std::numeric_limits<double>::infinity() : v == 0.0)
                        : !std::isfinite(v);
      }
    }
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("flash forward, bf16 d 64/128 (the probed kernels): verifies beside naive, outputs all written",
          "[gpu][flashfwd]") {
  const char* probe = std::getenv("FB_FLASH_FWD_PROBE");
  INFO("FB_FLASH_FWD_PROBE=" << (probe ? probe : "(unset)"));
  CudaBackend& b = gpu();
  for (const Case& c : flashfwd_cases()) {
    INFO("case " << c.key());
    b.prepare(c, kSeed);
    std::vector<Record> records;
    for (const char* name : {"naive", "flash"}) {
      const auto why = b.check_fits(c, kernel(name));
      INFO(name << ": " << why.value_or("fits"));
      REQUIRE_FALSE(why.has_value());
      REQUIRE(b.run(kernel(name), 0, 1).times_ms.size() == 1);
      records.push_back(ok_record(c, name));
    }
    verify_case(b, records, builtin_kernels());
    for (const Record& r : records) {
      INFO(r.kernel << " errors " << r.errors.dump());
      REQUIRE(r.verified.has_value());
      CHECK(*r.verified);
      check_outputs_written(b, c, r.kernel);
    }
    b.release();
  }
}

// Sharp softmax: Q and K scaled by 3 (scores by 9), so a row's running max climbs by many powers of two
// across its KV tiles, not only on the first: the lazy rescale's moves after the first tile (and the
// eager rescale) have to be right for O and LSE to verify.
TEST_CASE("flash forward, bf16 d 64/128, sharp softmax (Q, K x 3): verifies beside naive",
          "[gpu][flashfwd]") {
  const char* probe = std::getenv("FB_FLASH_FWD_PROBE");
  INFO("FB_FLASH_FWD_PROBE=" << (probe ? probe : "(unset)"));
  CudaBackend& b = gpu();
  struct Len {
    int q, k;
  };
  const Len lengths[] = {{1025, 1025}, {4099, 4099}, {300, 1000}};
  for (int dim : {64, 128})
    for (const Len& l : lengths)
      for (bool causal : {false, true}) {
        const Case c = make_case(1, 4, 2, l.q, l.k, dim, Dtype::bf16, causal, Pass::fwd);
        INFO("case " << c.key());
        b.prepare(c, kSeed, 3.0);
        std::vector<Record> records;
        for (const char* name : {"naive", "flash"}) {
          REQUIRE_FALSE(b.check_fits(c, kernel(name)).has_value());
          REQUIRE(b.run(kernel(name), 0, 1).times_ms.size() == 1);
          records.push_back(ok_record(c, name));
        }
        verify_case(b, records, builtin_kernels());
        for (const Record& r : records) {
          INFO(r.kernel << " errors " << r.errors.dump());
          REQUIRE(r.verified.has_value());
          CHECK(*r.verified);
          check_outputs_written(b, c, r.kernel);
        }
        b.release();
      }
}

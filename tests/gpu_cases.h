// What the GPU accuracy tests do the same way on a prepared case (tests/gpu_support.h's backend): run
// kernels once each, judge them by the runner's own rule against the fp64 reference (verify_case), and
// look at every element they wrote. The backend fills every output with NaN before a run, so an element
// a kernel leaves unwritten fails verification and check_written.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "gpu_support.h"
#include "runner.h"

namespace fb::test {

// The lengths of a case's axes in the case lists: seq_q, seq_k.
struct SeqLens {
  int q, k;
};

// Runs each kernel of `names` once (no warm-up) on the case `c` the backend holds, and returns a record
// for each that ran. A kernel check_fits refuses is skipped after refused(name, why), which asserts
// whether that refusal is allowed (the reason is in the message of any assertion it makes).
template <typename Refused>
std::vector<Record> run_each(CudaBackend& b, const Case& c, std::initializer_list<const char*> names,
                             Refused refused) {
  std::vector<Record> records;
  for (const char* name : names) {
    const Descriptor& k = kernel(name);
    if (const auto why = b.check_fits(c, k)) {
      INFO(name << ": " << *why);
      refused(std::string(name), *why);
      continue;
    }
    REQUIRE(b.run(k, 0, 1).times_ms.size() == 1);
    records.push_back(ok_record(c, name));
  }
  return records;
}

// A refusal no kernel may give: every kernel named must run the shape.
inline void never_refused(const std::string& name, const std::string& why) {
  FAIL(name << " refused a shape every kernel must run: " << why);
}

// The one refusal allowed where the shape is in flash-sm90's range: flash-sm90's, off Hopper or in a
// build without sm_90a code (never for the shape: shared memory, head dim, lengths).
inline void only_sm90_off_hopper(const std::string& name, const std::string& why) {
  REQUIRE(name == "flash-sm90");
  CHECK((why.find("compute capability 9.0") != std::string::npos || why.find("sm_90a") != std::string::npos));
  WARN("flash-sm90 not run: " << why);
}

// Each of `records` (judged: verify_case has run) verified; then(record) after each, under its errors.
template <typename Then>
void require_verified(const std::vector<Record>& records, Then then) {
  for (const Record& r : records) {
    INFO(r.kernel << " errors " << r.errors.dump());
    REQUIRE(r.verified.has_value());
    CHECK(*r.verified);
    then(r);
  }
}
inline void require_verified(const std::vector<Record>& records) {
  require_verified(records, [](const Record&) {});
}

// Judges the runs of `records` on the case the backend holds by the runner's rule, then as above.
template <typename Then>
void verify_and_check(CudaBackend& b, std::vector<Record>& records, Then then) {
  verify_case(b, records, builtin_kernels());
  require_verified(records, then);
}
inline void verify_and_check(CudaBackend& b, std::vector<Record>& records) {
  verify_and_check(b, records, [](const Record&) {});
}

// Which tensors check_written looks at: every output of the run, or the gradients dQ, dK, dV only.
enum class Tensors { outputs, gradients };

namespace detail {
inline void check_written(CudaBackend& b, const std::string& name, Tensors which, const Case* c) {
  // With the case: query rows with no visible key (causal, seq_q > seq_k: the first seq_q - seq_k rows of
  // each head) must hold exactly O = 0, LSE = -inf and dQ = 0; every other element is finite.
  const int empty = c != nullptr && c->causal ? std::max(0, c->seq_q - c->seq_k) : 0;
  for (const HostTensor& t : b.fetch(name)) {
    const bool key_rows = t.name == "dK" || t.name == "dV";  // no row of these is empty
    if (which == Tensors::gradients && !key_rows && t.name != "dQ") continue;
    INFO(name << " " << t.name << ", " << empty << " empty rows per head");
    const bool by_query_row = c != nullptr && !key_rows;
    const std::size_t width = t.name == "LSE" || c == nullptr ? 1 : std::size_t(c->head_dim);
    if (by_query_row) REQUIRE(t.values.size() / width == std::size_t(c->batch) * c->heads * c->seq_q);
    std::size_t bad = 0;
    for (std::size_t x = 0; x < t.values.size(); ++x) {
      const double v = t.values[x];
      const bool empty_row = by_query_row && int(x / width % std::size_t(c->seq_q)) < empty;
      const bool ok = !empty_row          ? std::isfinite(v)
                      : t.name == "LSE" ? v == -std::numeric_limits<double>::infinity()
                                          : v == 0.0;
      bad += !ok;
    }
    CHECK(bad == 0);
  }
}
}  // namespace detail

// Every element of `name`'s outputs (or gradients) on the case the backend holds is finite.
inline void check_written(CudaBackend& b, const std::string& name, Tensors which) {
  detail::check_written(b, name, which, nullptr);
}
// The same, except that the rows of `c` that see no key hold exactly O = 0, LSE = -inf, dQ = 0.
inline void check_written(CudaBackend& b, const std::string& name, Tensors which, const Case& c) {
  detail::check_written(b, name, which, &c);
}

// A `then` for verify_and_check: check_written on each record's kernel, the rows of `c` with no key included.
inline auto each_written(CudaBackend& b, const Case& c, Tensors which) {
  return [&b, &c, which](const Record& r) { check_written(b, r.kernel, which, c); };
}

// naive and flash-sm90 on `c` (flash-sm90 refused only off Hopper), both verified; then(record) after
// each. The shape of the backward tests of flash-sm90 at every head dim and head layout.
template <typename Then>
void check_sm90_beside_naive(CudaBackend& b, const Case& c, std::uint64_t seed, Then then) {
  b.prepare(c, seed);
  std::vector<Record> records = run_each(b, c, {"naive", "flash-sm90"}, only_sm90_off_hopper);
  verify_and_check(b, records, then);
  b.release();
}

// As check_sm90_beside_naive, with flash-sm90's verified run after `warmup` untimed ones, so that state a run leaves
// behind (a workspace accumulator, a tile counter) shows in the run verified. Returns whether flash-sm90 ran (false:
// refused off Hopper).
template <typename Then>
bool check_sm90_repeated_beside_naive(CudaBackend& b, const Case& c, std::uint64_t seed, int warmup, Then then) {
  b.prepare(c, seed);
  std::vector<Record> records;
  REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
  records.push_back(ok_record(c, "naive"));
  const Descriptor& k = kernel("flash-sm90");
  const auto why = b.check_fits(c, k);
  if (why) {
    only_sm90_off_hopper("flash-sm90", *why);
  } else {
    REQUIRE(b.run(k, warmup, 1).times_ms.size() == 1);
    records.push_back(ok_record(c, "flash-sm90"));
  }
  verify_and_check(b, records, then);
  b.release();
  return !why;
}

// naive and `name` on `c`, inputs drawn with `seed` and scaled by `input_scale` (scores by its square),
// both run (neither may be refused) and verified; every element they wrote checked, the rows of `c` with
// no key included. The shape of the forward tests of one kernel beside naive.
inline void check_beside_naive(CudaBackend& b, const Case& c, const char* name, std::uint64_t seed,
                               double input_scale = 1.0) {
  b.prepare(c, seed, input_scale);
  std::vector<Record> records = run_each(b, c, {"naive", name}, never_refused);
  verify_and_check(b, records, each_written(b, c, Tensors::outputs));
  b.release();
}

}  // namespace fb::test

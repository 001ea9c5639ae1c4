// When timing stops (backend/timing): fixed counts, the adaptive rule (min time, noise target, cap),
// and a backend that follows it.
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/timing.h"
#include "catch.h"
#include "registry.h"

using namespace fb;

TEST_CASE("timing: a fixed policy takes exactly reps samples", "[timing]") {
  TimingPolicy p;
  p.reps = 5;
  REQUIRE_FALSE(p.adaptive());
  CHECK(next_batch(p, {}, 0) == 5);
  CHECK(next_batch(p, {1, 1}, 0) == 3);
  CHECK(next_batch(p, {1, 1, 1, 1, 1}, 0) == 0);
  CHECK(next_batch(p, std::vector<double>(5, 1.0), 1e6) == 0);  // time does not matter
  CHECK(p.to_json()["mode"] == "fixed");
}

TEST_CASE("timing: noise is the coefficient of variation in percent", "[timing]") {
  CHECK(noise_pct({}) == 0);
  CHECK(noise_pct({3}) == 0);
  CHECK(noise_pct({2, 2, 2}) == 0);
  // mean 2, sample stddev sqrt(2): 70.7%
  CHECK(std::abs(noise_pct({1, 3}) - 100 * std::sqrt(2.0) / 2) < 1e-9);
}

TEST_CASE("timing: adaptive sampling stops on min time and noise, or at the cap", "[timing]") {
  TimingPolicy p;
  p.reps = 3;
  p.min_time_s = 0.010;  // 10 ms
  p.max_noise_pct = 1;
  REQUIRE(p.adaptive());
  CHECK(p.time_cap_s() == kDefaultMaxTimeS);
  CHECK(next_batch(p, {}, 0) == 3);  // the minimum first

  const std::vector<double> quiet(3, 1.0);  // 3 ms so far, no noise
  // 7 ms of kernel time to go at 1 ms each: a batch of 7.
  CHECK(next_batch(p, quiet, 0.003) == 7);
  CHECK(next_batch(p, std::vector<double>(10, 1.0), 0.010) == 0);  // long enough and quiet

  std::vector<double> noisy(10, 1.0);
  noisy[0] = 3.0;  // CV well over 1%
  CHECK(next_batch(p, noisy, 0.012) >= 1);  // long enough, still noisy: more
  CHECK(next_batch(p, noisy, p.time_cap_s()) == 0);  // the cap ends it

  // The batch never asks for more than the cap still allows at the wall time per sample so far.
  p.max_time_s = 0.020;
  CHECK(next_batch(p, quiet, 0.015) == 1);  // 5 ms/sample, 5 ms left: one more
  const auto j = p.to_json();
  CHECK(j["mode"] == "adaptive");
  CHECK(j["min_reps"] == 3);
  CHECK(j["max_time_s"] == 0.020);
}

TEST_CASE("timing: the CPU backend follows the policy", "[timing]") {
  cpu::BackendOptions opts;
  opts.threads = 1;
  auto backend = cpu::make_cpu_backend(opts);
  Case c;
  c.set_seq(32);
  c.head_dim = 32;
  backend->prepare(c, 1);
  TimingPolicy p;
  p.warmup = 0;
  p.reps = 2;
  CHECK(backend->run(*find_kernel("flash"), p).times_ms.size() == 2);
  p.min_time_s = 0.005;
  p.max_time_s = 5;
  const KernelRun run = backend->run(*find_kernel("flash"), p);
  double sum = 0;
  for (double t : run.times_ms) sum += t;
  CHECK(run.times_ms.size() > 2);
  CHECK(sum >= 5.0);  // ms: it stopped on min time, not before
}

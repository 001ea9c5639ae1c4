// When a backend stops timing a kernel: a fixed number of repetitions, or (adaptive, as nvbench does)
// until the samples' relative noise is under a target after a minimum time, or a time budget runs out.
// Backends own their timers; this decides only how many more samples to take.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/rep_order.h"

namespace fb {

// Default time-based warm-up on a GPU (seconds of kernel runs before timing).
inline constexpr double kDefaultWarmupS = 0.1;

struct TimingPolicy {
  int warmup = 3;  // untimed runs first
  int reps = 10;   // fixed mode: exactly this many; adaptive: at least this many
  // Adaptive when any of these is set (> 0). Noise is the coefficient of variation, stddev / mean of
  // the samples (what compare's noise band and the table's noise column use too).
  double min_time_s = 0;     // keep sampling until the samples add up to this much kernel time
  double max_noise_pct = 0;  // ... and the noise is at most this (0: no noise target)
  double max_time_s = 0;     // stop once this much wall time went by in timed runs (0: kDefaultMaxTime)
  // CUDA: after the warm-up runs, keep the device busy until it has run this long. An H200 that idled
  // between cases (inputs drawn, buffers allocated) comes back at lower clocks and steps up over
  // ~50-100 ms: 20 reps of a 3 ms kernel straight after idle drift 12% down the staircase
  // (results/h200/gate-study.json). 0 turns it off; the CPU backend has no such ramp and ignores it.
  double warmup_min_s = kDefaultWarmupS;
  RepOrder rep_order = RepOrder::blocked;  // the runner's choice: a backend times what it is handed

  bool adaptive() const { return min_time_s > 0 || max_noise_pct > 0 || max_time_s > 0; }
  // The cap on wall time in adaptive mode: max_time_s, or kDefaultMaxTimeS when not given.
  double time_cap_s() const;
  // {"mode": "fixed", warmup, reps} or {"mode": "adaptive", warmup, min_reps, min_time_s, ...}.
  nlohmann::json to_json() const;
};

// nvbench's default timeout: a case that never gets quiet stops here.
inline constexpr double kDefaultMaxTimeS = 15.0;
// Samples a batch takes at most when the policy extends sampling: bounds the per-batch event memory
// and how far past a target the last batch may run.
inline constexpr int kMaxBatch = 1000;

// Coefficient of variation in percent (100 * sample stddev / mean); 0 for fewer than two samples.
double noise_pct(const std::vector<double>& times_ms);

// How many more timed samples to take, given those taken so far (ms each) and the wall time spent in
// timed runs; 0 means stop. In fixed mode: reps - taken. Adaptive: the missing minimum first, then a
// batch sized to reach min_time (at least 1, at most kMaxBatch and what the time cap still allows).
int next_batch(const TimingPolicy& policy, const std::vector<double>& times_ms, double elapsed_s);

// Interleaved reps: how many more rounds to take, given each kernel's samples so far and the wall time
// spent in timed rounds: the most any kernel's next_batch asks for, each kernel charged its share of the
// wall time (elapsed_s / kernels). One kernel: next_batch itself (blocked timing is one kernel's rounds).
int next_rounds(const TimingPolicy& policy, const std::vector<std::vector<double>>& times_ms, double elapsed_s);

// The kernels' order (indices 0 .. kernels - 1) in round `round` of interleaved reps: a Williams design
// (kernels rows, 2 x kernels for an odd count, then cycled): over its rows each kernel takes each place
// equally often and follows each other kernel equally often. scripts/peers.py's round_order gives the same.
std::vector<int> round_order(int kernels, long long round);

}  // namespace fb

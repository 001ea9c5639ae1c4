// Drives a Sweep over a Backend: for each case x kernel, measure, verify, and produce a Record.
// Never formats output; a case that cannot run becomes a skipped/failed Record and the sweep goes on.
#pragma once

#include <functional>

#include "backend/backend.h"
#include "record.h"
#include "spec.h"

namespace fb {

struct Progress {
  std::size_t index = 0;  // 1-based case number
  std::size_t total = 0;
  double elapsed_s = 0;
  double eta_s = 0;
  const Case* c = nullptr;
};

struct RunnerOptions {
  const KernelSet* kernels = nullptr;             // the names a sweep may use (null: active_kernels())
  std::function<void(const Progress&)> on_case;  // called before each case
  std::function<bool()> stop_requested;          // checked between cases
  std::function<void(const std::vector<Record>&)> on_case_done;  // a case's records, as it finishes
  // After a case is measured and verified, while its inputs and outputs are still held (--dump).
  std::function<void(const Case&, Backend&, const std::vector<Record>&)> before_release;
  // Adaptive timing targets (TimingPolicy's min_time_s, max_noise_pct, max_time_s); warm-up and reps
  // come from the sweep. All zero: a fixed rep count.
  TimingPolicy timing;
};

// Sets each ok record's roofline from measured ceilings {"gemm_bf16_tflops", "copy_gbps"} and keeps
// the ceilings in results.device["ceilings"].
void attach_ceilings(Results& results, const nlohmann::json& ceilings);

// Runs the sweep; fills Results.records (and settings/spec/backend/device).
Results run_sweep(const Sweep& sweep, Backend& backend, const RunnerOptions& opts = {});

// Errors and verdicts for one case (records of that case, same order as kernels), by the rule in
// judge.h; `kernels` tells which record is the baseline.
void verify_case(Backend& backend, std::vector<Record>& records, const KernelSet& kernels);

}  // namespace fb

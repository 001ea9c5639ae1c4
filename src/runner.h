// Drives a Sweep over a Backend: for each case x kernel, measure, verify, and produce a Record.
// Never formats output; a case that cannot run becomes a skipped/failed Record and the sweep goes on,
// except after the backend lost its context (see RunnerOptions::on_context_lost): then every case
// left still gets its Records, `skipped` with the reason.
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
  // When the backend loses its context (Backend::context_lost: a kernel fault on a GPU), the sweep
  // stops there: the case it happened in is finished as far as it can be and handed to on_case_done;
  // every later case is recorded `skipped`, with `rerun_hint` in its reason, and not handed on (a
  // journal then holds exactly the cases that need no second run). on_context_lost is told once:
  // what lost the context, in which case, and how many cases were left unrun.
  std::function<void(const std::string& why, const Case& c, std::size_t cases_not_run)> on_context_lost;
  std::string rerun_hint = "run the sweep again to measure it";
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

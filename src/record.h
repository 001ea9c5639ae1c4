// Results are data: one Record per (case, kernel), and the run's metadata. This file and record.cpp
// are the only place the results JSON schema is written and read (README "Results JSON" documents it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case.h"

namespace fb {

// 1.1: `complete` (false when a run was interrupted).
inline constexpr const char* kSchemaVersion = "1.1.0";

enum class Status { ok, skipped, failed };
std::string_view to_string(Status s);
std::optional<Status> parse_status(std::string_view s);

struct TimeStats {
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;  // milliseconds
  int reps = 0;
  double mad = 0;  // median absolute deviation from the median (robust spread; ms)
  std::vector<double> samples;  // every timed rep, in run order (empty in files before 1.1)
};
TimeStats summarize(const std::vector<double>& times_ms);
// The median of v (the mean of the middle two for an even count; 0 for none).
double median_of(std::vector<double> v);

// The trend across a timing's reps (in run order): the median of the second half of them over the median of the
// first half, less 1 (with an odd count the middle rep is in neither); NaN with fewer than kDriftMinReps reps. A
// timing whose GPU is still changing state, e.g. its clock falling under the power cap after lighter work ran
// before it, drifts; a steady one stays within its noise. scripts/fbresults.py rep_drift() is the same rule.
inline constexpr int kDriftMinReps = 6;
inline constexpr double kDriftWarn = 0.03;  // run's summary names the timings that drifted further
double rep_drift(const std::vector<double>& samples);

struct Record {
  Case c;
  std::string kernel;
  Status status = Status::ok;
  std::string reason;  // why skipped/failed; empty when ok
  TimeStats time_ms;
  double flops = 0, tflops = 0;
  double bytes_moved = 0, gbps = 0;  // modelled bytes and achieved GB/s (1e9 bytes/s)
  std::uint64_t peak_bytes = 0;
  std::optional<int> kv_splits;  // split-KV kernels: splits run (case.splits, or auto resolved)
  std::optional<double> max_abs_diff;     // vs naive (flash rows only)
  std::optional<double> ref_max_abs_err;  // vs fp64 reference, max over output tensors
  std::optional<bool> verified;
  nlohmann::json errors = nlohmann::json::object();  // per tensor {"O": {"ref": .., "naive": ..}, ...}
  // Against the device's measured ceilings, when the run measured them (CUDA):
  // {"pct_of_gemm_peak": tflops / cuBLAS bf16 GEMM peak, "pct_of_copy_bandwidth": gbps / copy GB/s}.
  nlohmann::json roofline = nlohmann::json::object();
  // The SM clock while the timed reps ran, where the backend reads it (CUDA through NVML; clock_report):
  // {"sm_mhz_min": lowest reading, "event_reasons": [names], "event_reasons_mask": bits}.
  nlohmann::json clocks = nlohmann::json::object();
};

// Record::clocks from a run's readings (empty when it has none): the event reasons' names as nvml.h calls them
// (nvmlClocksEventReasons), "gpu_idle" left out (a reading between reps); unnamed bits stay in the mask only.
nlohmann::json clock_report(std::optional<unsigned> sm_mhz_min, std::optional<std::uint64_t> event_reasons);

struct Results {
  std::string schema_version = kSchemaVersion;
  nlohmann::json tool = nlohmann::json::object();      // {name, version, git}
  std::string created;                                 // ISO 8601 UTC
  std::string backend;                                 // "cpu" | "cuda"
  nlohmann::json device = nlohmann::json::object();
  nlohmann::json spec = nlohmann::json::object();      // as given
  nlohmann::json settings = nlohmann::json::object();  // {warmup, reps, seed, verify, ...}
  bool complete = true;  // false: the run was stopped before its last case (files before 1.1: true)
  std::vector<Record> records;
};

nlohmann::json to_json(const Record& r);
nlohmann::json to_json(const Results& r);
// Throws std::runtime_error naming the field on malformed input.
Record record_from_json(const nlohmann::json& j);
Results results_from_json(const nlohmann::json& j);
Results load_results(const std::string& path);  // throws std::runtime_error with path and reason
// The FB_* kernel settings a run recorded (settings.env: {name: value}) on one line, "FB_A=x FB_B=y"; "none" where
// there are none (or the field is not an object).
std::string env_line(const nlohmann::json& env);

// Writes atomically: a temporary file in the same folder, then rename.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace fb

// The subcommands, as functions of their options. main.cpp only wires CLI11 to these.
// Each returns the process exit code: 0 ok, 1 verification failure or regression, 2 usage/spec/input,
// 3 (run, verify) a kernel fault lost the device's context: the results hold every case, those after
// the fault `skipped`, and `run --resume` measures them in a new process.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fb {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitContextLost = 3;

class Backend;

struct RunOptions {
  std::vector<std::string> argv;  // the command line, kept in results.settings for reproduction
  std::vector<std::string> kernel_libs;  // plug-in libraries whose kernels join the built-ins
  std::string spec_path;
  std::string json_out;  // empty: no JSON file
  std::string csv_out;   // empty: no CSV file
  std::string backend = "auto";
  std::optional<int> device;  // CUDA device; refused on the CPU backend, which has none
  bool quiet = false;
  bool resume = false;  // skip the cases already in the journal next to --output
  bool fresh = false;   // replace an unfinished run's journal instead of refusing to start
  std::string shard;    // "I/N": run every N-th case starting at I
  std::vector<int> devices;  // one worker process per device, each a shard; merged at the end
  std::string dump_dir;      // write each case's inputs and outputs as .npy here
  bool no_ceilings = false;  // CUDA: skip measuring copy bandwidth and GEMM peak before the sweep
  // Overrides of the spec, recorded in results.settings.overrides.
  std::optional<int> warmup, reps;
  std::vector<std::string> kernels;  // replaces spec.kernels
  std::vector<int> splits;           // replaces spec.splits (split-KV kernels; 0 = auto)
  std::string filter;                // regex (ECMAScript, searched) on case keys
  bool list = false;                 // print the cases and each kernel's memory; run nothing
  bool interleave = false;           // replaces spec.rep_order with "interleaved"
  // NAME=KERNEL:VAR=VALUE[:VAR=VALUE...]: KERNEL under those kernel settings as a kernel of its own (make_variant),
  // run right after KERNEL (or where --kernels names it); recorded in results.settings.variants.
  std::vector<std::string> variants;
  // Adaptive timing (TimingPolicy); all 0: fixed reps.
  double min_time_s = 0, max_noise_pct = 0, max_time_s = 0;
  double warmup_time_s = 0.1;  // CUDA: time-based warm-up after the warm-up reps (TimingPolicy)
};
// `backend`: where to run; null makes the one o.backend and o.device name (tests pass their own).
int run_command(const RunOptions& o, Backend* backend = nullptr);

struct VerifyOptions {
  std::vector<std::string> argv;
  std::vector<std::string> kernel_libs;
  std::optional<int> seq, seq_q, seq_k;  // --seq sets both; --seq-q/--seq-k override one
  std::optional<int> batch, heads, kv_heads, dim;
  std::string dtype = "all";   // fp64|fp32|fp16|bf16|all
  std::string causal = "both"; // yes|no|both
  std::string pass = "fwd";    // fwd|bwd|all
  double input_scale = 1.0;    // Q, K = scale x normal: scores grow as its square
  std::string backend = "auto";
  std::optional<int> device;
  std::string json_out;
  std::string dump_dir;
  bool quiet = false;
};
int verify_command(const VerifyOptions& o);

struct CompareCliOptions {
  std::vector<std::string> files;  // base runs (oldest first), then the new run
  std::string confirm;             // optional re-measure of the suspects
  std::string suspects_out;        // write the regressed case keys as a --filter regex
  bool force = false;
  double max_slowdown = 0.05;
  std::optional<double> max_error;
  std::string format = "table";
};
int compare_command(const CompareCliOptions& o);

struct InfoOptions {
  std::vector<std::string> kernel_libs;
  std::string backend = "auto";
  std::optional<int> device;
  bool ceilings = false;
  bool json = false;
};
int info_command(const InfoOptions& o);

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string out;
  bool force = false;  // allow different devices / spec versions
};
int merge_command(const MergeOptions& o);

}  // namespace fb

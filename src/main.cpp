// flashbench: CLI11 wiring only; the subcommands live in commands.cpp.
#include <cmath>
#include <iostream>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "registry.h"
#include "spec.h"
#include "version.h"

namespace {

// CLI11's PositiveNumber and Range print their bounds as full doubles (DBL_MAX in 309 digits); these
// say in words what is allowed. CLI11 puts the option's name in front: "--seq: must be ...".
CLI::Validator int_at_least(long long low) {
  return CLI::Validator(
      [low](std::string& s) -> std::string {
        long long v = 0;
        std::size_t used = 0;
        try {
          v = std::stoll(s, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != s.size()) return "expected a whole number, got '" + s + "'";
        if (v < low) return "must be at least " + std::to_string(low) + ", got " + s;
        return std::string();
      },
      "INT>=" + std::to_string(low));
}

// A number in (low, high] or [low, high]; `what` says the range in words ("a positive number").
CLI::Validator number_in(double low, bool low_open, double high, const std::string& what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        double v = 0;
        std::size_t used = 0;
        try {
          v = std::stod(s, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != s.size() || !std::isfinite(v)) return "expected a number, got '" + s + "'";
        if (low_open ? !(v > low) : !(v >= low)) return "must be " + what + ", got " + s;
        if (!(v <= high)) return "must be " + what + ", got " + s;
        return std::string();
      },
      "NUMBER");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flashbench: naive vs FlashAttention kernels, measured and verified"};
  app.set_version_flag("--version", std::string("flashbench ") + FLASHBENCH_VERSION + " (git " +
                                        FLASHBENCH_GIT + ")");
  app.require_subcommand(1);
  const std::string backend_help = "where kernels run: auto (CUDA if a GPU is visible, else CPU), cuda, cpu";
  const std::vector<std::string> backends = {"auto", "cuda", "cpu"};

  constexpr double kNoLimit = std::numeric_limits<double>::max();
  fb::RunOptions run;
  auto* run_cmd = app.add_subcommand("run", "run a JSON sweep spec: every case x kernel, timed and verified");
  run_cmd->add_option("spec", run.spec_path, "sweep spec (JSON), e.g. configs/quick.json")->required();
  run_cmd->add_option("-o,--output", run.json_out, "write results JSON here");
  run_cmd->add_option("--csv", run.csv_out, "write results CSV here");
  run_cmd->add_option("--backend", run.backend, backend_help)->check(CLI::IsMember(backends));
  run_cmd->add_option("--device", run.device, "CUDA device index (CUDA backend only)")->check(int_at_least(0));
  run_cmd->add_flag("-q,--quiet", run.quiet, "no table on stdout, no progress on stderr");
  run_cmd->add_flag("--resume", run.resume,
                    "continue an interrupted run: skip the cases in OUTPUT.journal.jsonl (needs -o)");
  run_cmd->add_flag("--fresh", run.fresh,
                    "start over even though OUTPUT.journal.jsonl holds an unfinished run (it is replaced)");
  run_cmd->add_option("--shard", run.shard,
                      "I/N: run only cases whose index % N == I (0 <= I < N), e.g. one per Slurm array task");
  run_cmd->add_flag("--no-ceilings", run.no_ceilings,
                    "CUDA: do not measure copy bandwidth and GEMM peak first (results then carry no roofline %)");
  run_cmd->add_option("--dump", run.dump_dir, "write each case's inputs and outputs as .npy files here");
  run_cmd->add_option("--devices", run.devices,
                      "run one worker process per listed CUDA device (each a shard), then merge")
      ->delimiter(',')
      ->check(int_at_least(0));
  run_cmd->add_option("--warmup", run.warmup, "untimed runs before timing (overrides spec.warmup)")
      ->check(int_at_least(0));
  run_cmd->add_option("--reps", run.reps,
                      "timed runs per kernel (overrides spec.reps); with adaptive timing, the minimum")
      ->check(int_at_least(1));
  run_cmd->add_option("--kernels", run.kernels, "kernels to run, e.g. naive,flash (overrides spec.kernels)")
      ->delimiter(',');
  run_cmd->add_option("--splits", run.splits,
                      "KV splits of split-KV kernels (flash-decode), e.g. 0,4,16 with 0 = auto (overrides spec.splits)")
      ->delimiter(',');
  run_cmd->add_option("--filter", run.filter,
                      "run only cases whose key matches this regular expression (ECMAScript, searched), "
                      "e.g. 'n4096' or 'bf16-causal'; --list shows the keys");
  run_cmd->add_flag("--list", run.list,
                    "print the cases and the memory each kernel would need, then stop (nothing runs or is written)");
  run_cmd->add_option("--min-time", run.min_time_s,
                      "adaptive timing: sample until the timed runs add up to this many seconds of kernel time")
      ->check(number_in(0, true, kNoLimit, "a positive number of seconds"));
  run_cmd->add_option("--max-noise", run.max_noise_pct,
                      "adaptive timing: ... and their noise (stddev/mean, %) is at most this, e.g. 0.5")
      ->check(number_in(0, true, 100, "a percentage in (0, 100]"));
  run_cmd->add_option("--max-time", run.max_time_s,
                      "adaptive timing: stop a kernel after this many seconds of timed runs (default 15 when "
                      "--min-time or --max-noise is given)")
      ->check(number_in(0, true, kNoLimit, "a positive number of seconds"));
  run_cmd->add_flag("--interleave", run.interleave,
                    "take a case's kernels' timed reps in turn, a round of one rep each, the rounds' orders "
                    "balanced (overrides spec.rep_order: 'interleaved'); scripts/paired.py pairs them rep by rep");
  run_cmd->add_option("--variant", run.variants,
                      "NAME=KERNEL:VAR=VALUE[:VAR=VALUE...]: KERNEL again as kernel NAME, under those FB_* kernel "
                      "settings (its probe words), right after KERNEL in every case (repeatable; with --interleave "
                      "an A/B in one process)")
      ->allow_extra_args(false);
  run_cmd->add_option("--warmup-time", run.warmup_time_s,
                      "CUDA: after the warm-up runs, keep running until this many seconds passed (clocks "
                      "step up after idle; default 0.1, 0 for none)")
      ->check(number_in(0, false, 60, "0 to 60 seconds"));
  const std::string lib_help =
      "load kernels from this plug-in library (repeatable; include/flashbench/plugin.h): specs and "
      "--kernels then name them like built-in kernels";
  run_cmd->add_option("--kernel-lib", run.kernel_libs, lib_help)->allow_extra_args(false);
  run_cmd->footer("kernels: " + fb::kernel_names() + " (and those of --kernel-lib libraries)\n" +
                  "exit codes: 0 ok, 1 a kernel failed or failed verification, 2 bad spec or flags, 3 a kernel "
                  "fault lost the CUDA context (the cases after it are recorded skipped; --resume runs them)");

  fb::VerifyOptions ver;
  auto* ver_cmd = app.add_subcommand(
      "verify", "flash vs naive vs an fp64 reference; exit 1 if any check fails, 3 if a kernel fault lost the "
                "CUDA context");
  ver_cmd->add_option("--seq", ver.seq, "sequence length N (seq_q = seq_k = N)")->check(int_at_least(1));
  ver_cmd->add_option("--seq-q", ver.seq_q, "query rows (default --seq; e.g. 1 for decode)")
      ->check(int_at_least(1));
  ver_cmd->add_option("--seq-k", ver.seq_k, "key rows (default --seq)")->check(int_at_least(1));
  ver_cmd->add_option("--batch", ver.batch, "batch (default 1)")->check(int_at_least(1));
  ver_cmd->add_option("--heads", ver.heads, "heads (default: 32 on a GPU, 1 on the CPU)")
      ->check(int_at_least(1));
  ver_cmd->add_option("--kv-heads", ver.kv_heads, "K/V heads for GQA (default: heads)")
      ->check(int_at_least(1));
  ver_cmd->add_option("--dim", ver.dim, "head dim (default: 128 on a GPU, 64 on the CPU)")
      ->check(int_at_least(1));
  std::vector<std::string> dtype_choices = fb::spec_dtype_names();
  dtype_choices.push_back("all");
  ver_cmd->add_option("--dtype", ver.dtype, "fp64|fp32|fp16|bf16|fp8|all (fp8: e4m3 Q, K, V, forward only)")
      ->check(CLI::IsMember(dtype_choices));
  ver_cmd->add_option("--causal", ver.causal, "yes|no|both")->check(CLI::IsMember({"yes", "no", "both"}));
  ver_cmd->add_option("--pass", ver.pass, "fwd|bwd|all")->check(CLI::IsMember({"fwd", "bwd", "all"}));
  ver_cmd->add_option("--input-scale", ver.input_scale,
                      "Q and K drawn as this x standard normal (scores grow as its square), e.g. 10 for "
                      "scores that overflow an exp without max-subtraction")
      ->check(number_in(1e-4, false, 1e4, "between 0.0001 and 10000"));
  ver_cmd->add_option("--backend", ver.backend, backend_help)->check(CLI::IsMember(backends));
  ver_cmd->add_option("--device", ver.device, "CUDA device index (CUDA backend only)")->check(int_at_least(0));
  ver_cmd->add_option("-o,--output", ver.json_out, "write results JSON here");
  ver_cmd->add_option("--dump", ver.dump_dir, "write each case's inputs and outputs as .npy files here");
  ver_cmd->add_flag("-q,--quiet", ver.quiet, "print only the failed checks and the summary line");
  ver_cmd->add_option("--kernel-lib", ver.kernel_libs, lib_help)->allow_extra_args(false);

  fb::CompareCliOptions cmp;
  auto* cmp_cmd = app.add_subcommand(
      "compare", "regression gate: exit 1 if NEW is slower beyond threshold and noise, less accurate, "
                 "unverified, or lost a case");
  cmp_cmd->add_option("files", cmp.files,
                      "BASE.json [BASE2.json ...] NEW.json: one or more base runs (their run-to-run "
                      "spread widens the noise band), the new run last")
      ->required()
      ->expected(2, 1000);
  cmp_cmd->add_option("--max-slowdown", cmp.max_slowdown, "allowed slowdown fraction (default 0.05)")
      ->check(number_in(0, false, kNoLimit, "0 or more"));
  cmp_cmd->add_option("--confirm", cmp.confirm,
                      "a re-measure of the suspects (run --filter \"$(cat suspects)\"): a regression "
                      "counts only if it repeats there");
  cmp_cmd->add_option("--emit-suspects", cmp.suspects_out,
                      "write a --filter regex of the regressed case keys here (empty file if none)");
  cmp_cmd->add_flag("--force", cmp.force, "compare files of different devices, backends or schemas");
  cmp_cmd->add_option("--max-error", cmp.max_error, "fail if a kernel's error vs fp64 exceeds this")
      ->check(number_in(0, false, kNoLimit, "0 or more"));
  cmp_cmd->add_option("--format", cmp.format, "table|markdown|json")
      ->check(CLI::IsMember({"table", "markdown", "json"}));

  fb::InfoOptions info;
  auto* info_cmd = app.add_subcommand("info", "backend, device, versions, kernels");
  info_cmd->add_option("--backend", info.backend, backend_help)->check(CLI::IsMember(backends));
  info_cmd->add_option("--device", info.device, "CUDA device index (CUDA backend only)")->check(int_at_least(0));
  info_cmd->add_flag("--ceilings", info.ceilings,
                     "measure copy bandwidth and cuBLAS bf16 GEMM peak on this device");
  info_cmd->add_flag("--json", info.json, "print JSON instead of text");
  info_cmd->add_option("--kernel-lib", info.kernel_libs, lib_help)->allow_extra_args(false);

  fb::MergeOptions merge;
  auto* merge_cmd = app.add_subcommand("merge", "join results files of one device into one file");
  merge_cmd->add_option("inputs", merge.inputs, "results JSON files")->required()->expected(1, -1);
  merge_cmd->add_option("-o,--output", merge.out, "merged results JSON")->required();
  merge_cmd->add_flag("--force", merge.force, "allow different devices or schema versions");

  run.argv.assign(argv, argv + argc);
  ver.argv = run.argv;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "flashbench: " << e.what() << "\n";
    return fb::kExitUsage;
  }

  try {
    if (*run_cmd) return fb::run_command(run);
    if (*ver_cmd) return fb::verify_command(ver);
    if (*cmp_cmd) return fb::compare_command(cmp);
    if (*info_cmd) return fb::info_command(info);
    if (*merge_cmd) return fb::merge_command(merge);
  } catch (const std::exception& e) {
    std::cerr << "flashbench: " << e.what() << "\n";
    return fb::kExitUsage;
  }
  return fb::kExitUsage;
}

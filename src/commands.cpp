#include "commands.h"

#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <algorithm>
#include <functional>
#include <sstream>

#include <fmt/format.h>

#include "backend/backend.h"
#include "dump.h"
#include "journal.h"
#include "compare.h"
#include "printers/printers.h"
#include "record.h"
#include "registry.h"
#include "runner.h"
#include "spec.h"
#include "version.h"

#if FLASHBENCH_HAVE_CUDA
#include "backend/cuda/ceilings.h"
#endif

extern char** environ;

namespace fb {

namespace {

std::atomic<int> g_stop_signal{0};

// A second signal means "now": exit at once (the journal already holds every finished case).
extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal.exchange(sig) != 0) std::_Exit(128 + sig);
}

// Ctrl-C / SIGTERM: finish the case in flight, write what is done, then stop; a second one exits.
void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json tool_json() {
  return {{"name", "flashbench"}, {"version", FLASHBENCH_VERSION}, {"git", FLASHBENCH_GIT}};
}

// An output path must be writable before hours of measuring: its folder has to exist.
std::optional<std::string> output_problem(const std::string& flag, const std::string& path) {
  if (path.empty()) return std::nullopt;
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fmt::format("{} {}: folder '{}' does not exist", flag, path, dir.string());
  if (fs::is_directory(path, ec)) return fmt::format("{} {}: is a folder, not a file", flag, path);
  return std::nullopt;
}

std::string case_label(const Case& c) {
  return fmt::format("B={} H={}{} {} d={} {} {} {}", c.batch, c.heads,
                     c.kv_heads != c.heads ? fmt::format("/{}", c.kv_heads) : "",
                     c.square() ? fmt::format("N={}", c.seq_q) : fmt::format("Nq={} Nk={}", c.seq_q, c.seq_k),
                     c.head_dim, to_string(c.dtype), c.causal ? "causal" : "full", to_string(c.pass));
}

void print_progress(const Progress& p) {
  std::cerr << fmt::format("[{}/{}] {}  elapsed {:.0f}s  ETA {:.0f}s\n", p.index, p.total,
                           case_label(*p.c), p.elapsed_s, p.eta_s);
}

void write_outputs(const Results& res, const std::string& json_out, const std::string& csv_out) {
  if (!json_out.empty()) write_file_atomic(json_out, to_json(res).dump(2) + "\n");
  if (!csv_out.empty()) write_file_atomic(csv_out, csv_text(res));
}

bool any_failure(const Results& res) {
  for (const auto& r : res.records)
    if (r.status == Status::failed || (r.verified && !*r.verified)) return true;
  return false;
}

// --dump DIR: the folder is made up front, so a bad path stops the command before anything runs.
std::optional<std::string> dump_problem(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    return fmt::format("--dump {}: cannot create the folder ({})", dir, ec ? ec.message() : "not a folder");
  return std::nullopt;
}

Results execute(const Sweep& sweep, Backend& backend, bool progress, const std::string& dump_dir = "",
                std::function<void(const std::vector<Record>&)> on_case_done = {}) {
  install_stop_handlers();
  RunnerOptions opts;
  opts.on_case_done = std::move(on_case_done);
  if (!dump_dir.empty())
    opts.before_release = [dump_dir](const Case& c, Backend& b, const std::vector<Record>& records) {
      try {
        dump_case(dump_dir, b, c, records);
      } catch (const std::exception& e) {  // a dump that fails must not stop the measurements
        std::cerr << "flashbench: --dump: " << c.key() << ": " << e.what() << "\n";
      }
    };
  if (progress) opts.on_case = print_progress;
  opts.stop_requested = [] { return g_stop_signal.load() != 0; };
  Results res = run_sweep(sweep, backend, opts);
  res.tool = tool_json();
  res.created = utc_now();
  return res;
}

}  // namespace

// --devices: one child `flashbench run --shard i/N --device d` per device, then one merged file.
static int run_on_devices(const RunOptions& o) {
  if (o.json_out.empty()) {
    std::cerr << "flashbench: --devices needs -o/--output (each worker writes a part next to it)\n";
    return kExitUsage;
  }
  if (!o.shard.empty() || o.resume) {
    std::cerr << "flashbench: --devices cannot be combined with --shard or --resume\n";
    return kExitUsage;
  }
  Sweep sweep;
  try {
    sweep = load_spec(o.spec_path);  // bad specs stop here, before any worker starts
  } catch (const SpecError& e) {
    std::cerr << "flashbench: " << o.spec_path << ": " << e.what() << "\n";
    return kExitUsage;
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const int n = int(o.devices.size());
  std::vector<pid_t> pids;
  std::vector<std::string> parts;
  for (int i = 0; i < n; ++i) {
    parts.push_back(fmt::format("{}.part{}of{}.json", o.json_out, i, n));
    std::vector<std::string> args = {self, "run", o.spec_path, "--backend", o.backend, "--device",
                                     std::to_string(o.devices[i]), "--shard", fmt::format("{}/{}", i, n),
                                     "-o", parts.back(), "--quiet"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      std::cerr << "flashbench: --devices: could not start worker " << i << "\n";
      return kExitFailed;
    }
    pids.push_back(pid);
  }
  int worst = kExitOk;
  for (int i = 0; i < n; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != kExitOk) {
      std::cerr << fmt::format("flashbench: worker {} (device {}) exited {}\n", i, o.devices[i], code);
      worst = std::max(worst, code == kExitFailed ? kExitFailed : code);
    }
  }
  Results merged;
  bool first = true;
  for (const std::string& part : parts) {
    if (!std::filesystem::exists(part)) continue;  // a worker that died before writing
    Results r = load_results(part);
    if (first) {
      merged = r;
      merged.records.clear();
      merged.device = nlohmann::json{{"workers", nlohmann::json::array()}, {"name", r.device.value("name", "")}};
      merged.settings.erase("shard");
      first = false;
    }
    merged.device["workers"].push_back(r.device);
    merged.records.insert(merged.records.end(), r.records.begin(), r.records.end());
  }
  if (first) return worst == kExitOk ? kExitFailed : worst;
  merged.settings["devices"] = o.devices;
  merged.settings["argv"] = o.argv;
  std::map<std::string, std::size_t> order;
  for (std::size_t i = 0; i < sweep.cases.size(); ++i) order.emplace(sweep.cases[i].key(), i);
  std::stable_sort(merged.records.begin(), merged.records.end(), [&](const Record& a, const Record& b) {
    return order[a.c.key()] < order[b.c.key()];
  });
  if (!o.quiet) print_table(std::cout, merged);
  write_outputs(merged, o.json_out, o.csv_out);
  for (const std::string& part : parts) std::filesystem::remove(part);
  return worst != kExitOk ? worst : any_failure(merged) ? kExitFailed : kExitOk;
}

static std::string journal_path(const std::string& json_out) { return json_out + ".journal.jsonl"; }

int run_command(const RunOptions& o) {
  Sweep sweep;
  try {
    sweep = load_spec(o.spec_path);
  } catch (const SpecError& e) {
    std::cerr << "flashbench: " << o.spec_path << ": " << e.what() << "\n";
    return kExitUsage;
  }
  for (auto [flag, path] : {std::pair{"--output", o.json_out}, std::pair{"--csv", o.csv_out}}) {
    if (auto why = output_problem(flag, path)) {
      std::cerr << "flashbench: " << *why << "\n";
      return kExitUsage;
    }
  }
  if (!o.devices.empty()) return run_on_devices(o);
  Shard shard;
  if (!o.shard.empty()) {
    auto s = parse_shard(o.shard);
    if (!s) {
      std::cerr << "flashbench: --shard " << o.shard << ": expected I/N with 0 <= I < N, e.g. 0/4\n";
      return kExitUsage;
    }
    shard = *s;
  }
  if (auto why = dump_problem(o.dump_dir)) {
    std::cerr << "flashbench: " << *why << "\n";
    return kExitUsage;
  }
  if (o.resume && o.json_out.empty()) {
    std::cerr << "flashbench: --resume needs -o/--output (the journal lives next to it)\n";
    return kExitUsage;
  }
  const std::vector<Case> all_cases = shard_cases(sweep.cases, shard);
  sweep.cases = all_cases;

  auto backend = make_backend(*parse_backend(o.backend), o.device);
  const std::string fingerprint = sweep_fingerprint(sweep.spec, backend->name(), o.shard);

  // Resume: the journal's cases are done; run the rest.
  std::vector<Record> prior;
  const std::string jpath = o.json_out.empty() ? "" : journal_path(o.json_out);
  bool append = false;
  if (o.resume && std::filesystem::exists(jpath)) {
    JournalContents jc;
    try {
      jc = read_journal(jpath);
    } catch (const std::exception& e) {
      std::cerr << "flashbench: --resume: " << e.what() << "\n";
      return kExitUsage;
    }
    if (jc.fingerprint != fingerprint) {
      std::cerr << "flashbench: --resume: " << jpath
                << " belongs to a different spec, backend or shard; remove it or run without --resume\n";
      return kExitUsage;
    }
    std::set<std::string> done;
    for (const Record& r : jc.records) done.insert(r.c.key());
    std::vector<Case> todo;
    for (const Case& c : sweep.cases)
      if (!done.count(c.key())) todo.push_back(c);
    if (!o.quiet)
      std::cerr << fmt::format("flashbench: resuming: {} of {} cases already done\n",
                               sweep.cases.size() - todo.size(), sweep.cases.size());
    sweep.cases = todo;
    prior = std::move(jc.records);
    append = true;
  }
  std::unique_ptr<Journal> journal;
  if (!jpath.empty()) journal = std::make_unique<Journal>(jpath, fingerprint, append);

  // The ceilings each result is set against (roofline %), measured on this device before the sweep.
  nlohmann::json ceilings;
#if FLASHBENCH_HAVE_CUDA
  if (backend->name() == "cuda" && !o.no_ceilings) ceilings = measure_ceilings(o.device);
#endif

  Results res = execute(sweep, *backend, !o.quiet, o.dump_dir, [&](const std::vector<Record>& recs) {
    if (journal) journal->append(recs);
  });
  // Journal records first, then this run's, back in the sweep's case order.
  if (!prior.empty()) {
    std::map<std::string, std::size_t> order;
    for (std::size_t i = 0; i < all_cases.size(); ++i) order.emplace(all_cases[i].key(), i);
    prior.insert(prior.end(), res.records.begin(), res.records.end());
    std::stable_sort(prior.begin(), prior.end(), [&](const Record& a, const Record& b) {
      return order[a.c.key()] < order[b.c.key()];
    });
    res.records = std::move(prior);
  }
  if (!ceilings.is_null()) attach_ceilings(res, ceilings);
  if (!o.shard.empty()) res.settings["shard"] = o.shard;
  res.settings["argv"] = o.argv;
  if (!o.quiet) print_table(std::cout, res);
  write_outputs(res, o.json_out, o.csv_out);
  if (int sig = g_stop_signal.load()) {
    std::cerr << fmt::format("flashbench: stopped by signal {}; {} results written, journal {} kept: "
                             "run again with --resume to finish\n", sig, res.records.size(), jpath);
    return 128 + sig;
  }
  journal.reset();
  if (!jpath.empty()) std::filesystem::remove(jpath);  // the final file now holds everything
  return any_failure(res) ? kExitFailed : kExitOk;
}

int verify_command(const VerifyOptions& o) {
  auto backend = make_backend(*parse_backend(o.backend), o.device);
  const bool gpu = backend->name() == "cuda";
  // The CPU defaults keep `verify --seq 4096` to seconds on two cores (README "Verification").
  Case base;
  base.batch = o.batch.value_or(1);
  base.heads = o.heads.value_or(gpu ? 32 : 1);
  base.kv_heads = o.kv_heads.value_or(base.heads);
  base.head_dim = o.dim.value_or(gpu ? 128 : 64);
  // --seq sets both lengths; --seq-q / --seq-k override either (decode: --seq-q 1 --seq-k 4096).
  if (!o.seq && !(o.seq_q && o.seq_k)) {
    std::cerr << "flashbench verify: give --seq, or --seq-q and --seq-k (--seq alone sets both)\n";
    return kExitUsage;
  }
  base.seq_q = o.seq_q.value_or(o.seq.value_or(0));
  base.seq_k = o.seq_k.value_or(o.seq.value_or(0));
  if (base.heads % base.kv_heads != 0) {
    std::cerr << fmt::format("flashbench: --kv-heads {} must divide --heads {}\n", base.kv_heads, base.heads);
    return kExitUsage;
  }

  nlohmann::json spec = {{"seq_q", {base.seq_q}},   {"seq_k", {base.seq_k}},
                         {"batch", {base.batch}},
                         {"heads", {base.heads}},   {"kv_heads", {base.kv_heads}},
                         {"head_dim", {base.head_dim}}, {"warmup", 0}, {"input_scale", o.input_scale},
                         {"reps", 1},               {"verify", true}};
  spec["dtype"] = o.dtype == "all" ? nlohmann::json{"fp64", "fp32", "fp16", "bf16"}
                                   : nlohmann::json{o.dtype};
  spec["causal"] = o.causal == "both" ? nlohmann::json{false, true} : nlohmann::json{o.causal == "yes"};
  spec["pass"] = o.pass == "all" ? nlohmann::json{"fwd", "bwd"} : nlohmann::json{o.pass};
  Sweep sweep;
  try {
    sweep = sweep_from_json(spec);
  } catch (const SpecError& e) {
    std::cerr << "flashbench verify: " << e.what() << "\n";
    return kExitUsage;
  }
  for (auto why : {output_problem("--output", o.json_out), dump_problem(o.dump_dir)}) {
    if (why) {
      std::cerr << "flashbench: " << *why << "\n";
      return kExitUsage;
    }
  }

  Results res = execute(sweep, *backend, !o.quiet, o.dump_dir);
  res.settings["argv"] = o.argv;
  int checked = 0, passed = 0;
  for (const Record& r : res.records) {
    std::string detail;
    for (const auto& [tensor, e] : r.errors.items()) {
      if (!e.is_object() || !e.contains("ref")) continue;
      detail += fmt::format("  {} err {} (bound {})", tensor, e["ref"].dump(),
                            e.contains("bound") ? e["bound"].dump() : "-");
    }
    std::string verdict;
    if (r.status != Status::ok) {
      verdict = r.status == Status::skipped ? "[SKIP]" : "[FAIL]";
      detail = "  " + r.reason;
      if (r.status == Status::failed) ++checked;
    } else {
      ++checked;
      const bool ok = r.verified.value_or(false);
      passed += ok;
      verdict = ok ? "[OK]  " : "[FAIL]";
    }
    std::cout << fmt::format("{} {:<6} {}{}\n", verdict, r.kernel, case_label(r.c), detail);
  }
  std::cout << fmt::format("verify: {}/{} checks passed on {} ({})\n", passed, checked, res.backend,
                           res.device.value("name", std::string("?")));
  if (!o.json_out.empty()) write_outputs(res, o.json_out, "");
  return passed == checked && checked > 0 ? kExitOk : kExitFailed;
}

int compare_command(const CompareCliOptions& o) {
  Results base, next;
  try {
    base = load_results(o.base);
    next = load_results(o.next);
  } catch (const std::exception& e) {
    std::cerr << "flashbench compare: " << e.what() << "\n";
    return kExitUsage;
  }
  CompareOptions opts;
  opts.max_slowdown = o.max_slowdown;
  opts.max_error = o.max_error;
  CompareReport rep = compare_results(base, next, opts);
  CompareFormat f = o.format == "markdown" ? CompareFormat::markdown
                    : o.format == "json"   ? CompareFormat::json
                                           : CompareFormat::table;
  print_comparison(std::cout, rep, f);
  return rep.failed() ? kExitFailed : kExitOk;
}

int info_command(const InfoOptions& o) {
  auto backend = make_backend(*parse_backend(o.backend), o.device);
  nlohmann::json j;
  j["tool"] = tool_json();
  j["backend"] = backend->name();
  j["device"] = backend->device();
  j["settings"] = backend->settings();
  j["kernels"] = nlohmann::json::array();
  for (const auto& k : kernel_registry())
    j["kernels"].push_back({{"name", k.name}, {"description", k.description}, {"head_dims", k.head_dims}});
  if (o.ceilings) {
#if FLASHBENCH_HAVE_CUDA
    if (backend->name() != "cuda") {
      std::cerr << "flashbench info --ceilings: needs the CUDA backend (no GPU visible)\n";
      return kExitUsage;
    }
    j["ceilings"] = measure_ceilings(o.device);
#else
    std::cerr << "flashbench info --ceilings: this build has no CUDA backend\n";
    return kExitUsage;
#endif
  }
  if (o.json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("flashbench {} (git {})\nbackend: {}\ndevice:  {}\n", FLASHBENCH_VERSION,
                           FLASHBENCH_GIT, j["backend"].get<std::string>(), j["device"].dump());
  std::cout << "kernels:\n";
  for (const auto& k : kernel_registry()) std::cout << fmt::format("  {:<8} {}\n", k.name, k.description);
  if (j.contains("ceilings")) std::cout << "ceilings: " << j["ceilings"].dump() << "\n";
  return kExitOk;
}

int merge_command(const MergeOptions& o) {
  if (auto why = output_problem("--output", o.out)) {
    std::cerr << "flashbench merge: " << *why << "\n";
    return kExitUsage;
  }
  std::vector<Results> parts;
  try {
    for (const auto& path : o.inputs) parts.push_back(load_results(path));
  } catch (const std::exception& e) {
    std::cerr << "flashbench merge: " << e.what() << "\n";
    return kExitUsage;
  }
  Results out = parts.front();
  out.records.clear();
  out.spec = nlohmann::json::array();
  std::set<std::string> seen;
  const std::string device = out.device.value("name", std::string());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Results& p = parts[i];
    const std::string d = p.device.value("name", std::string());
    if (!o.force && d != device) {
      std::cerr << fmt::format("flashbench merge: {} is from device '{}', {} from '{}' (use --force to mix)\n",
                               o.inputs[i], d, o.inputs[0], device);
      return kExitUsage;
    }
    if (!o.force && p.schema_version != out.schema_version) {
      std::cerr << fmt::format("flashbench merge: {} has schema {}, {} has {} (use --force to mix)\n",
                               o.inputs[i], p.schema_version, o.inputs[0], out.schema_version);
      return kExitUsage;
    }
    out.spec.push_back(p.spec);
    for (const Record& r : p.records) {
      const std::string key = r.c.key() + "/" + r.kernel;
      if (!seen.insert(key).second) {
        if (o.force) continue;
        std::cerr << fmt::format("flashbench merge: case {} kernel {} appears twice ({}); use --force to "
                                 "keep the first\n", r.c.key(), r.kernel, o.inputs[i]);
        return kExitUsage;
      }
      out.records.push_back(r);
    }
  }
  out.created = utc_now();
  write_file_atomic(o.out, to_json(out).dump(2) + "\n");
  std::cerr << fmt::format("flashbench merge: {} results from {} files -> {}\n", out.records.size(),
                           parts.size(), o.out);
  return kExitOk;
}

}  // namespace fb

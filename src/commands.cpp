#include "commands.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <algorithm>
#include <limits>
#include <functional>
#include <sstream>

#include <fmt/format.h>

#include "backend/backend.h"
#include "common/splitkv.h"
#include "dump.h"
#include "journal.h"
#include "plugin.h"
#include "compare.h"
#include "printers/printers.h"
#include "printers/text.h"
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

// The kernels' settings from the environment: every FB_* variable set (the kernels' probe words, e.g.
// FB_SM90_BWD_LAUNCHES or FB_FLASH_FWD_PROBE; README "Results JSON"), by name. They change what runs, so a results
// file records them (settings.env, where any is set), a journal's fingerprint covers them, and `compare` warns where
// two files ran under different ones.
nlohmann::json kernel_env() {
  nlohmann::json env = nlohmann::json::object();  // ordered by name
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::size_t eq = kv.find('=');
    if (kv.rfind("FB_", 0) == 0 && eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

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
  // The folder exists, yet it may take no files (/proc, read-only, no permission): try, as the final
  // write will (a temporary next to it), and leave nothing behind.
  const std::string probe = fmt::format("{}.tmp.{}", path, ::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) return fmt::format("{} {}: cannot create a file there ({})", flag, path, std::strerror(errno));
  std::fclose(f);
  std::remove(probe.c_str());
  return std::nullopt;
}

std::string case_label(const Case& c) {
  return fmt::format("B={} H={}{} {} d={} {} {} {}", c.batch, c.heads,
                     c.kv_heads != c.heads ? fmt::format("/{}", c.kv_heads) : "",
                     c.square() ? fmt::format("N={}", c.seq_q) : fmt::format("Nq={} Nk={}", c.seq_q, c.seq_k),
                     c.head_dim, to_string(c.dtype), c.causal ? "causal" : "full", to_string(c.pass));
}

// `in_place`: one status line on a terminal, rewritten for each case (cleared by clear_progress()).
void print_progress(const Progress& p, bool in_place) {
  const std::string line = fmt::format("[{}/{}] {}  elapsed {:.0f}s  ETA {:.0f}s", p.index, p.total,
                                       case_label(*p.c), p.elapsed_s, p.eta_s);
  if (in_place)
    std::cerr << "\r\033[K" << line << std::flush;
  else
    std::cerr << line << "\n";
}

void clear_progress() { std::cerr << "\r\033[K" << std::flush; }

// The kernel the tiled kernels' speed-ups are quoted against (run's summary).
// The baseline the summary's speed-ups are over: the descriptor with Role::baseline.
std::string baseline_kernel() {
  const Descriptor* b = active_kernels().baseline();
  return b ? b->name : std::string();
}

// Whether `k` can run any case of the sweep on this backend, leaving memory aside: each distinct
// (dtype, head_dim, causal, pass) of the sweep is tried as a small case (B=1, H=1, N=128) against
// unsupported_reason and the backend's check_fits. A sweep that does not name its kernels runs only
// these, so the CPU does not list flash-sm90 as skipped on every row.
bool kernel_applies(Backend& backend, const Descriptor& k, const std::vector<Case>& cases) {
  constexpr int kProbeSeq = 128;
  std::set<std::string> tried;
  for (const Case& c : cases) {
    Case probe = c;
    probe.batch = probe.heads = probe.kv_heads = 1;
    probe.set_seq(kProbeSeq);
    if (!tried.insert(probe.key()).second) continue;
    if (unsupported_reason(k, probe)) continue;
    try {
      if (!backend.check_fits(probe, k)) return true;
    } catch (const std::exception&) {
      // a backend that cannot even judge a tiny case cannot run it
    }
  }
  return false;
}

// `run --list`: the cases the spec expands to and, per kernel, the memory it would need or why it
// would not run. Nothing is allocated or written.
void print_list(const std::string& spec_path, const Sweep& sweep, Backend& backend) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"#", "case"};
  for (const std::string& k : sweep.kernels) header.push_back(k);
  rows.push_back(header);
  std::vector<std::string> notes;
  std::map<std::string, std::size_t> note_index;
  for (std::size_t i = 0; i < sweep.cases.size(); ++i) {
    const Case& c = sweep.cases[i];
    std::vector<std::string> row = {fmt::format("{}", i + 1), c.key()};
    for (const std::string& name : sweep.kernels) {
      const Descriptor* k = find_kernel(name);
      std::optional<std::string> why =
          k ? unavailable_on(*k, backend.name()) : std::optional<std::string>("unknown kernel");
      if (!why) why = unsupported_reason(*k, c);
      if (!why) why = backend.check_fits(c, *k);
      std::string cell;
      std::optional<std::uint64_t> bytes;
      if (k) {
        try {
          bytes = backend.bytes_needed(c, *k);
        } catch (const std::exception&) {
        }
      }
      if (bytes && k && k->runs_on(backend.name() == "cuda" ? BackendId::cuda : BackendId::cpu))
        cell = text::format_bytes(*bytes);
      if (why) {  // the same reason (e.g. "CUDA backend only") is listed once, by number
        const auto [it, added] = note_index.emplace(*why, notes.size() + 1);
        if (added) notes.push_back(*why);
        cell = fmt::format("{}skip [{}]", bytes ? cell + " " : "", it->second);
      }
      row.push_back(cell.empty() ? "runs" : cell);
    }
    rows.push_back(row);
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::cout << fmt::format("{}: {} case{} x {} kernel{} on {} ({}); memory each kernel needs "
                           "(inputs, outputs, workspace):\n",
                           spec_path, sweep.cases.size(), sweep.cases.size() == 1 ? "" : "s",
                           sweep.kernels.size(), sweep.kernels.size() == 1 ? "" : "s", backend.name(),
                           backend.device().value("name", std::string("?")));
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i)
      line += (i ? "  " : "") + (i < 2 ? fmt::format("{:<{}}", row[i], width[i])
                                        : fmt::format("{:>{}}", row[i], width[i]));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
  for (std::size_t i = 0; i < notes.size(); ++i) std::cout << fmt::format("[{}] {}\n", i + 1, notes[i]);
  std::cout << "(nothing was run; drop --list to run)\n";
}

void write_outputs(const Results& res, const std::string& json_out, const std::string& csv_out) {
  if (!json_out.empty()) write_file_atomic(json_out, to_json(res).dump(2) + "\n");
  if (!csv_out.empty()) write_file_atomic(csv_out, csv_text(res));
}

bool any_failure(const Results& res) {
  for (const auto& r : res.records) {
    if (is_peer(r.kernel)) continue;  // a labelled peer's verdict is reported, not fatal
    if (r.status == Status::failed || (r.verified && !*r.verified)) return true;
  }
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

// What every sweep runs with: stop on a signal, --dump's writer, and (`progress`) the `[k/N] case` line on
// stderr, rewritten in place on a terminal (clear it with clear_progress() when the sweep ends).
RunnerOptions runner_options(bool progress, const std::string& dump_dir) {
  install_stop_handlers();
  RunnerOptions opts;
  if (!dump_dir.empty())
    opts.before_release = [dump_dir](const Case& c, Backend& b, const std::vector<Record>& records) {
      try {
        dump_case(dump_dir, b, c, records);
      } catch (const std::exception& e) {  // a dump that fails must not stop the measurements
        std::cerr << "flashbench: --dump: " << c.key() << ": " << e.what() << "\n";
      }
    };
  const bool in_place = ::isatty(STDERR_FILENO);
  if (progress) opts.on_case = [in_place](const Progress& p) { print_progress(p, in_place); };
  opts.stop_requested = [] { return g_stop_signal.load() != 0; };
  return opts;
}

Results execute(const Sweep& sweep, Backend& backend, const RunnerOptions& opts) {
  Results res = run_sweep(sweep, backend, opts);
  if (opts.on_case && ::isatty(STDERR_FILENO)) clear_progress();
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
  if (!o.kernels.empty() || !o.filter.empty() || !o.splits.empty() || o.warmup || o.reps || o.list || o.fresh ||
      o.interleave ||
      TimingPolicy{0, 1, o.min_time_s, o.max_noise_pct, o.max_time_s}.adaptive()) {
    std::cerr << "flashbench: --devices does not pass --kernels, --filter, --splits, --warmup, --reps, --list, "
                 "--fresh, --interleave or adaptive timing on to its workers yet: put them in the spec\n";
    return kExitUsage;
  }
  Sweep sweep;
  try {
    sweep = load_spec(o.spec_path);  // bad specs stop here, before any worker starts
  } catch (const SpecError& e) {
    std::cerr << "flashbench: " << e.what() << "\n";  // what() starts with the path
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
    for (const std::string& lib : o.kernel_libs) {
      args.push_back("--kernel-lib");
      args.push_back(lib);
    }
    for (const std::string& v : o.variants) {
      args.push_back("--variant");
      args.push_back(v);
    }
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
    if (!r.complete) merged.complete = false;
    merged.records.insert(merged.records.end(), r.records.begin(), r.records.end());
  }
  if (first) return worst == kExitOk ? kExitFailed : worst;
  merged.complete = worst == kExitOk || worst == kExitFailed;  // a worker that was stopped or died: partial
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

// --kernel-lib: the libraries' kernels join the built-ins before anything reads the kernel list (the
// spec's kernels, --kernels, verify's kernels, info). A library that cannot be used stops the command.
static std::optional<std::string> load_kernel_libs(const std::vector<std::string>& paths) {
  try {
    activate_kernel_libraries(paths);
  } catch (const PluginError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// --variant NAME=KERNEL:VAR=VALUE[:VAR=VALUE...], one flag each: the variants join the active kernels (after any
// --kernel-lib's) for the command's life; `shown` collects results.settings.variants. nullopt: done.
struct VariantFlag {
  std::string flag, name, kernel;
  std::vector<std::pair<std::string, std::string>> env;
};
static std::optional<std::string> parse_variant(const std::string& flag, VariantFlag& v) {
  const std::string shown = "--variant " + flag;
  const std::size_t eq = flag.find('='), colon = flag.find(':');
  if (eq == std::string::npos || colon == std::string::npos || colon < eq)
    return shown + ": expected NAME=KERNEL:VAR=VALUE[:VAR=VALUE...], e.g. "
                   "k0rec=flash-sm90:FB_SM90_FWD_PROBE=k0rec";
  v.name = flag.substr(0, eq);
  v.kernel = flag.substr(eq + 1, colon - eq - 1);
  std::size_t at = colon + 1;
  while (at <= flag.size()) {
    const std::size_t end = std::min(flag.find(':', at), flag.size());
    const std::string a = flag.substr(at, end - at);
    const std::size_t aeq = a.find('=');
    if (aeq == std::string::npos || aeq == 0)
      return fmt::format("{}: '{}' is not VAR=VALUE (a kernel setting, e.g. FB_SM90_FWD_PROBE=k0rec)", shown, a);
    v.env.emplace_back(a.substr(0, aeq), a.substr(aeq + 1));
    at = end + 1;
  }
  return std::nullopt;
}
static std::optional<std::string> activate_variants(const std::vector<std::string>& flags,
                                                    std::vector<VariantFlag>& variants, nlohmann::json& shown) {
  if (flags.empty()) return std::nullopt;
  KernelSet set(active_kernels().all());
  for (const std::string& flag : flags) {
    VariantFlag v;
    v.flag = flag;
    if (auto why = parse_variant(flag, v)) return why;
    const Descriptor* base = set.find(v.kernel);
    if (!base)
      return fmt::format("--variant {}: unknown kernel '{}'; registered kernels: {}", flag, v.kernel, set.names());
    try {
      Descriptor d = make_variant(*base, v.name, v.env);
      nlohmann::json env = nlohmann::json::object();
      for (const auto& [var, value] : d.variant_env) env[var] = value;
      shown[v.name] = {{"kernel", v.kernel}, {"env", env}};
      set.add(std::move(d));
    } catch (const std::invalid_argument& e) {
      return fmt::format("--variant {}: {}", flag, e.what());
    }
    variants.push_back(std::move(v));
  }
  set_active_kernels(std::make_shared<const KernelSet>(std::move(set)));
  return std::nullopt;
}
// Puts the active kernels back as they were when it was made (a command's variants leave with it).
class RestoreActiveKernels {
 public:
  RestoreActiveKernels() : saved_(active_kernel_set()) {}
  ~RestoreActiveKernels() { set_active_kernels(saved_); }
  RestoreActiveKernels(const RestoreActiveKernels&) = delete;
  RestoreActiveKernels& operator=(const RestoreActiveKernels&) = delete;

 private:
  std::shared_ptr<const KernelSet> saved_;
};

static std::string journal_path(const std::string& json_out) { return json_out + ".journal.jsonl"; }

// The backend a command asked for, refusing device flags the CPU backend would silently ignore.
static std::unique_ptr<Backend> backend_for(const std::string& name, const std::optional<int>& device,
                                     bool devices_given, std::string& error) {
  const BackendKind kind = *parse_backend(name);
  const bool cpu = kind == BackendKind::cpu || (kind == BackendKind::automatic && !cuda_device_available());
  if (cpu && (device || devices_given)) {
    const std::string flag = device ? fmt::format("--device {}", *device) : std::string("--devices");
    error = fmt::format("{}: the CPU backend has no devices ({}); drop the flag, or use a GPU build "
                        "with a visible device", flag,
                        kind == BackendKind::cpu ? "--backend cpu" : "no GPU visible, so auto chose the CPU");
    return nullptr;
  }
  if (devices_given) return nullptr;  // the workers make their own
  return make_backend(kind, device.value_or(0));
}

int run_command(const RunOptions& o, Backend* given_backend) {
  const auto usage = [](const std::string& why) {
    std::cerr << "flashbench: " << why << "\n";
    return kExitUsage;
  };
  if (auto why = load_kernel_libs(o.kernel_libs)) return usage(*why);
  const RestoreActiveKernels restore_kernels;
  std::vector<VariantFlag> variants;
  nlohmann::json variants_shown = nlohmann::json::object();
  if (auto why = activate_variants(o.variants, variants, variants_shown)) return usage(*why);
  Sweep sweep;
  try {
    sweep = load_spec(o.spec_path);
  } catch (const SpecError& e) {
    return usage(e.what());  // what() starts with the path
  }
  if (!o.list) {
    for (auto [flag, path] : {std::pair{"--output", o.json_out}, std::pair{"--csv", o.csv_out}}) {
      if (auto why = output_problem(flag, path)) return usage(*why);
    }
  }
  if (o.resume && o.fresh) return usage("--resume and --fresh contradict each other: choose one");
  std::unique_ptr<Backend> owned_backend;
  Backend* backend = given_backend;
  if (!backend) {
    std::string backend_error;
    owned_backend = backend_for(o.backend, o.device, !o.devices.empty(), backend_error);
    if (!backend_error.empty()) return usage(backend_error);
    if (!o.devices.empty()) return run_on_devices(o);
    backend = owned_backend.get();
  }

  // ---- the spec's cases and kernels, as the flags narrow or replace them ----
  nlohmann::json overrides = nlohmann::json::object();
  if (!o.kernels.empty()) {
    std::set<std::string> seen;
    for (const std::string& name : o.kernels) {
      if (!find_kernel(name))
        return usage(fmt::format("--kernels {}: unknown kernel '{}'; registered kernels: {}",
                                 fmt::join(o.kernels, ","), name, kernel_names()));
      if (!seen.insert(name).second)
        return usage(fmt::format("--kernels {}: '{}' is listed twice", fmt::join(o.kernels, ","), name));
    }
    sweep.kernels = o.kernels;
    overrides["kernels"] = o.kernels;
  } else if (!sweep.spec.contains("kernels")) {
    std::vector<std::string> applicable;
    for (const std::string& name : sweep.kernels)
      if (const Descriptor* k = find_kernel(name); k && kernel_applies(*backend, *k, sweep.cases))
        applicable.push_back(name);
    sweep.kernels = applicable;
  }
  if (o.kernels.empty()) {
    // Each variant right after its kernel (and the variants before it of the same kernel).
    for (const VariantFlag& v : variants) {
      if (std::find(sweep.kernels.begin(), sweep.kernels.end(), v.name) != sweep.kernels.end()) continue;
      auto at = std::find(sweep.kernels.begin(), sweep.kernels.end(), v.kernel);
      if (at == sweep.kernels.end())
        return usage(fmt::format("--variant {}: its kernel '{}' is not among the run's kernels ({}): name it in "
                                 "the spec or --kernels",
                                 v.flag, v.kernel, fmt::join(sweep.kernels, ",")));
      while (at + 1 != sweep.kernels.end()) {
        const Descriptor* next = find_kernel(*(at + 1));
        if (!next || next->variant_of != v.kernel) break;
        ++at;
      }
      sweep.kernels.insert(at + 1, v.name);
    }
  }
  if (!o.splits.empty()) {
    const std::string shown = fmt::format("--splits {}", fmt::join(o.splits, ","));
    std::set<int> seen;
    for (const int s : o.splits) {
      if (s < 0 || s > kMaxKvSplits)
        return usage(fmt::format("{}: each value must be 0 (auto) .. {}, got {}", shown, kMaxKvSplits, s));
      if (!seen.insert(s).second) return usage(fmt::format("{}: {} is listed twice", shown, s));
    }
    // The spec's cases without their splits (once each, in order), crossed with the flag's values.
    std::vector<Case> cases;
    std::set<std::string> keys;
    for (Case c : sweep.cases) {
      c.splits = 0;
      if (!keys.insert(c.key()).second) continue;
      for (const int s : o.splits) {
        c.splits = s;
        cases.push_back(c);
      }
    }
    sweep.cases = cases;
    overrides["splits"] = o.splits;
  }
  if (o.warmup) {
    sweep.warmup = *o.warmup;
    overrides["warmup"] = *o.warmup;
  }
  if (o.reps) {
    sweep.reps = *o.reps;
    overrides["reps"] = *o.reps;
  }
  if (o.interleave) {
    sweep.rep_order = RepOrder::interleaved;
    overrides["rep_order"] = "interleaved";
  }
  if (!o.filter.empty()) {
    std::regex re;
    try {
      re = std::regex(o.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return usage(fmt::format("--filter {}: not a valid regular expression ({})", o.filter, e.what()));
    }
    std::vector<Case> kept;
    for (const Case& c : sweep.cases)
      if (std::regex_search(c.key(), re)) kept.push_back(c);
    if (kept.empty())
      return usage(fmt::format("--filter {}: matches none of the {} case keys (they look like {}; "
                               "--list shows them all)",
                               o.filter, sweep.cases.size(), sweep.cases.front().key()));
    sweep.cases = kept;
    overrides["filter"] = o.filter;
  }
  Shard shard;
  if (!o.shard.empty()) {
    auto s = parse_shard(o.shard);
    if (!s) return usage(fmt::format("--shard {}: expected I/N with 0 <= I < N, e.g. 0/4", o.shard));
    shard = *s;
  }
  const std::vector<Case> all_cases = shard_cases(sweep.cases, shard);
  sweep.cases = all_cases;
  if (sweep.kernels.empty())
    return usage(fmt::format("{}: none of its kernels runs on the {} backend (see flashbench info)",
                             o.spec_path, backend->name()));
  if (o.list) {
    print_list(o.spec_path, sweep, *backend);
    return kExitOk;
  }

  TimingPolicy timing;
  timing.min_time_s = o.min_time_s;
  timing.warmup_min_s = o.warmup_time_s;
  timing.max_noise_pct = o.max_noise_pct;
  timing.max_time_s = o.max_time_s;

  if (auto why = dump_problem(o.dump_dir)) return usage(*why);
  if (o.resume && o.json_out.empty()) return usage("--resume needs -o/--output (the journal lives next to it)");
  if (o.fresh && o.json_out.empty()) return usage("--fresh needs -o/--output (the journal lives next to it)");
  if (o.quiet && o.json_out.empty() && o.csv_out.empty())
    std::cerr << "flashbench: warning: -q without -o/--csv: the results are printed nowhere and saved nowhere\n";

  // The journal's fingerprint covers what changes the results: the spec, the backend, the shard, the
  // flags that replace spec fields and the plug-in libraries (by path: a rebuilt library at the same
  // path is the user's to --fresh).
  nlohmann::json identity = sweep.spec;
  if (!overrides.empty()) identity["_overrides"] = overrides;
  if (!o.kernel_libs.empty()) identity["_kernel_libs"] = o.kernel_libs;
  if (!variants_shown.empty()) identity["_variants"] = variants_shown;
  const nlohmann::json env = kernel_env();
  if (!env.empty()) identity["_env"] = env;  // a run under other kernel settings is another run
  const std::string fingerprint = sweep_fingerprint(identity, backend->name(), o.shard);

  // Resume: the journal's cases are done; run the rest. Without --resume or --fresh an unfinished
  // run's journal is never overwritten.
  std::vector<Record> prior;
  const std::string jpath = o.json_out.empty() ? "" : journal_path(o.json_out);
  bool append = false;
  if (!jpath.empty() && !o.resume && !o.fresh && std::filesystem::exists(jpath)) {
    std::size_t finished = 0;
    try {
      finished = read_journal(jpath).records.size();
    } catch (const std::exception&) {
    }
    return usage(fmt::format("-o {}: {} holds {} results of an unfinished run: add --resume to finish it, "
                             "or --fresh to start over (the journal is then replaced)",
                             o.json_out, jpath, finished));
  }
  if (o.resume && std::filesystem::exists(jpath)) {
    JournalContents jc;
    try {
      jc = read_journal(jpath);
    } catch (const std::exception& e) {
      return usage(std::string("--resume: ") + e.what());
    }
    if (jc.fingerprint != fingerprint)
      return usage(fmt::format("--resume: {} belongs to a different spec, backend, shard, override flags or FB_* "
                               "kernel settings; use --fresh to replace it",
                               jpath));
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

  if (!o.quiet && !env.empty())
    std::cerr << fmt::format("flashbench: kernel settings from the environment: {}\n", env_line(env));

  // The ceilings each result is set against (roofline %), measured on this device before the sweep.
  nlohmann::json ceilings;
#if FLASHBENCH_HAVE_CUDA
  if (backend->name() == "cuda" && !o.no_ceilings) ceilings = measure_ceilings(o.device.value_or(0));
#endif

  // Rows as cases finish: an aligned table on a terminal (the status line on stderr rewritten in
  // place), one plain line per result otherwise (logs, CI).
  const bool live = !o.quiet && ::isatty(STDOUT_FILENO);
  const bool status_line = !o.quiet && ::isatty(STDERR_FILENO);
  LiveTable table(std::cout, sweep.cases, sweep.kernels);
  std::size_t cases_done = 0;
  const std::size_t cases_total = sweep.cases.size();
  // The status line only on a terminal: elsewhere the plain result lines carry [k/N].
  RunnerOptions opts = runner_options(status_line, o.dump_dir);
  opts.timing = timing;
  std::string lost;  // one line, when a kernel fault lost the device's context
  if (!jpath.empty()) opts.rerun_hint = "run again with --resume";
  opts.on_context_lost = [&](const std::string& why, const Case& c, std::size_t not_run) {
    lost = fmt::format("{} in case {}; {} later case{} recorded skipped, not run", why, c.key(), not_run,
                       not_run == 1 ? "" : "s");
  };
  opts.on_case_done = [&](const std::vector<Record>& recs) {
    if (journal) journal->append(recs);
    ++cases_done;
    if (o.quiet) return;
    if (status_line) clear_progress();
    for (const Record& r : recs) {
      if (live)
        table.add(r);
      else
        std::cout << fmt::format("[{}/{}] {}\n", cases_done, cases_total, record_line(r)) << std::flush;
    }
  };
  Results res = execute(sweep, *backend, opts);

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
  if (!overrides.empty()) res.settings["overrides"] = overrides;
  res.settings["argv"] = o.argv;
  if (!env.empty()) res.settings["env"] = env;
  if (!o.kernel_libs.empty()) res.settings["kernel_libs"] = o.kernel_libs;
  if (!variants_shown.empty()) res.settings["variants"] = variants_shown;
  const int sig = g_stop_signal.load();
  res.complete = sig == 0 && lost.empty();
  write_outputs(res, o.json_out, o.csv_out);
  std::vector<std::string> written;
  for (const std::string& path : {o.json_out, o.csv_out})
    if (!path.empty()) written.push_back(path);
  if (!o.quiet) print_summary(std::cout, res, baseline_kernel(), written);
  if (!lost.empty()) {  // the journal stays: --resume runs the cases left in a fresh process
    if (jpath.empty())
      std::cerr << fmt::format("flashbench: {}: run again to measure them\n", lost);
    else
      std::cerr << fmt::format("flashbench: {}; {} written (\"complete\": false), journal {} kept: run again "
                               "with --resume to finish\n",
                               lost, o.json_out, jpath);
    return kExitContextLost;
  }
  if (sig) {
    if (jpath.empty())
      std::cerr << fmt::format("flashbench: stopped by signal {} after {} results\n", sig, res.records.size());
    else
      std::cerr << fmt::format("flashbench: stopped by signal {}; {} results written (marked \"complete\": "
                               "false), journal {} kept: run again with --resume to finish\n",
                               sig, res.records.size(), jpath);
    return 128 + sig;
  }
  journal.reset();
  if (!jpath.empty()) std::filesystem::remove(jpath);  // the final file now holds everything
  return any_failure(res) ? kExitFailed : kExitOk;
}

int verify_command(const VerifyOptions& o) {
  if (auto why = load_kernel_libs(o.kernel_libs)) {
    std::cerr << "flashbench verify: " << *why << "\n";
    return kExitUsage;
  }
  std::string backend_error;
  auto backend = backend_for(o.backend, o.device, false, backend_error);
  if (!backend) {
    std::cerr << "flashbench verify: " << backend_error << "\n";
    return kExitUsage;
  }
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
  // Every kernel that runs here and lists --dim verifies; one that does not list it (d = 256: the
  // fp32/fp64-only kernels) is left out with a note. --dim is refused, in the flag's terms rather than
  // the spec's (the spec below is built from the flags), when no tiled kernel is left to verify.
  const BackendId here = gpu ? BackendId::cuda : BackendId::cpu;
  std::vector<std::string> left_out;
  std::optional<std::string> first_refusal;
  bool tiled_left = false;
  for (const Descriptor* k : active_kernels().user_kernels()) {
    if (!k->runs_on(here)) continue;
    if (auto why = unsupported_head_dim(*k, base.head_dim)) {
      if (k->role != Role::peer) left_out.push_back(k->name);  // peers run only when asked for
      if (!first_refusal) first_refusal = why;
      continue;
    }
    tiled_left = tiled_left || k->role == Role::tiled;
  }
  if (!tiled_left && first_refusal) {
    std::cerr << fmt::format("flashbench verify: --dim {}: {}; no tiled kernel runs it\n", base.head_dim,
                             *first_refusal);
    return kExitUsage;
  }

  nlohmann::json spec = {{"seq_q", {base.seq_q}},   {"seq_k", {base.seq_k}},
                         {"batch", {base.batch}},
                         {"heads", {base.heads}},   {"kv_heads", {base.kv_heads}},
                         {"head_dim", {base.head_dim}}, {"warmup", 0}, {"input_scale", o.input_scale},
                         {"reps", 1},               {"verify", true}};
  spec["dtype"] = o.dtype == "all" ? nlohmann::json(spec_dtype_names()) : nlohmann::json{o.dtype};
  spec["causal"] = o.causal == "both" ? nlohmann::json{false, true} : nlohmann::json{o.causal == "yes"};
  spec["pass"] = o.pass == "all" ? nlohmann::json{"fwd", "bwd"} : nlohmann::json{o.pass};
  // A spec without kernels names every default kernel, of every backend, and refuses a head dim any of
  // them lacks: list the ones that run here and take it.
  std::vector<std::string> verify_kernels;
  bool all_take_it = true;
  for (const Descriptor* k : active_kernels().default_kernels()) {
    const bool takes_it = !unsupported_head_dim(*k, base.head_dim);
    all_take_it = all_take_it && takes_it;
    if (k->runs_on(here) && takes_it) verify_kernels.push_back(k->name);
  }
  if (!all_take_it) spec["kernels"] = verify_kernels;
  if (!left_out.empty()) {
    std::string names;
    for (const std::string& n : left_out) names += (names.empty() ? "" : ", ") + n;
    std::cerr << fmt::format("flashbench verify: --dim {}: not run by {} (their head dims do not include it)\n",
                             base.head_dim, names);
  }
  Sweep sweep;
  try {
    sweep = sweep_from_json(spec);
  } catch (const SpecError& e) {
    // The spec was built from the flags: name the flag, not the spec field.
    std::string what = e.what();
    for (auto [field, flag] : {std::pair{"spec.seq[0]", "--seq"}, std::pair{"spec.batch[0]", "--batch"},
                               std::pair{"spec.heads[0]", "--heads"}, std::pair{"spec.kv_heads[0]", "--kv-heads"},
                               std::pair{"spec.head_dim[0]", "--dim"}, std::pair{"spec.input_scale", "--input-scale"}})
      for (std::size_t at; (at = what.find(field)) != std::string::npos;)
        what.replace(at, std::strlen(field), flag);
    std::cerr << "flashbench verify: " << what << "\n";
    return kExitUsage;
  }
  for (auto why : {output_problem("--output", o.json_out), dump_problem(o.dump_dir)}) {
    if (why) {
      std::cerr << "flashbench: " << *why << "\n";
      return kExitUsage;
    }
  }

  // Only the kernels that run on this backend (the CPU has no flash-sm90), as `run` does for a spec
  // without a kernel list.
  std::vector<std::string> applicable;
  for (const std::string& name : sweep.kernels)
    if (const Descriptor* k = find_kernel(name); k && kernel_applies(*backend, *k, sweep.cases))
      applicable.push_back(name);
  sweep.kernels = applicable;

  RunnerOptions opts = runner_options(!o.quiet, o.dump_dir);
  std::string lost;  // one line, when a kernel fault lost the device's context
  opts.rerun_hint = "run verify again";
  opts.on_context_lost = [&](const std::string& why, const Case& c, std::size_t not_run) {
    lost = fmt::format("{} in case {}; {} later case{} not verified (recorded skipped): run verify again",
                       why, c.key(), not_run, not_run == 1 ? "" : "s");
  };
  Results res = execute(sweep, *backend, opts);
  res.settings["argv"] = o.argv;
  if (const nlohmann::json env = kernel_env(); !env.empty()) res.settings["env"] = env;
  // One cold rep per kernel: its time is no benchmark, and `compare` refuses to gate on it.
  res.settings["timing"] = {{"mode", "verify-cold"}, {"warmup", sweep.warmup}, {"reps", sweep.reps},
                            {"note", "one cold rep per kernel for verification; not a benchmark time"}};
  res.complete = g_stop_signal.load() == 0 && lost.empty();
  int checked = 0, passed = 0;
  std::size_t kernel_width = 0;
  for (const std::string& k : sweep.kernels) kernel_width = std::max(kernel_width, k.size());
  for (const Record& r : res.records) {
    // One line per case: the tensor closest to its bound (every tensor over it on failure), errors
    // to 3 significant digits, and the rule that judged it.
    std::string detail;
    double worst = -1;
    std::string worst_text, over;
    const auto num = [](const nlohmann::json& v) {
      return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
    };
    for (const auto& [tensor, e] : r.errors.items()) {
      if (!e.is_object() || !e.contains("ref") || !e.contains("bound")) continue;
      const double err = num(e["ref"]), bound = num(e["bound"]);
      const double share = bound > 0 ? err / bound : std::numeric_limits<double>::infinity();
      if (!(err <= bound)) over += fmt::format("  {} {:.3g} > {:.3g}", tensor, err, bound);
      if (!(share <= worst)) {
        worst = std::isnan(share) ? std::numeric_limits<double>::infinity() : share;
        worst_text = fmt::format("  worst {} {:.3g} <= {:.3g} ({:.0f}% of bound)", tensor, err, bound,
                                 100 * share);
      }
    }
    const std::string rule = r.errors.value("rule", std::string());
    detail = (over.empty() ? worst_text : over) + (rule.empty() ? "" : "  [" + rule + "]");
    if (r.errors.contains("reference_failed"))
      detail = "  reference could not run: " + r.errors["reference_failed"].get<std::string>();
    std::string verdict;
    if (r.status != Status::ok) {
      verdict = r.status == Status::skipped ? "[SKIP]" : "[FAIL]";
      detail = "  " + r.reason;
      if (r.status == Status::failed) ++checked;
    } else if (is_peer(r.kernel)) {
      // A labelled peer (e.g. TF32 GEMMs in fp32) is shown with its verdict, not counted.
      verdict = r.verified.value_or(false) ? "[peer ok]  " : "[peer fail]";
    } else {
      ++checked;
      const bool ok = r.verified.value_or(false);
      passed += ok;
      verdict = ok ? "[OK]  " : "[FAIL]";
    }
    const bool failed = verdict == "[FAIL]";
    if (!o.quiet || failed)
      std::cout << fmt::format("{} {:<{}} {}{}\n", verdict, r.kernel, kernel_width, case_label(r.c), detail);
  }
  std::cout << fmt::format("verify: {}/{} checks passed on {} ({})\n", passed, checked, res.backend,
                           res.device.value("name", std::string("?")));
  if (!o.json_out.empty()) write_outputs(res, o.json_out, "");
  if (!lost.empty()) {
    std::cerr << "flashbench verify: " << lost << "\n";
    return kExitContextLost;
  }
  return passed == checked && checked > 0 ? kExitOk : kExitFailed;
}

int compare_command(const CompareCliOptions& o) {
  if (o.files.size() < 2) {
    std::cerr << "flashbench compare: give at least one base file and the new file\n";
    return kExitUsage;
  }
  if (!o.suspects_out.empty())
    if (auto why = output_problem("--emit-suspects", o.suspects_out)) {
      std::cerr << "flashbench compare: " << *why << "\n";
      return kExitUsage;
    }
  std::vector<Results> history;
  Results next, confirm;
  try {
    for (std::size_t i = 0; i + 1 < o.files.size(); ++i) history.push_back(load_results(o.files[i]));
    next = load_results(o.files.back());
    if (!o.confirm.empty()) confirm = load_results(o.confirm);
  } catch (const std::exception& e) {
    std::cerr << "flashbench compare: " << e.what() << "\n";
    return kExitUsage;
  }
  for (std::size_t i = 0; i < o.files.size(); ++i) {
    const Results& r = i + 1 < o.files.size() ? history[i] : next;
    if (!r.complete)
      std::cerr << fmt::format("flashbench compare: note: {} is an interrupted run (\"complete\": false): "
                               "the cases it did not reach are missing from it\n", o.files[i]);
  }
  CompareOptions opts;
  opts.max_slowdown = o.max_slowdown;
  opts.max_error = o.max_error;
  opts.force = o.force;
  CompareReport rep;
  try {
    rep = compare_results(history, next, opts, o.confirm.empty() ? nullptr : &confirm);
  } catch (const std::invalid_argument& e) {
    std::cerr << "flashbench compare: " << e.what() << "\n";
    return kExitUsage;
  }
  CompareFormat f = o.format == "markdown" ? CompareFormat::markdown
                    : o.format == "json"   ? CompareFormat::json
                                           : CompareFormat::table;
  print_comparison(std::cout, rep, f);
  if (!o.suspects_out.empty()) {
    // A regex over case keys for `run --filter`: ^(key1|key2)$ (keys hold only [a-z0-9+-]).
    const auto keys = rep.suspects();
    std::string regex;
    if (!keys.empty()) regex = fmt::format("^({})$", fmt::join(keys, "|"));
    write_file_atomic(o.suspects_out, regex + (regex.empty() ? "" : "\n"));
  }
  return rep.failed() ? kExitFailed : kExitOk;
}

namespace {

// What a kernel runs on this backend, found by asking it (check_fits on small cases) rather than
// restating each kernel's limits here: dtypes and passes at its first supported head dim.
struct KernelSupport {
  std::vector<std::string> dtypes, passes;
  std::string why_not;  // when nothing runs: the backend's reason for the first probe
};

KernelSupport kernel_support(Backend& backend, const Descriptor& k) {
  constexpr int kProbeSeq = 128;
  Case probe;
  probe.set_seq(kProbeSeq);
  probe.head_dim = k.head_dims.empty() ? 64 : k.head_dims.front();
  KernelSupport out;
  if (auto why = unavailable_on(k, backend.name())) {
    out.why_not = *why;
    return out;
  }
  const auto runs = [&](const Case& c) {
    if (auto why = unsupported_reason(k, c)) {
      if (out.why_not.empty()) out.why_not = *why;
      return false;
    }
    try {
      if (auto why = backend.check_fits(c, k)) {
        if (out.why_not.empty()) out.why_not = *why;
        return false;
      }
    } catch (const std::exception& e) {
      if (out.why_not.empty()) out.why_not = e.what();
      return false;
    }
    return true;
  };
  std::optional<Dtype> first;
  for (const std::string& name : spec_dtype_names()) {
    probe.dtype = *parse_dtype(name);
    if (runs(probe)) {
      out.dtypes.push_back(name);
      if (!first) first = probe.dtype;
    }
  }
  if (!first) return out;
  probe.dtype = *first;
  for (const std::string& name : spec_pass_names()) {
    probe.pass = *parse_pass(name);
    if (runs(probe)) out.passes.push_back(name);
  }
  out.why_not.clear();
  return out;
}

// A device or settings object as "key  value" lines; nested objects as "parent.key"; sizes in bytes
// (keys ending in _bytes) in binary units.
void flatten(const nlohmann::json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& [key, v] : j.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (v.is_object()) {
      flatten(v, name, out);
    } else if (v.is_string()) {
      out.emplace_back(name, v.get<std::string>());
    } else if (v.is_number() && key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0) {
      out.emplace_back(name, fmt::format("{:.1f} GiB", v.get<double>() / double(1ull << 30)));
    } else {
      out.emplace_back(name, v.dump());
    }
  }
}

}  // namespace

int info_command(const InfoOptions& o) {
  if (auto why = load_kernel_libs(o.kernel_libs)) {
    std::cerr << "flashbench info: " << *why << "\n";
    return kExitUsage;
  }
  std::string backend_error;
  auto backend = backend_for(o.backend, o.device, false, backend_error);
  if (!backend) {
    std::cerr << "flashbench info: " << backend_error << "\n";
    return kExitUsage;
  }
  nlohmann::json j;
  j["tool"] = tool_json();
  j["backend"] = backend->name();
  j["device"] = backend->device();
  j["settings"] = backend->settings();
  j["kernels"] = nlohmann::json::array();
  std::vector<KernelSupport> support;
  const std::vector<const Descriptor*> kernels = active_kernels().user_kernels();
  for (const Descriptor* k : kernels) {
    support.push_back(kernel_support(*backend, *k));
    std::vector<std::string> all_dtypes, all_passes, backends;
    for (Dtype t : k->dtypes) all_dtypes.emplace_back(to_string(t));
    for (Pass p : k->passes) all_passes.emplace_back(to_string(p));
    for (BackendId b : k->backends()) backends.emplace_back(to_string(b));
    nlohmann::json entry = {{"name", k->name},
                            {"description", k->description},
                            {"role", std::string(to_string(k->role))},
                            {"head_dims", k->head_dims},
                            {"dtypes", support.back().dtypes},
                            {"passes", support.back().passes},
                            {"all_dtypes", all_dtypes},
                            {"all_passes", all_passes},
                            {"backends", backends},
                            {"origin", k->origin}};
    if (!support.back().why_not.empty()) entry["unavailable"] = support.back().why_not;
    j["kernels"].push_back(entry);
  }
  if (o.ceilings) {
#if FLASHBENCH_HAVE_CUDA
    if (backend->name() != "cuda") {
      std::cerr << "flashbench info --ceilings: needs the CUDA backend (no GPU visible)\n";
      return kExitUsage;
    }
    j["ceilings"] = measure_ceilings(o.device.value_or(0));
#else
    std::cerr << "flashbench info --ceilings: this build has no CUDA backend\n";
    return kExitUsage;
#endif
  }
  if (o.json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }

  std::cout << fmt::format("flashbench {} (git {}), backend {}\n", FLASHBENCH_VERSION, FLASHBENCH_GIT,
                           backend->name());
  for (const char* section : {"device", "settings", "ceilings"}) {
    if (!j.contains(section)) continue;
    std::vector<std::pair<std::string, std::string>> lines;
    flatten(j[section], "", lines);
    std::size_t w = 0;
    for (const auto& [k, v] : lines) w = std::max(w, k.size());
    std::cout << "\n" << section << ":\n";
    for (const auto& [k, v] : lines) std::cout << fmt::format("  {:<{}}  {}\n", k, w, v);
  }

  // Kernels: what each runs here, then its one-line description.
  std::vector<std::vector<std::string>> rows = {{"kernel", "dtypes", "head dims", "passes"}};
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Descriptor& k = *kernels[i];
    const KernelSupport& ks = support[i];
    const std::string dims = k.head_dims.empty() ? "any" : fmt::format("{}", fmt::join(k.head_dims, " "));
    if (ks.dtypes.empty())
      rows.push_back({std::string(k.name), "-", dims, "- (" + ks.why_not + ")"});
    else
      rows.push_back({std::string(k.name), fmt::format("{}", fmt::join(ks.dtypes, " ")), dims,
                      fmt::format("{}", fmt::join(ks.passes, " "))});
  }
  std::vector<std::size_t> w(4, 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c + 1 < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
  std::cout << fmt::format("\nkernels on this backend ({}):\n", backend->name());
  for (const auto& r : rows)
    std::cout << fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}\n", r[0], w[0], r[1], w[1], r[2], w[2], r[3]);
  std::cout << "\n";
  for (const Descriptor* k : kernels) std::cout << fmt::format("  {:<{}}  {}\n", k->name, w[0], k->description);
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
  out.schema_version = kSchemaVersion;  // what we write
  out.records.clear();
  out.spec = nlohmann::json::array();
  std::set<std::string> seen;
  const std::string device = out.device.value("name", std::string());
  const auto env_of = [](const Results& r) { return r.settings.value("env", nlohmann::json::object()); };
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Results& p = parts[i];
    const std::string d = p.device.value("name", std::string());
    if (!o.force && d != device) {
      std::cerr << fmt::format("flashbench merge: {} is from device '{}', {} from '{}' (use --force to mix)\n",
                               o.inputs[i], d, o.inputs[0], device);
      return kExitUsage;
    }
    // The merged file's settings are the first's: its FB_* kernel settings (settings.env) would misname another's.
    if (!o.force && env_of(p) != env_of(parts.front())) {
      std::cerr << fmt::format("flashbench merge: {} ran under FB_* kernel settings {}, {} under {} (use --force to "
                               "mix: the merged file keeps the first's)\n",
                               o.inputs[i], env_line(env_of(p)), o.inputs[0], env_line(env_of(parts.front())));
      return kExitUsage;
    }
    // A newer minor version only adds fields: the same major merges (and is written as ours).
    const auto major = [](const std::string& v) { return v.substr(0, v.find('.')); };
    if (!o.force && major(p.schema_version) != major(out.schema_version)) {
      std::cerr << fmt::format("flashbench merge: {} has schema {}, {} has {} (use --force to mix)\n",
                               o.inputs[i], p.schema_version, o.inputs[0], out.schema_version);
      return kExitUsage;
    }
    out.spec.push_back(p.spec);
    if (!p.complete) {  // a merge of partial runs is partial too
      out.complete = false;
      std::cerr << fmt::format("flashbench merge: note: {} is an interrupted run (\"complete\": false)\n",
                               o.inputs[i]);
    }
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

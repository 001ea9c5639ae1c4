#include "runner.h"

#include "judge.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

namespace fb {

namespace {

double error_of(const ErrorReport& rep, const std::string& tensor) {
  for (const auto& [name, e] : rep.max_abs)
    if (name == tensor) return rep.nonfinite > 0 ? std::numeric_limits<double>::infinity() : e;
  return std::numeric_limits<double>::infinity();
}

// max |ref| of a tensor; NaN when unknown (then no bound holds).
double magnitude_of(const ErrorReport& rep, const std::string& tensor) {
  for (const auto& [name, m] : rep.magnitude)
    if (name == tensor) return m;
  return std::numeric_limits<double>::quiet_NaN();
}

// JSON has no inf/nan: the record layer writes them as strings; here we keep doubles.
nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : "inf";
}

// Judges every tensor of `mine` under `rule`; writes errors[T] {ref, scale, bound} and returns the
// verdict (false on any NaN).
bool judge(Record& r, const ErrorReport& mine, Rule rule, const ErrorReport* baseline) {
  bool pass = mine.nonfinite == 0 && !mine.max_abs.empty();
  const double dv_scale = magnitude_of(mine, "dV");
  for (const auto& [tensor, e] : mine.max_abs) {
    const double base_err = baseline ? error_of(*baseline, tensor) : 0.0;
    const TensorBound b =
        tensor_bound(rule, tensor, r.c.dtype, magnitude_of(mine, tensor), dv_scale, base_err, r.c.seq_k);
    r.errors[tensor]["scale"] = number(b.scale);
    r.errors[tensor]["bound"] = number(b.bound);
    if (b.rule != rule) r.errors[tensor]["rule"] = std::string(to_string(b.rule)) + " (cancelled)";
    if (!(e <= b.bound)) pass = false;  // written so that NaN fails
  }
  r.errors["rule"] = std::string(to_string(rule));
  return pass;
}

// A timed kernel's record: its time, rates, memory and clocks from the backend's run.
void fill_timed(Record& r, const Descriptor& info, const KernelRun& run) {
  r.time_ms = summarize(run.times_ms);
  r.peak_bytes = run.peak_bytes;
  r.bytes_moved = info.bytes ? info.bytes(r.c, run.tile) : 0.0;
  if (info.kv_splits) r.kv_splits = splits_used(r.c, run.tile);
  r.clocks = clock_report(run.sm_mhz_min, run.clock_event_reasons);
  const double seconds = r.time_ms.median * 1e-3;
  if (seconds > 0) {
    r.tflops = r.flops / seconds / 1e12;
    r.gbps = r.bytes_moved / seconds / 1e9;
  }
}

}  // namespace

void verify_case(Backend& backend, std::vector<Record>& records, const KernelSet& kernels) {
  bool any_ok = std::any_of(records.begin(), records.end(),
                            [](const Record& r) { return r.status == Status::ok; });
  if (!any_ok) return;
  try {
    backend.run_reference();
  } catch (const std::exception& e) {
    // Nothing to judge against: never success. The run exits 1 with this reason.
    for (auto& r : records)
      if (r.status == Status::ok) {
        r.verified = false;
        r.errors["reference_failed"] = e.what();
      }
    return;
  }

  std::vector<ErrorReport> vs_ref(records.size());
  std::size_t baseline = records.size();
  for (std::size_t i = 0; i < records.size(); ++i) {
    Record& r = records[i];
    if (r.status != Status::ok) continue;
    vs_ref[i] = backend.compare(r.kernel, "reference");
    r.ref_max_abs_err = vs_ref[i].worst();
    for (const auto& [tensor, e] : vs_ref[i].max_abs) r.errors[tensor]["ref"] = number(e);
    if (vs_ref[i].nonfinite > 0) r.errors["nonfinite"] = vs_ref[i].nonfinite;
    r.errors["rows_compared"] = vs_ref[i].rows_compared;
    const Descriptor* d = kernels.find(r.kernel);
    if (d && d->role == Role::baseline && baseline == records.size()) baseline = i;
  }

  // The baseline first: only a baseline that met its own tolerance may set the tiled kernels' bound.
  const ErrorReport* base_err = nullptr;
  if (baseline < records.size()) {
    Record& b = records[baseline];
    b.verified = judge(b, vs_ref[baseline], Rule::baseline, nullptr);
    if (*b.verified) base_err = &vs_ref[baseline];
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    Record& r = records[i];
    if (r.status != Status::ok || i == baseline) continue;
    const Rule rule = base_err ? Rule::relative : Rule::tiled_no_baseline;
    r.verified = judge(r, vs_ref[i], rule, base_err);
    if (baseline < records.size() && records[baseline].status == Status::ok) {
      ErrorReport diff = backend.compare(r.kernel, records[baseline].kernel);
      r.max_abs_diff = diff.worst();
      for (const auto& [tensor, e] : diff.max_abs) r.errors[tensor]["naive"] = number(e);
    }
  }
}

void attach_ceilings(Results& results, const nlohmann::json& ceilings) {
  results.device["ceilings"] = ceilings;
  const double gemm = ceilings.value("gemm_bf16_tflops", 0.0);
  const double copy = ceilings.value("copy_gbps", 0.0);
  for (Record& r : results.records) {
    if (r.status != Status::ok) continue;
    if (gemm > 0) r.roofline["pct_of_gemm_peak"] = 100.0 * r.tflops / gemm;
    if (copy > 0 && r.bytes_moved > 0) r.roofline["pct_of_copy_bandwidth"] = 100.0 * r.gbps / copy;
  }
}

namespace {

// Interleaved timing of a case's armed kernels (records[armed[i]] is armed kernel i's): the rounds, then each
// record filled. A kernel that fails in the rounds is recorded failed and disarmed, and the rest are timed again
// from their warm-up (their samples so far dropped: every kernel's reps must come from the same rounds); any
// other failure fails every armed kernel. `lost` and `faulted` as in run_sweep.
void time_armed(Backend& backend, const TimingPolicy& timing, const KernelSet& kernels, std::vector<Record>& records,
                std::vector<std::size_t> armed, std::optional<std::string>& lost, std::string& faulted) {
  while (!armed.empty()) {
    try {
      const std::vector<KernelRun> runs = backend.run_armed(timing);
      for (std::size_t i = 0; i < armed.size() && i < runs.size(); ++i) {
        Record& r = records[armed[i]];
        fill_timed(r, *kernels.find(r.kernel), runs[i]);
      }
      return;
    } catch (const RoundError& e) {
      const std::size_t i = std::min(e.kernel, armed.size() - 1);
      Record& r = records[armed[i]];
      r.status = Status::failed;
      r.reason = e.what();
      lost = backend.context_lost();
      if (lost) {
        faulted = r.kernel;
        break;
      }
      backend.disarm(r.kernel);
      armed.erase(armed.begin() + std::ptrdiff_t(i));
    } catch (const std::exception& e) {
      for (const std::size_t i : armed) {
        records[i].status = Status::failed;
        records[i].reason = std::string("interleaved timing failed: ") + e.what();
      }
      lost = backend.context_lost();
      if (lost) faulted = records[armed.front()].kernel;
      break;
    }
  }
  // What is left armed after a failure is not timed: disarmed, its buffers freed (after a loss, release() does it).
  if (lost) return;
  try {
    for (const std::size_t i : armed) backend.disarm(records[i].kernel);
  } catch (const std::exception&) {
    // release() drops whatever is still armed; the records already say what failed.
  }
}

}  // namespace

Results run_sweep(const Sweep& sweep, Backend& backend, const RunnerOptions& opts) {
  using clock = std::chrono::steady_clock;
  const KernelSet& kernels = opts.kernels ? *opts.kernels : active_kernels();
  Results res;
  res.backend = backend.name();
  res.device = backend.device();
  res.spec = sweep.spec;
  res.settings = backend.settings();
  TimingPolicy timing = opts.timing;
  timing.warmup = sweep.warmup;
  timing.reps = sweep.reps;
  timing.rep_order = sweep.rep_order;
  const bool interleaved = timing.rep_order == RepOrder::interleaved;
  res.settings["rep_order"] = std::string(to_string(timing.rep_order));
  res.settings["warmup"] = sweep.warmup;
  res.settings["reps"] = sweep.reps;
  res.settings["timing"] = timing.to_json();
  res.settings["seed"] = sweep.seed;
  res.settings["verify"] = sweep.verify;
  res.settings["input_scale"] = sweep.input_scale;

  const auto start = clock::now();
  const std::size_t total = sweep.cases.size();
  std::optional<std::string> lost;  // what lost the backend's context, once it is (the sweep ends there)
  for (std::size_t i = 0; i < total && !lost; ++i) {
    if (opts.stop_requested && opts.stop_requested()) break;
    const Case& c = sweep.cases[i];
    if (opts.on_case) {
      Progress p;
      p.index = i + 1;
      p.total = total;
      p.elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
      p.eta_s = i == 0 ? 0 : p.elapsed_s / double(i) * double(total - i);
      p.c = &c;
      opts.on_case(p);
    }

    std::vector<Record> records;
    // What cannot run is known before the inputs exist (check_fits counts them when not held): a case
    // whose every kernel is skipped allocates nothing. A check that throws fails that kernel only.
    std::vector<std::optional<std::string>> skip(sweep.kernels.size()), check_error(sweep.kernels.size());
    bool any_runs = false;
    for (std::size_t k = 0; k < sweep.kernels.size(); ++k) {
      const Descriptor* info = kernels.find(sweep.kernels[k]);
      if (!info) continue;
      try {
        skip[k] = unavailable_on(*info, backend.name());
        if (!skip[k]) skip[k] = unsupported_reason(*info, c);
        if (!skip[k]) skip[k] = backend.check_fits(c, *info);
      } catch (const std::exception& e) {
        check_error[k] = std::string("checking whether it fits failed: ") + e.what();
      }
      any_runs |= !skip[k] && !check_error[k];
    }
    std::string prepare_error;
    try {
      if (any_runs) backend.prepare(c, sweep.seed, sweep.input_scale);
    } catch (const std::exception& e) {
      prepare_error = std::string("preparing inputs failed: ") + e.what();
    }
    std::string faulted;  // the kernel whose failure lost the context, if one did in this case
    std::vector<std::size_t> armed;  // interleaved: the records of the kernels armed, in arming order
    for (std::size_t k = 0; k < sweep.kernels.size(); ++k) {
      const std::string& name = sweep.kernels[k];
      Record r;
      r.c = c;
      r.kernel = name;
      r.flops = flops(c);
      const Descriptor* info = kernels.find(name);
      if (!info) {
        r.status = Status::failed;
        r.reason = "unknown kernel '" + name + "'";
      } else if (skip[k]) {
        r.status = Status::skipped;
        r.reason = *skip[k];
      } else if (check_error[k]) {
        r.status = Status::failed;
        r.reason = *check_error[k];
      } else if (!prepare_error.empty()) {
        r.status = Status::failed;
        r.reason = prepare_error;
      } else if (lost) {
        r.status = Status::skipped;
        r.reason = *lost + " when kernel '" + faulted + "' failed in this case: not run";
      } else {
        try {
          if (auto why_not = backend.check_fits(c, *info)) {  // again: inputs, kept outputs and armed kernels held now
            r.status = Status::skipped;
            r.reason = *why_not;
          } else if (interleaved) {
            backend.arm(*info, timing);  // timed below, with the case's other armed kernels
            armed.push_back(records.size());
          } else {
            fill_timed(r, *info, backend.run(*info, timing));
          }
        } catch (const std::exception& e) {
          r.status = Status::failed;
          r.reason = e.what();
          // A fault may have taken the device with it: then nothing after this kernel can run.
          lost = backend.context_lost();
          if (lost) faulted = name;
        }
      }
      records.push_back(std::move(r));
    }
    if (!armed.empty() && !lost) time_armed(backend, timing, kernels, records, armed, lost, faulted);
    for (const std::size_t i : armed)  // armed, then a fault in this case lost the context before they were timed
      if (lost && records[i].status == Status::ok && records[i].time_ms.reps == 0) {
        records[i].status = Status::skipped;
        records[i].reason = *lost + " when kernel '" + faulted + "' failed in this case: not timed";
      }
    if (sweep.verify && !lost) {
      try {
        verify_case(backend, records, kernels);
      } catch (const std::exception& e) {
        for (auto& r : records)
          if (r.status == Status::ok) {
            r.verified = false;
            r.errors["verify_failed"] = e.what();
          }
      }
    } else if (sweep.verify) {  // measured before the fault, never judged: not a pass
      for (auto& r : records)
        if (r.status == Status::ok) {
          r.verified = false;
          r.errors["verify_failed"] = *lost + " before this case was verified";
        }
    }
    if (opts.before_release && !lost) opts.before_release(c, backend, records);
    try {
      backend.release();
    } catch (const std::exception&) {
      // The next prepare() starts from scratch; a failed release must not stop the sweep.
    }
    // A fault that surfaced outside a kernel's run (the reference, a comparison, --dump, the release)
    // leaves the context just as lost.
    if (!lost) lost = backend.context_lost();
    if (opts.on_case_done) opts.on_case_done(records);
    for (auto& r : records) res.records.push_back(std::move(r));

    if (lost) {  // the cases left are recorded, not run
      for (std::size_t j = i + 1; j < total; ++j)
        for (const std::string& name : sweep.kernels) {
          Record r;
          r.c = sweep.cases[j];
          r.kernel = name;
          r.flops = flops(r.c);
          r.status = Status::skipped;
          r.reason = *lost + " after case " + c.key() + ": " + opts.rerun_hint;
          res.records.push_back(std::move(r));
        }
      if (opts.on_context_lost) opts.on_context_lost(*lost, c, total - i - 1);
    }
  }
  // Clocks and free memory at the end too: a throttled or crowded device shows here (not after a
  // loss: the device can tell nothing more).
  if (!lost) {
    const nlohmann::json end = backend.device();
    for (const char* key : {"clocks", "memory"})
      if (end.contains(key)) res.device[std::string(key) + "_end"] = end[key];
  }
  return res;
}

}  // namespace fb

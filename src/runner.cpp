#include "runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace fb {

namespace {

// Unit roundoff-based constants per dtype.
double epsilon(Dtype t) {
  switch (t) {
    case Dtype::fp64: return std::numeric_limits<double>::epsilon();
    case Dtype::fp32: return std::numeric_limits<float>::epsilon();
    case Dtype::fp16: return 9.765625e-4;  // 2^-10
    case Dtype::bf16: return 7.8125e-3;    // 2^-7
  }
  return 1.0;
}

bool is_gradient(const std::string& tensor) { return !tensor.empty() && tensor[0] == 'd'; }

// err(kernel) <= kFactor * err(naive) + floor: 2x for forward outputs as FlashAttention's own tests
// use; 3x for gradients, whose longer reduction chains amplify rounding differences.
constexpr double kForwardFactor = 2.0;
constexpr double kGradientFactor = 3.0;

// max |ref| of a tensor (1 when unknown): rounding errors scale with the values rounded.
double magnitude_of(const ErrorReport& rep, const std::string& tensor) {
  for (const auto& [name, m] : rep.magnitude)
    if (name == tensor && std::isfinite(m)) return std::max(1.0, m);
  return 1.0;
}

double error_of(const ErrorReport& rep, const std::string& tensor) {
  for (const auto& [name, e] : rep.max_abs)
    if (name == tensor) return rep.nonfinite > 0 ? std::numeric_limits<double>::infinity() : e;
  return std::numeric_limits<double>::infinity();
}

// JSON has no inf/nan: the record layer writes them as strings; here we keep doubles.
nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : "inf";
}

}  // namespace

// Absolute error bound vs the fp64 reference for standard-normal inputs, for a kernel with no naive
// result to be compared with. S and P held in the input dtype dominate the low-precision errors.
double dtype_tolerance(Dtype t) {
  switch (t) {
    case Dtype::fp64: return 1e-10;
    case Dtype::fp32: return 1e-4;
    case Dtype::fp16: return 2e-2;
    case Dtype::bf16: return 1e-1;
  }
  return 0;
}

// Rounding of the output itself, per unit of the reference's magnitude: 2 eps covers the final
// rounding (half an ulp) and the different summation order of a tiled reduction.
double rounding_floor(Dtype t) { return 2 * epsilon(t); }

void verify_case(Backend& backend, std::vector<Record>& records) {
  bool any_ok = std::any_of(records.begin(), records.end(),
                            [](const Record& r) { return r.status == Status::ok; });
  if (!any_ok) return;
  try {
    backend.run_reference();
  } catch (const std::exception& e) {
    for (auto& r : records)
      if (r.status == Status::ok) r.errors["reference_failed"] = e.what();
    return;
  }

  std::vector<ErrorReport> vs_ref(records.size());
  const Record* naive = nullptr;
  const ErrorReport* naive_err = nullptr;
  for (std::size_t i = 0; i < records.size(); ++i) {
    Record& r = records[i];
    if (r.status != Status::ok) continue;
    vs_ref[i] = backend.compare(r.kernel, "reference");
    r.ref_max_abs_err = vs_ref[i].worst();
    for (const auto& [tensor, e] : vs_ref[i].max_abs) r.errors[tensor]["ref"] = number(e);
    if (vs_ref[i].nonfinite > 0) r.errors["nonfinite"] = vs_ref[i].nonfinite;
    r.errors["rows_compared"] = vs_ref[i].rows_compared;
    if (r.kernel == "naive") {
      naive = &r;
      naive_err = &vs_ref[i];
    }
  }

  const Dtype t = records.front().c.dtype;
  for (std::size_t i = 0; i < records.size(); ++i) {
    Record& r = records[i];
    if (r.status != Status::ok) continue;
    const ErrorReport& mine = vs_ref[i];
    bool pass = mine.nonfinite == 0 && !mine.max_abs.empty();
    const bool relative_to_naive = naive != nullptr && &r != naive && naive_err->nonfinite == 0;
    for (const auto& [tensor, e] : mine.max_abs) {
      // Both bounds are per unit of the reference's magnitude (at least 1): an LSE of 600 from scaled
      // inputs carries 600x the absolute rounding of an LSE of 1.
      double bound = dtype_tolerance(t) * magnitude_of(mine, tensor);
      if (relative_to_naive) {
        const double factor = is_gradient(tensor) ? kGradientFactor : kForwardFactor;
        bound = factor * error_of(*naive_err, tensor) + rounding_floor(t) * magnitude_of(mine, tensor);
      }
      r.errors[tensor]["bound"] = number(bound);
      if (!(e <= bound)) pass = false;  // written so that NaN fails
    }
    r.verified = pass;
    if (relative_to_naive) {
      ErrorReport diff = backend.compare(r.kernel, naive->kernel);
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

Results run_sweep(const Sweep& sweep, Backend& backend, const RunnerOptions& opts) {
  using clock = std::chrono::steady_clock;
  Results res;
  res.backend = backend.name();
  res.device = backend.device();
  res.spec = sweep.spec;
  res.settings = backend.settings();
  TimingPolicy timing = opts.timing;
  timing.warmup = sweep.warmup;
  timing.reps = sweep.reps;
  res.settings["warmup"] = sweep.warmup;
  res.settings["reps"] = sweep.reps;
  res.settings["timing"] = timing.to_json();
  res.settings["seed"] = sweep.seed;
  res.settings["verify"] = sweep.verify;
  res.settings["input_scale"] = sweep.input_scale;

  const auto start = clock::now();
  const std::size_t total = sweep.cases.size();
  for (std::size_t i = 0; i < total; ++i) {
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
    // whose every kernel is skipped allocates nothing.
    std::vector<std::optional<std::string>> skip(sweep.kernels.size());
    bool any_runs = false;
    for (std::size_t k = 0; k < sweep.kernels.size(); ++k) {
      const KernelInfo* info = find_kernel(sweep.kernels[k]);
      if (!info) continue;
      skip[k] = unsupported_reason(*info, c);
      if (!skip[k]) skip[k] = backend.check_fits(c, *info);
      any_runs |= !skip[k];
    }
    std::string prepare_error;
    try {
      if (any_runs) backend.prepare(c, sweep.seed, sweep.input_scale);
    } catch (const std::exception& e) {
      prepare_error = std::string("preparing inputs failed: ") + e.what();
    }
    for (std::size_t k = 0; k < sweep.kernels.size(); ++k) {
      const std::string& name = sweep.kernels[k];
      Record r;
      r.c = c;
      r.kernel = name;
      r.flops = flops(c);
      const KernelInfo* info = find_kernel(name);
      if (!info) {
        r.status = Status::failed;
        r.reason = "unknown kernel '" + name + "'";
      } else if (skip[k]) {
        r.status = Status::skipped;
        r.reason = *skip[k];
      } else if (!prepare_error.empty()) {
        r.status = Status::failed;
        r.reason = prepare_error;
      } else if (auto why_not = backend.check_fits(c, *info)) {  // again: inputs and kept outputs held now
        r.status = Status::skipped;
        r.reason = *why_not;
      } else {
        try {
          KernelRun run = backend.run(*info, timing);
          r.time_ms = summarize(run.times_ms);
          r.peak_bytes = run.peak_bytes;
          r.bytes_moved = bytes_moved(c, info->algo, run.query_tile);
          const double seconds = r.time_ms.median * 1e-3;
          if (seconds > 0) {
            r.tflops = r.flops / seconds / 1e12;
            r.gbps = r.bytes_moved / seconds / 1e9;
          }
        } catch (const std::exception& e) {
          r.status = Status::failed;
          r.reason = e.what();
        }
      }
      records.push_back(std::move(r));
    }
    if (sweep.verify) {
      try {
        verify_case(backend, records);
      } catch (const std::exception& e) {
        for (auto& r : records)
          if (r.status == Status::ok) {
            r.verified = false;
            r.errors["verify_failed"] = e.what();
          }
      }
    }
    if (opts.before_release) opts.before_release(c, backend, records);
    try {
      backend.release();
    } catch (const std::exception&) {
      // The next prepare() starts from scratch; a failed release must not stop the sweep.
    }
    if (opts.on_case_done) opts.on_case_done(records);
    for (auto& r : records) res.records.push_back(std::move(r));
  }
  // Clocks and free memory at the end too: a throttled or crowded device shows here.
  const nlohmann::json end = backend.device();
  for (const char* key : {"clocks", "memory"})
    if (end.contains(key)) res.device[std::string(key) + "_end"] = end[key];
  return res;
}

}  // namespace fb

// Planning and running the SDPA graphs (cudnn_sdpa.h): one cuDNN handle per device, one plan per
// (device, pass, shape), both kept for the life of the process.
#include "cudnn/cudnn_sdpa.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_runtime.h>

#include "common/fp8.h"
#include "cudnn/fp8_out.h"
#include "cudnn/sdpa_graph.h"

namespace fb::cuda::cudnn_sdpa {
namespace {

// cuDNN versions (cudnnGetVersion: major * 10000 + minor * 100 + patch) whose behaviour we follow.
constexpr std::size_t kNegInfFromVersion = 91000;       // earlier: masked scores as the lowest float
// Earlier, the backward is wrong for s_k % 128 != 0 unless the graph has a padding mask (cuDNN's bug;
// cudnn-frontend's workaround, built here: Shape::padding_mask).
constexpr std::size_t kBwdAnyKeysFromVersion = 91600;
constexpr std::int64_t kBwdKeyMultiple = 128;
// The fused engines' head-dim range (fp16/bf16, Hopper): multiples of 8 up to 256.
constexpr int kHeadDimMultiple = 8, kMaxHeadDim = 256;
// FP8 (cudnn-frontend's support checks): from 9.1, not 9.10.0; head dims multiples of 16 up to 256.
constexpr std::size_t kFp8FromVersion = 90100;
constexpr std::size_t kFp8BrokenVersion = 91000;
constexpr int kFp8HeadDimMultiple = 16;
// An e4m3 O is stored as O * kFp8OHeadroom / descale_v: |O| <= max|V| = 448 descale_v, plus what P's
// rounding adds to a row's weights (up to 2^-4), stays below e4m3's 448 with room; relative precision
// is the same anywhere in e4m3's normal range, so the headroom costs nothing. A power of two keeps
// the widening (times descale_v / kFp8OHeadroom) to one rounding, to bf16.
constexpr float kFp8OHeadroom = 0.5f;
// Variant packs kept per plan (Plan::packs).
constexpr std::size_t kMaxPacks = 8;
// Each workspace part starts on this boundary.
constexpr std::size_t kWorkspaceAlign = 256;

std::size_t align_up(std::size_t n) { return (n + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

enum class Which { fwd, bwd };

struct Key {
  int device;
  Which which;
  Shape shape;
  bool operator<(const Key& o) const {
    return std::tie(device, which) < std::tie(o.device, o.which) ||
           (std::tie(device, which) == std::tie(o.device, o.which) && shape < o.shape);
  }
};

// Host values of the by-value scalars (the variant pack points at them).
struct Scalars {
  float scale, neg_inf, one;
  std::int32_t seq_q, seq_k;
  explicit Scalars(const AttentionParams& p)
      : scale(float(p.scale)),
        neg_inf(cudnnGetVersion() < kNegInfFromVersion ? std::numeric_limits<float>::lowest()
                                                        : -std::numeric_limits<float>::infinity()),
        one(1.0f),
        seq_q(p.seq_q),
        seq_k(p.seq_k) {}
  bool operator==(const Scalars& o) const {
    return std::tie(scale, neg_inf, one, seq_q, seq_k) == std::tie(o.scale, o.neg_inf, o.one, o.seq_q, o.seq_k);
  }
};

// The fp8 forward's per-tensor factors, in Uid order from kDescaleQ, then the two amax outputs.
constexpr int kFp8Factors = kScaleO - kDescaleQ + 1;
constexpr int kFp8DeviceScalars = kAmaxO - kDescaleQ + 1;
constexpr std::size_t kFp8ScalarBytes = 4096;
// Diagnostics (cudnn_sdpa.h); read and written under State::mutex.
Fp8Probe& probe() {
  static Fp8Probe p;
  return p;
}
Fp8Last& last_fp8() {
  static Fp8Last l;
  return l;
}
// Floats between two consecutive device scalars: packed, or (Fp8Probe::scalars_apart) 256 bytes.
constexpr int kScalarsApart = 64;
static_assert(kFp8DeviceScalars * kScalarsApart * sizeof(float) <= kFp8ScalarBytes);
int scalar_stride() { return probe().scalars_apart ? kScalarsApart : 1; }

struct Fp8Factors {
  std::array<float, kFp8Factors> values;
  int stride;  // scalar_stride() they were laid out with
  explicit Fp8Factors(const AttentionParams& p, bool o_e4m3)
      : values{p.descale_q, p.descale_k, p.descale_v, 1.0f / p.p_scale, p.p_scale,
               o_e4m3 ? kFp8OHeadroom / p.descale_v * probe().o_scale_factor : 1.0f},
        stride(scalar_stride()) {}
  bool operator==(const Fp8Factors& o) const { return values == o.values && stride == o.stride; }
};

// A planned graph, or why cuDNN would not plan it.
struct Plan {
  Graph graph;
  std::optional<BackendDesc> plan;
  std::size_t plan_workspace = 0;  // bytes the plan asks for
  std::string why_not;             // empty when `plan` is set
  std::string engine;              // the engine configuration, when asked for (FB_CUDNN_FWD_PROBE set)
  // fp8 forward: O stored in e4m3 in the workspace (after the plan's part), then widened to bf16.
  bool o_e4m3 = false;
  // fp8 forward: the kFp8DeviceScalars fp32 values cuDNN reads (and writes: the amaxes) from device
  // memory. Ours, not the runner's (32 bytes, allocated with the plan's first run, never freed, as
  // the plan is not): in the workspace they would have to be uploaded inside every timed call.
  float* device_scalars = nullptr;
  std::optional<Fp8Factors> uploaded;  // what device_scalars holds
  // Backward with Shape::padding_mask: the lengths, b seq_q values then b seq_k values (int32),
  // ours as device_scalars are, uploaded once (they are the plan's shape).
  std::int32_t* device_seq_lens = nullptr;
  // Variant packs by the buffers they bind (device pointers, then the workspace). The runner repeats a
  // call with the same buffers, and a caller may take turns between a few: building a pack again
  // would put host work between the timing events, counted as kernel time.
  struct Pack {
    explicit Pack(const Scalars& v) : scalars(v) {}
    Scalars scalars;  // the pack points at these
    BackendDesc desc{CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR};
  };
  std::map<std::vector<void*>, std::unique_ptr<Pack>> packs;
};

// The state shared by every call: the mutex serialises planning and execution (a handle is bound to
// one stream at a time; the runner calls from one thread, but nothing here relies on it).
struct State {
  std::mutex mutex;
  std::map<int, cudnnHandle_t> handles;  // by device
  std::map<Key, std::unique_ptr<Plan>> plans;
};
// Never destroyed: handles and plans live until the process ends, when destroying them after the
// CUDA runtime's own teardown would fail.
State& state() {
  static State* s = new State;
  return *s;
}

int current_device() {
  int device = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

cudnnHandle_t handle_for(State& st, int device) {
  auto it = st.handles.find(device);
  if (it != st.handles.end()) return it->second;
  cudnnHandle_t h = nullptr;
  FB_CUDNN_CHECK(cudnnCreate(&h));
  st.handles.emplace(device, h);
  return h;
}

std::string version_string(std::size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

// Diagnostic (scripts/cudnn_fp8_h200.sh): FB_CUDNN_ENGINE_SKIP=n passes over the first n engine
// configurations that finalise, to tell an engine's bug from ours.
int engine_skip() {
  static const int n = [] {
    const char* v = std::getenv("FB_CUDNN_ENGINE_SKIP");
    return v && *v ? std::max(0, std::atoi(v)) : 0;
  }();
  return n;
}

// FB_CUDNN_FWD_PROBE, measurement only (session 15: does the Stats output alone change cuDNN's engine and
// time? PyTorch's cuDNN forward under no_grad builds its graph without Stats and ran another kernel
// configuration, 173 against our 203 us, at d = 64 causal N = 512, results/h200/s15/callD): `nostats` builds
// the fp16/bf16 forward graph without the Stats (LSE) output (Shape::no_stats; cudnn-frontend's generate_stats /
// is_inference false: its softmax without the LOG and ADD nodes). LSE is then not written: it
// keeps the runner's NaN poison, so such a forward fails verification on LSE while O is judged as ever
// (flashbench has no notion of a kernel without LSE). A backward reads the forward's LSE, so backward passes
// are refused under it; the fp8 forward's graph is unchanged. Unset, empty or `default`: the shipped graph.
// Set to either word, each forward plan prints one stderr line naming its engine configuration (nothing else
// differs under `default`). Any other word is refused (a typo would otherwise time the default twice).
struct FwdProbe {
  bool engine_notes = false;  // the variable named a word
  bool no_stats = false;
};
const FwdProbe& fwd_probe() {
  static const FwdProbe probe = [] {
    const char* e = std::getenv("FB_CUDNN_FWD_PROBE");
    const std::string s = e != nullptr ? e : "";
    FwdProbe f;
    if (s.empty()) return f;
    f.engine_notes = true;
    if (s == "default") return f;
    if (s == "nostats") {
      f.no_stats = true;
      return f;
    }
    throw std::invalid_argument("FB_CUDNN_FWD_PROBE: '" + s +
                                "' is not a cudnn forward probe (nostats; unset, empty or default for the "
                                "shipped graph)");
  }();
  return probe;
}

// "engine 8, knobs 24=7 ..." for an engine configuration: cuDNN's global engine index and its knob choices
// (CUDNN_KNOB_TYPE_* numbers from cudnn_graph.h, 24 = KERNEL_CFG); what cuDNN does not say becomes "?".
// Diagnostics only: never throws.
std::string describe_config(cudnnBackendDescriptor_t config) {
  std::string out = "engine ?";
  try {
    BackendDesc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t e = engine.get();
    std::int64_t n = 0, index = -1;
    if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) ==
            CUDNN_STATUS_SUCCESS &&
        cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index) ==
            CUDNN_STATUS_SUCCESS)
      out = "engine " + std::to_string(index);
    std::vector<BackendDesc> knobs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i)
      raw.push_back(knobs.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR).get());
    std::int64_t got = 0;
    if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 std::int64_t(raw.size()), &got, raw.data()) != CUDNN_STATUS_SUCCESS)
      return out + ", knobs ?";
    out += ", knobs";
    for (std::int64_t i = 0; i < std::min<std::int64_t>(got, std::int64_t(raw.size())); ++i) {
      cudnnBackendKnobType_t type{};
      std::int64_t value = 0;
      if (cudnnBackendGetAttribute(raw[std::size_t(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n,
                                   &type) != CUDNN_STATUS_SUCCESS ||
          cudnnBackendGetAttribute(raw[std::size_t(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n,
                                   &value) != CUDNN_STATUS_SUCCESS)
        out += " ?";
      else
        out += " " + std::to_string(int(type)) + "=" + std::to_string(value);
    }
    if (got == 0) out += " none";
  } catch (const std::exception&) {
  }
  return out;
}

// Heuristics (mode A, then the fallback list), then the first engine configuration that finalises. With
// `describe`, out.engine names it (describe_config, and which heuristics list and place it came from).
void plan_graph(Plan& out, cudnnHandle_t handle, bool describe = false) {
  const cudnnBackendDescriptor_t graph = out.graph.descs.emplace_back(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR).get();
  FB_CUDNN_SET(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
               std::int64_t(out.graph.ops.size()), out.graph.ops.data());
  FB_CUDNN_SET(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  FB_CUDNN_CHECK(cudnnBackendFinalize(graph));

  std::string refusals;  // what each attempt said, for the reason when none works
  int to_skip = engine_skip();
  const auto note = [&](const char* what, cudnnStatus_t st) {
    const std::string detail = cudnn_detail::last_error();
    refusals += std::string(refusals.empty() ? "" : "; ") + what + ": " + cudnnGetErrorString(st) +
                (detail.empty() ? "" : " (" + detail + ")");
  };
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    BackendDesc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    FB_CUDNN_SET(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    FB_CUDNN_SET(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    const char* heur_name = mode == CUDNN_HEUR_MODE_A ? "heuristics mode A" : "fallback heuristics";
    if (const cudnnStatus_t st = cudnnBackendFinalize(heur.get()); st != CUDNN_STATUS_SUCCESS) {
      note(heur_name, st);
      continue;
    }
    std::int64_t count = 0;
    FB_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    if (count == 0) {
      refusals += std::string(refusals.empty() ? "" : "; ") + heur_name + ": no engine configuration";
      continue;
    }
    std::vector<BackendDesc> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < count; ++i) raw.push_back(configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).get());
    std::int64_t got = 0;
    FB_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()));
    for (std::int64_t i = 0; i < got; ++i) {
      BackendDesc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      FB_CUDNN_SET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
      FB_CUDNN_SET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw[i]);
      if (const cudnnStatus_t st = cudnnBackendFinalize(plan.get()); st != CUDNN_STATUS_SUCCESS) {
        note("engine configuration", st);
        continue;
      }
      if (to_skip > 0) {
        --to_skip;
        refusals += std::string(refusals.empty() ? "" : "; ") + "a configuration skipped (FB_CUDNN_ENGINE_SKIP)";
        continue;
      }
      std::int64_t workspace = 0, returned = 0;
      FB_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                              CUDNN_TYPE_INT64, 1, &returned, &workspace));
      out.plan_workspace = std::size_t(workspace);
      if (describe)
        out.engine = describe_config(raw[std::size_t(i)]) + " (" + heur_name + " #" + std::to_string(i) + " of " +
                     std::to_string(got) + ", workspace " + std::to_string(workspace) + " bytes)";
      out.graph.descs.push_back(std::move(configs[std::size_t(i)]));  // the plan refers to its configuration
      out.plan.emplace(std::move(plan));
      return;
    }
  }
  out.why_not = "cuDNN " + version_string(cudnnGetVersion()) + " has no engine for this attention graph: " + refusals;
}

// Checks of ours before cuDNN is asked (what its fused engines are documented to refuse, and what the
// graph cannot express).
const char* refused_shape(Which which, const AttentionParams& p) {
  if (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16 && p.dtype != Dtype::fp8) return "cudnn runs fp16, bf16 and fp8";
  if (p.dtype == Dtype::fp8) {
    if (which == Which::bwd) return "cudnn's fp8 runs the forward only (flashbench's fp8 has no backward)";
    const std::size_t v = cudnnGetVersion();
    if (v < kFp8FromVersion) return "cuDNN's FP8 attention needs cuDNN >= 9.1";
    if (v == kFp8BrokenVersion)
      return "cuDNN 9.10.0's FP8 attention forward is known broken (cudnn-frontend refuses it)";
    if (p.head_dim % kFp8HeadDimMultiple != 0 || p.head_dim > kMaxHeadDim)
      return "cuDNN's FP8 attention needs head_dim a multiple of 16, at most 256";
    if (p.causal && p.seq_q != p.seq_k && p.seq_q > 1)
      return "cuDNN's FP8 attention on Hopper has only the top-left causal mask; flashbench's causal is "
             "bottom-right, the same only for seq_q == seq_k or one query row (bottom-right FP8 is "
             "Blackwell-only in cuDNN)";
  }
  if (p.head_dim % kHeadDimMultiple != 0 || p.head_dim > kMaxHeadDim)
    return "cuDNN's fused attention needs head_dim a multiple of 8, at most 256";
  if (p.causal && p.seq_q > p.seq_k)
    return "cuDNN's bottom-right causal mask needs seq_q <= seq_k (query rows that see no key are not "
           "expressible in its graph)";
  if (which == Which::bwd && p.seq_q == 1 && p.seq_k == 1)
    return "cuDNN's attention backward refuses seq_q = seq_k = 1";
  return nullptr;
}

// The graph's shape for `which`: shape_of(p), and for the backward on cuDNN < 9.16 with seq_k not a
// multiple of 128 the padding-mask workaround.
Shape shape_for(Which which, const AttentionParams& p) {
  Shape s = shape_of(p);
  s.padding_mask = which == Which::bwd && cudnnGetVersion() < kBwdAnyKeysFromVersion && p.seq_k % kBwdKeyMultiple != 0;
  s.o_bshd = which == Which::fwd && p.dtype == Dtype::fp8 && probe().o_bshd;
  s.qkv_bshd = which == Which::fwd && p.dtype == Dtype::fp8 && probe().qkv_bshd;
  s.no_stats = which == Which::fwd && p.dtype != Dtype::fp8 && fwd_probe().no_stats;
  return s;
}

// The plan for (current device, which, shape), planned on first use. Never null; see why_not.
Plan& plan_for(Which which, const AttentionParams& p) {
  State& st = state();
  const Key key{current_device(), which, shape_for(which, p)};
  auto it = st.plans.find(key);
  if (it != st.plans.end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  cudnnHandle_t h = nullptr;
  try {
    h = handle_for(st, key.device);
  } catch (const std::exception& e) {
    // Not cached: a handle may be had later (memory freed).
    static thread_local Plan failed;
    failed.why_not = "cuDNN could not start on device " + std::to_string(key.device) + ": " + e.what();
    return failed;
  }
  const auto attempt = [&](Plan& out, auto build) {
    try {
      build(out.graph);
      plan_graph(out, h, which == Which::fwd && fwd_probe().engine_notes);
    } catch (const std::exception& e) {
      // A refusal while building the graph (a node cuDNN does not take) is cuDNN's answer too.
      out.plan.reset();
      out.why_not = std::string("cuDNN refused the attention graph: ") + e.what();
    }
  };
  if (which == Which::bwd) {
    attempt(*plan, [&](Graph& g) { build_backward(g, key.shape); });
    if (!plan->plan && key.shape.padding_mask)
      plan->why_not = "cuDNN < 9.16's attention backward needs a padding mask for seq_k not a multiple of 128 "
                      "(cudnn-frontend's workaround, built here), and refused it: " + plan->why_not;
  } else if (key.shape.dtype != Dtype::fp8) {
    attempt(*plan, [&](Graph& g) { build_forward(g, key.shape); });
    if (fwd_probe().engine_notes) {
      const Shape& s = key.shape;
      const std::string note = "flashbench: cudnn forward plan (FB_CUDNN_FWD_PROBE=" +
                               std::string(s.no_stats ? "nostats" : "default") + ") b" + std::to_string(s.batch) +
                               " h" + std::to_string(s.heads) + " kv" + std::to_string(s.kv_heads) + " q" +
                               std::to_string(s.seq_q) + " k" + std::to_string(s.seq_k) + " d" +
                               std::to_string(s.head_dim) + (s.dtype == Dtype::fp16 ? " fp16" : " bf16") +
                               (s.causal ? " causal" : " full") + ": " +
                               (plan->plan ? plan->engine : "no plan: " + plan->why_not);
      std::fprintf(stderr, "%s\n", note.c_str());
    }
  } else {
    // O in bf16 if cuDNN's FP8 engine stores it so here, else in e4m3 and widened (fp8_out.h).
    attempt(*plan, [&](Graph& g) { build_forward_fp8(g, key.shape, Fp8Out::bf16); });
    if (!plan->plan) {
      const std::string bf16_why = plan->why_not;
      plan = std::make_unique<Plan>();
      plan->o_e4m3 = true;
      attempt(*plan, [&](Graph& g) { build_forward_fp8(g, key.shape, Fp8Out::e4m3); });
      if (!plan->plan) plan->why_not += " (and with O in bf16: " + bf16_why + ")";
    }
  }
  return *st.plans.emplace(key, std::move(plan)).first->second;
}

// The e4m3 O of an fp8 forward, one byte an element.
std::size_t fp8_o_bytes(const Shape& s) { return std::size_t(s.batch * s.heads * s.seq_q * s.head_dim); }

// Where the e4m3 O starts in the workspace: after the plan's part.
std::size_t fp8_o_offset(const Plan& fwd) { return align_up(fwd.plan_workspace); }

std::size_t forward_workspace(const Plan& fwd, const Shape& s) {
  return fwd.o_e4m3 ? fp8_o_offset(fwd) + fp8_o_bytes(s) : fwd.plan_workspace;
}

std::size_t backward_workspace(const Plan& bwd, const Shape& s) {
  return align_up(bwd.plan_workspace) + align_up(row_dot_bytes(s)) + dq_accum_bytes(s);
}

// cuDNN's Hopper FP8 forward (the e4m3-O engine; cuDNN 9.14 on the H200) races inside its kernel:
// with the same inputs, O differs from call to call and in many calls whole rows come out far off
// (errors up to ~10 against |O| < 0.4, while its own amax of O is right: the O it computed was right,
// the rows it stored were not). Every variant of ours changed nothing: any layout (Q/K/V/O in BSHD, as
// cuDNN's own tests), scale_o, scratch and O placement, a device sync before the widening; nor did
// launching fewer tiles (whole batches of <= 1024 query tiles: still wrong at seq_k <= 4096)
// (tests/test_gpu_cudnn_fp8.cpp [cudnnfp8diag], session 7 calls A and B). Far-off rows seen from 1024
// query tiles of 128 rows per launch with seq_k 1024-4096; none at b1/b2/b4 N 2048 full (<= 1024 tiles,
// and bit-identical), none at 2048 tiles with seq_k 8192 (causal still differing call to call there).
constexpr std::int64_t kFp8TileRows = 128;
constexpr std::int64_t kFp8RaceTiles = 1024;  // query tiles per launch from which rows were seen wrong
constexpr int kFp8RaceFreeKeys = 8192;        // seq_k from which none were
std::int64_t fp8_tiles(const AttentionParams& p) {
  return std::int64_t(p.batch) * p.heads * ((p.seq_q + kFp8TileRows - 1) / kFp8TileRows);
}
// (Fp8Probe::run_racy, diagnostics: no shape is, so that the launch runs anyway.)
bool fp8_race_shape(const AttentionParams& p) {
  return p.dtype == Dtype::fp8 && fp8_tiles(p) >= kFp8RaceTiles && p.seq_k < kFp8RaceFreeKeys && !probe().run_racy;
}
std::string fp8_race_reason(const AttentionParams& p) {
  return "cuDNN " + version_string(cudnnGetVersion()) +
         "'s Hopper FP8 forward (O in e4m3) is wrong at this shape: with " + std::to_string(kFp8RaceTiles) +
         " or more query tiles of 128 rows in one launch (here " + std::to_string(fp8_tiles(p)) + ") and seq_k < " +
         std::to_string(kFp8RaceFreeKeys) +
         ", O rows differ from call to call on the same inputs and some come out far off (a race inside "
         "cuDNN's kernel, measured on the H200; smaller launches did not avoid it)";
}

void execute_one(Which which, const AttentionParams& p, const Context& ctx);

void execute(Which which, const AttentionParams& p, const Context& ctx) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (which == Which::fwd && p.dtype == Dtype::fp8) {
    const Plan& fwd = plan_for(which, p);
    if (fwd.plan && fwd.o_e4m3 && fp8_race_shape(p)) throw CudaError(fp8_race_reason(p));
  }
  execute_one(which, p, ctx);
}

// One launch of cuDNN's plan for p (and the widening of an e4m3 O); State::mutex held.
void execute_one(Which which, const AttentionParams& p, const Context& ctx) {
  State& st = state();
  Plan& plan = plan_for(which, p);
  if (!plan.plan) throw CudaError(plan.why_not);
  const Shape s = shape_for(which, p);
  const Fp8Probe& pr = probe();
  char* ws = static_cast<char*>(p.workspace);
  void* row_dot = nullptr;
  void* dq_accum = nullptr;
  void* o = p.o;
  if (which == Which::bwd) {
    row_dot = ws + align_up(plan.plan_workspace);
    dq_accum = ws + align_up(plan.plan_workspace) + align_up(row_dot_bytes(s));
  }
  if (plan.o_e4m3) o = pr.o_e4m3 ? pr.o_e4m3 : ws + fp8_o_offset(plan);
  const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  if (which == Which::bwd && shape_for(which, p).padding_mask && !plan.device_seq_lens) {
    std::vector<std::int32_t> lengths(std::size_t(2 * p.batch), p.seq_k);
    std::fill_n(lengths.begin(), p.batch, p.seq_q);
    void* d = nullptr;
    FB_CUDA_CHECK(cudaMalloc(&d, lengths.size() * sizeof(std::int32_t)));
    FB_CUDA_CHECK(cudaMemcpyAsync(d, lengths.data(), lengths.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                  stream));
    FB_CUDA_CHECK(cudaStreamSynchronize(stream));  // `lengths` is about to go
    plan.device_seq_lens = static_cast<std::int32_t*>(d);
  }
  if (p.dtype == Dtype::fp8) {
    if (!plan.device_scalars) {
      void* d = nullptr;
      // Room for Fp8Probe::scalars_apart.
      FB_CUDA_CHECK(cudaMalloc(&d, kFp8ScalarBytes));
      plan.device_scalars = static_cast<float*>(d);
    }
    // Uploaded when they change (a new case), not on every call: the timed calls repeat the same.
    const Fp8Factors factors(p, plan.o_e4m3);
    if (!plan.uploaded || !(factors == *plan.uploaded)) {
      plan.uploaded = factors;
      std::vector<float> laid_out(std::size_t(kFp8DeviceScalars * factors.stride), 0.0f);
      for (int i = 0; i < kFp8Factors; ++i) laid_out[std::size_t(i * factors.stride)] = factors.values[std::size_t(i)];
      FB_CUDA_CHECK(cudaMemcpyAsync(plan.device_scalars, laid_out.data(), laid_out.size() * sizeof(float),
                                    cudaMemcpyHostToDevice, stream));
      // Pageable source: make sure the copy is done before `laid_out` goes.
      FB_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }
  const auto device_buffer = [&](std::int64_t uid) -> void* {
    switch (uid) {
      case kQ: return const_cast<void*>(p.q);
      case kK: return const_cast<void*>(p.k);
      case kV: return const_cast<void*>(p.v);
      case kO: return o;
      case kStats: return p.lse;
      case kDout: return const_cast<void*>(p.dout);
      case kDq: return p.dq;
      case kDk: return p.dk;
      case kDv: return p.dv;
      case kRowDot: return row_dot;
      case kDqAccum: return dq_accum;
      case kDescaleQ:
      case kDescaleK:
      case kDescaleV:
      case kDescaleS:
      case kScaleS:
      case kScaleO:
      case kAmaxS:
      case kAmaxO: return plan.device_scalars + (uid - kDescaleQ) * scalar_stride();
      case kSeqLenQ: return plan.device_seq_lens;
      case kSeqLenKv: return plan.device_seq_lens + p.batch;
      default: return nullptr;  // a by-value scalar
    }
  };
  std::vector<void*> buffers;
  for (const std::int64_t uid : plan.graph.uids) buffers.push_back(device_buffer(uid));
  buffers.push_back(ws);
  const Scalars scalars(p);
  auto found = plan.packs.find(buffers);
  if (found == plan.packs.end() || !(found->second->scalars == scalars)) {
    // Packs of earlier cases are never used again: a few are kept, not all.
    if (plan.packs.size() >= kMaxPacks) plan.packs.clear();
    auto pack = std::make_unique<Plan::Pack>(scalars);
    const Scalars& v = pack->scalars;
    std::vector<void*> ptrs;
    for (const std::int64_t uid : plan.graph.uids) {
      switch (uid) {
        case kScale: ptrs.push_back(const_cast<float*>(&v.scale)); break;
        case kNegInf: ptrs.push_back(const_cast<float*>(&v.neg_inf)); break;
        case kOne: ptrs.push_back(const_cast<float*>(&v.one)); break;
        case kSeqQ: ptrs.push_back(const_cast<std::int32_t*>(&v.seq_q)); break;
        case kSeqK: ptrs.push_back(const_cast<std::int32_t*>(&v.seq_k)); break;
        default:
          if (!device_buffer(uid)) throw CudaError("cudnn: graph tensor uid " + std::to_string(uid) + " has no buffer");
          ptrs.push_back(device_buffer(uid));
      }
    }
    void* plan_ws = ws;
    const cudnnBackendDescriptor_t d = pack->desc.get();
    FB_CUDNN_SET(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, std::int64_t(plan.graph.uids.size()),
                 plan.graph.uids.data());
    FB_CUDNN_SET(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, std::int64_t(ptrs.size()), ptrs.data());
    FB_CUDNN_SET(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &plan_ws);
    FB_CUDNN_CHECK(cudnnBackendFinalize(d));
    found = plan.packs.insert_or_assign(std::move(buffers), std::move(pack)).first;
  }
  const cudnnHandle_t h = handle_for(st, current_device());
  FB_CUDNN_CHECK(cudnnSetStream(h, stream));
  if (plan.o_e4m3 && pr.sentinel >= 0) FB_CUDA_CHECK(cudaMemsetAsync(o, pr.sentinel & 0xff, fp8_o_bytes(s), stream));
  float* const amax = plan.device_scalars ? plan.device_scalars + (kAmaxS - kDescaleQ) * scalar_stride() : nullptr;
  if (plan.o_e4m3 && pr.zero_scratch) {
    if (plan.plan_workspace) FB_CUDA_CHECK(cudaMemsetAsync(ws, 0, plan.plan_workspace, stream));
    FB_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof(float), stream));
    FB_CUDA_CHECK(cudaMemsetAsync(amax + scalar_stride(), 0, sizeof(float), stream));
  }
  FB_CUDNN_CHECK(cudnnBackendExecute(h, plan.plan->get(), found->second->desc.get()));
  if (!plan.o_e4m3) return;
  if (pr.sync_before_widen) FB_CUDA_CHECK(cudaDeviceSynchronize());
  // Part of the kernel's time: flashbench's fp8 O is bf16.
  const float factor = p.descale_v / kFp8OHeadroom / pr.o_scale_factor;
  if (s.o_bshd)
    e4m3_bshd_to_bf16_bhsd(o, p.o, p.q_elems(), p.heads, p.seq_q, p.head_dim, factor, ctx.stream);
  else
    e4m3_to_bf16(o, p.o, p.q_elems(), factor, ctx.stream);
  last_fp8() = Fp8Last{o, amax, amax + scalar_stride(), factor, s.o_bshd};
}

}  // namespace

const char* unsupported(Pass pass, const AttentionParams& p) {
  const bool bwd = pass != Pass::fwd;
  // Read here, outside the try below, so that a refused word fails the case with its message.
  if (fwd_probe().no_stats && bwd && p.dtype != Dtype::fp8)
    return "FB_CUDNN_FWD_PROBE=nostats: the forward graph has no Stats (LSE) output, which the backward needs "
           "(a measurement of the forward only)";
  if (const char* why = refused_shape(Which::fwd, p)) return why;
  if (bwd)
    if (const char* why = refused_shape(Which::bwd, p)) return why;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  try {
    const Plan& fwd = plan_for(Which::fwd, p);
    if (!fwd.plan) return fwd.why_not.c_str();
    if (fwd.o_e4m3 && fp8_race_shape(p)) {
      static thread_local std::string race;
      return (race = fp8_race_reason(p)).c_str();
    }
    if (bwd) {
      const Plan& b = plan_for(Which::bwd, p);
      if (!b.plan) return b.why_not.c_str();
    }
  } catch (const std::exception& e) {
    // No device to plan on (cudaGetDevice failed): say so rather than throw from a support query.
    static thread_local std::string why;
    why = std::string("cuDNN cannot plan here: ") + e.what();
    return why.c_str();
  }
  return nullptr;
}

std::size_t workspace_bytes(Pass pass, const AttentionParams& p) {
  if (unsupported(pass, p)) return 0;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  const std::size_t fwd = forward_workspace(plan_for(Which::fwd, p), shape_of(p));
  if (pass == Pass::fwd) return fwd;
  // One workspace serves the forward (run first, for O and LSE) and the backward.
  return std::max(fwd, backward_workspace(plan_for(Which::bwd, p), shape_of(p)));
}

void forward(const AttentionParams& p, const Context& ctx) { execute(Which::fwd, p, ctx); }
void backward(const AttentionParams& p, const Context& ctx) { execute(Which::bwd, p, ctx); }

int fp8_o_bits(const AttentionParams& p) {
  if (p.dtype != Dtype::fp8 || unsupported(Pass::fwd, p)) return 0;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return plan_for(Which::fwd, p).o_e4m3 ? 8 : 16;
}

void set_fp8_probe(const Fp8Probe& p) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  probe() = p;
}

Fp8Last fp8_last() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return last_fp8();
}

std::size_t library_version() { return cudnnGetVersion(); }

}  // namespace fb::cuda::cudnn_sdpa

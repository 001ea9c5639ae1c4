#include "registry.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "backend/cpu/cpu_attention.h"
#include "common/settings.h"

namespace fb {

std::string_view to_string(Role r) {
  switch (r) {
    case Role::baseline: return "baseline";
    case Role::tiled: return "tiled";
    case Role::reference: return "reference";
    case Role::peer: return "peer";
  }
  return "?";
}

std::string_view to_string(BackendId b) { return b == BackendId::cpu ? "cpu" : "cuda"; }

std::vector<BackendId> Descriptor::backends() const {
  std::vector<BackendId> out;
  for (BackendId b : {BackendId::cpu, BackendId::cuda})
    if (runs_on(b)) out.push_back(b);
  return out;
}

namespace {

constexpr Pass kAllPasses[] = {Pass::fwd, Pass::bwd, Pass::fwd_bwd};

std::vector<Dtype> all_dtypes() { return {std::begin(kDtypes), std::end(kDtypes)}; }
std::vector<Pass> all_passes() { return {std::begin(kAllPasses), std::end(kAllPasses)}; }

// ---- CPU entries: the algorithms of src/backend/cpu/cpu_attention.h ----

// fp8 is a forward format here (attention.h): its backward is not built on any backend.
std::optional<std::string> cpu_any_shape(Pass pass, const AttentionParams& p) {
  if (p.dtype == Dtype::fp8 && pass != Pass::fwd) return std::string("fp8 runs the forward only (no fp8 backward is built)");
  return std::nullopt;
}

CpuEntry cpu_naive() {
  CpuEntry e;
  e.unsupported = cpu_any_shape;
  e.workspace_bytes = [](Pass, const AttentionParams&) { return std::size_t(0); };
  e.forward = [](const AttentionParams& p, const cpu::Context& ctx, cpu::Saved& saved) {
    cpu::naive_forward(p, ctx, &saved);
  };
  e.backward = [](const AttentionParams& p, const cpu::Context& ctx, cpu::Saved& saved) {
    cpu::naive_backward(p, ctx, saved);
  };
  return e;
}

CpuEntry cpu_flash() {
  CpuEntry e;
  e.unsupported = cpu_any_shape;
  e.workspace_bytes = [](Pass, const AttentionParams&) { return std::size_t(0); };
  e.forward = [](const AttentionParams& p, const cpu::Context& ctx, cpu::Saved&) {
    cpu::flash_forward(p, ctx);
  };
  e.backward = [](const AttentionParams& p, const cpu::Context& ctx, cpu::Saved&) {
    cpu::flash_backward(p, ctx);
  };
  // The CPU tiles are the backend's: query rows forward, key rows backward.
  e.tile = [](Pass pass, const AttentionParams&, const cpu::Context& ctx) {
    return pass == Pass::fwd ? ctx.tiles.br : ctx.tiles.bc;
  };
  return e;
}

CpuEntry cpu_flash_decode() {
  CpuEntry e;
  e.unsupported = [](Pass pass, const AttentionParams& p) -> std::optional<std::string> {
    if (pass != Pass::fwd)
      return std::string("flash-decode is forward-only (a decode step has no backward); the backward "
                         "runs on flash");
    if (p.seq_q > cpu::kDecodeMaxSeqQ)
      return fmt::format("flash-decode is for decoding, seq_q <= {} query rows against the KV cache, got "
                         "seq_q {}; longer query blocks run on flash",
                         cpu::kDecodeMaxSeqQ, p.seq_q);
    return std::nullopt;
  };
  e.workspace_bytes = [](Pass, const AttentionParams& p) { return cpu::decode_workspace_bytes(p); };
  e.forward = [](const AttentionParams& p, const cpu::Context& ctx, cpu::Saved&) { cpu::decode_forward(p, ctx); };
  e.tile = [](Pass, const AttentionParams& p, const cpu::Context&) { return cpu::decode_plan(p).keys_per_split; };
  return e;
}

// ---- CUDA entries: a family's Ops (kernels/attention.h) ----

#if FLASHBENCH_HAVE_CUDA
CudaEntry cuda_entry(const cuda::Ops& ops) {
  CudaEntry e;
  e.unsupported = [&ops](Pass pass, const AttentionParams& p) -> std::optional<std::string> {
    if (const char* why = ops.unsupported(pass, p)) return std::string(why);
    return std::nullopt;
  };
  e.workspace_bytes = [&ops](Pass pass, const AttentionParams& p) { return ops.workspace_bytes(pass, p); };
  e.forward = [&ops](const AttentionParams& p, const cuda::Context& ctx, NoState&) { ops.forward(p, ctx); };
  if (ops.backward)
    e.backward = [&ops](const AttentionParams& p, const cuda::Context& ctx, NoState&) {
      ops.backward(p, ctx);
    };
  if (ops.tile)
    e.tile = [&ops](Pass pass, const AttentionParams& p, const cuda::Context&) { return ops.tile(pass, p); };
  e.lse_optional = ops.lse_optional;
  return e;
}
#define FB_CUDA_ENTRY(ops) cuda_entry(ops)
#else
#define FB_CUDA_ENTRY(ops) CudaEntry{}
#endif

// cuDNN's fused attention when configure found cuDNN; else an entry that says why it is not here, so
// that `info` and a spec naming it give the reason and the run records it as skipped.
CudaEntry cudnn_entry() {
#if FLASHBENCH_HAVE_CUDA && FLASHBENCH_HAVE_CUDNN
  return cuda_entry(cuda::cudnn_ops());
#elif FLASHBENCH_HAVE_CUDA
  CudaEntry e;
  const std::string why = "built without cuDNN (configure found no cuDNN 9, or FLASHBENCH_CUDNN=OFF)";
  e.unsupported = [why](Pass, const AttentionParams&) -> std::optional<std::string> { return why; };
  e.workspace_bytes = [](Pass, const AttentionParams&) { return std::size_t(0); };
  e.forward = [why](const AttentionParams&, const cuda::Context&, NoState&) { throw std::runtime_error(why); };
  return e;
#else
  return CudaEntry{};
#endif
}

// cuDNN does not say its tiles: its bytes are the compulsory traffic, every tensor moved once (the
// tiled model with one tile spanning all query rows forward and all keys backward).
double cudnn_bytes(const Case& c, int) { return tiled_bytes(c, std::max(c.seq_q, c.seq_k)); }

// One descriptor, every field named at its place in the list below.
struct Spec {
  const char* name;
  Role role;
  std::vector<Dtype> dtypes;
  std::vector<int> head_dims;  // empty: any
  ByteModel bytes;
  CpuEntry cpu;
  CudaEntry cuda;
  const char* description;
  std::vector<Pass> passes = {};  // empty: every pass
  bool kv_splits = false;         // Descriptor::kv_splits
};

Descriptor describe(Spec s) {
  Descriptor d;
  d.name = s.name;
  d.role = s.role;
  d.dtypes = std::move(s.dtypes);
  d.head_dims = std::move(s.head_dims);
  d.passes = s.passes.empty() ? all_passes() : std::move(s.passes);
  d.kv_splits = s.kv_splits;
  d.bytes = std::move(s.bytes);
  d.cpu = std::move(s.cpu);
  d.cuda = std::move(s.cuda);
  d.description = s.description;
  return d;
}

std::vector<Descriptor> make_builtins() {
  std::vector<Descriptor> list;
  list.push_back(describe({"naive", Role::baseline, all_dtypes(), {}, naive_bytes, cpu_naive(),
                           FB_CUDA_ENTRY(cuda::naive_ops()),
                           "standard attention: S = scale*QK^T and P = softmax(S) materialised as N x N "
                           "arrays (cuBLAS on GPU)"}));
  list.push_back(describe({"flash", Role::tiled, all_dtypes(), {32, 64, 96, 128, 256}, tiled_bytes, cpu_flash(),
                           FB_CUDA_ENTRY(cuda::flash_ops()),
                           "FlashAttention: Q/K/V tiles on chip, online softmax, nothing N x N (tensor "
                           "cores: fp16/bf16, and fp32 as 3xTF32; sm_80+)"}));
  // The CPU's `flash` is already exact: no second CPU entry.
  list.push_back(describe({"flash-exact", Role::tiled, {Dtype::fp64, Dtype::fp32}, {32, 64, 128}, tiled_bytes,
                           {}, FB_CUDA_ENTRY(cuda::flash_exact_ops()),
                           "flash with fp32/fp64 on CUDA cores in exact arithmetic (no TF32): the "
                           "reference-grade fp32 path"}));
  list.push_back(describe({"flash-tf32x1", Role::peer, {Dtype::fp32}, {32, 64, 128}, tiled_bytes, {},
                           FB_CUDA_ENTRY(cuda::flash_tf32x1_ops()),
                           "diagnostic: flash fp32 with operands rounded to TF32 once (no split); fails "
                           "the FP32 rule by design"}));
  list.push_back(describe({"naive-tf32", Role::peer, {Dtype::fp32}, {}, naive_bytes, {},
                           FB_CUDA_ENTRY(cuda::naive_tf32_ops()),
                           "naive with cuBLAS TF32 GEMMs for fp32 (CUBLAS_COMPUTE_32F_FAST_TF32): what "
                           "PyTorch gives with allow_tf32"}));
  list.push_back(describe({"flash-sm90", Role::tiled, {Dtype::fp16, Dtype::bf16, Dtype::fp32, Dtype::fp8}, {64, 128, 256},
                           tiled_bytes, {}, FB_CUDA_ENTRY(cuda::flash_sm90_ops()),
                           "FlashAttention for Hopper (sm_90a): TMA loads, wgmma, producer/consumer "
                           "warpgroups; fp32 forward and backward as 3xTF32 on wgmma"}));
  list.push_back(describe({"flash-sm90-tf32x1", Role::peer, {Dtype::fp32}, {64, 128}, tiled_bytes, {},
                           FB_CUDA_ENTRY(cuda::flash_sm90_tf32x1_ops()),
                           "diagnostic: flash-sm90's fp32 forward and backward with operands rounded to "
                           "TF32 once (no split); fails the FP32 rule by design"}));
  list.push_back(describe({"flash-decode", Role::tiled, {Dtype::fp16, Dtype::bf16}, {64, 128}, splitkv_bytes, cpu_flash_decode(),
                           FB_CUDA_ENTRY(cuda::flash_decode_ops()),
                           "split-KV decode (flash-decoding): a few query rows against a long KV cache, "
                           "keys split across CTAs, each K/V tile read once for every query row of the "
                           "GQA group, splits merged exactly; forward only, seq_q <= 64; sm_80+",
                           {Pass::fwd}, true}));
  list.push_back(describe({"cudnn", Role::peer, {Dtype::fp16, Dtype::bf16, Dtype::fp8}, {}, cudnn_bytes, {},
                           cudnn_entry(),
                           "cuDNN's fused flash attention (backend graph API: matmul, mask, softmax, "
                           "matmul as one engine), forward and backward, GQA, bottom-right causal; fp8 "
                           "forward (per-tensor scales; on Hopper cuDNN stores O in e4m3, widened to bf16); "
                           "the vendor peer in the same binary, timed and verified like the others"}));
  list.push_back(describe({"reference", Role::reference, {Dtype::fp64}, {}, {}, {},
                           FB_CUDA_ENTRY(cuda::reference_ops()),
                           "exact fp64 attention, the yardstick every kernel's error is measured against"}));
  return list;
}

std::mutex& active_mutex() {
  static std::mutex m;
  return m;
}
std::shared_ptr<const KernelSet>& active_slot() {
  static std::shared_ptr<const KernelSet> set;
  return set;
}

template <class T> std::string join(const std::vector<T>& v) {
  std::vector<std::string> parts;
  for (const T& x : v) parts.emplace_back(fmt::format("{}", x));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

KernelSet::KernelSet(std::vector<Descriptor> kernels) {
  for (auto& d : kernels) add(std::move(d));
}

void KernelSet::add(Descriptor d) {
  if (d.name.empty()) throw std::invalid_argument("a kernel descriptor needs a name");
  if (find(d.name))
    throw std::invalid_argument(fmt::format("kernel '{}' is already registered", d.name));
  if (d.dtypes.empty() || d.passes.empty())
    throw std::invalid_argument(fmt::format("kernel '{}' lists no dtypes or no passes", d.name));
  if (d.role != Role::reference && !d.bytes)
    throw std::invalid_argument(fmt::format("kernel '{}' has no byte model", d.name));
  kernels_.push_back(std::move(d));
}

const Descriptor* KernelSet::find(std::string_view name) const {
  for (const auto& k : kernels_)
    if (k.name == name) return &k;
  return nullptr;
}

const Descriptor* KernelSet::baseline() const {
  for (const auto& k : kernels_)
    if (k.role == Role::baseline) return &k;
  return nullptr;
}

const Descriptor* KernelSet::reference() const {
  for (const auto& k : kernels_)
    if (k.role == Role::reference) return &k;
  return nullptr;
}

std::vector<const Descriptor*> KernelSet::user_kernels() const {
  std::vector<const Descriptor*> out;
  for (const auto& k : kernels_)
    if (k.role != Role::reference) out.push_back(&k);
  return out;
}

std::vector<const Descriptor*> KernelSet::default_kernels() const {
  std::vector<const Descriptor*> out;
  for (const auto& k : kernels_)
    if (k.role != Role::reference && k.role != Role::peer && k.variant_of.empty()) out.push_back(&k);
  return out;
}

std::string KernelSet::names() const {
  std::string out;
  for (const Descriptor* k : user_kernels()) out += (out.empty() ? "" : ", ") + k->name;
  return out;
}

namespace {

// f with the overlay in force for each call (empty stays empty).
template <class R, class... A>
std::function<R(A...)> scoped(const std::function<R(A...)>& f, const settings::Overlay* o) {
  if (!f) return {};
  return [f, o](A... a) -> R {
    settings::Scope scope(o);
    return f(std::forward<A>(a)...);
  };
}
template <class Ctx, class State>
Entry<Ctx, State> scoped(const Entry<Ctx, State>& e, const settings::Overlay* o) {
  Entry<Ctx, State> w;
  w.unsupported = scoped(e.unsupported, o);
  w.workspace_bytes = scoped(e.workspace_bytes, o);
  w.forward = scoped(e.forward, o);
  w.backward = scoped(e.backward, o);
  w.tile = scoped(e.tile, o);
  w.lse_optional = e.lse_optional;
  return w;
}

}  // namespace

Descriptor make_variant(const Descriptor& base, const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& env) {
  if (name.empty()) throw std::invalid_argument("a variant needs a name");
  for (const char ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.' && ch != '+')
      throw std::invalid_argument(fmt::format("variant name '{}': use letters, digits and - _ . + only", name));
  if (base.role == Role::reference)
    throw std::invalid_argument(fmt::format("'{}' is the fp64 reference: it has no variants", base.name));
  if (!base.variant_of.empty())
    throw std::invalid_argument(fmt::format("'{}' is a variant itself (of '{}'): make the variant of '{}'",
                                            base.name, base.variant_of, base.variant_of));
  if (base.origin != "built-in")
    throw std::invalid_argument(fmt::format("'{}' is a plug-in's kernel ({}): its settings are its own, not "
                                            "flashbench's",
                                            base.name, base.origin));
  if (env.empty()) throw std::invalid_argument(fmt::format("variant '{}' assigns no kernel setting", name));
  const settings::Overlay* o = settings::overlay(env);  // throws for a variable it cannot set
  Descriptor d = base;
  d.name = name;
  std::string assigned;
  for (const auto& [var, value] : o->vars) assigned += fmt::format("{}{}={}", assigned.empty() ? "" : " ", var, value);
  d.description = fmt::format("{} under {} (a variant)", base.name, assigned);
  d.cpu = scoped(base.cpu, o);
  d.cuda = scoped(base.cuda, o);
  d.variant_of = base.name;
  d.variant_env = o->vars;
  return d;
}

const KernelSet& builtin_kernels() {
  static const KernelSet set(make_builtins());
  return set;
}

const KernelSet& active_kernels() {
  std::lock_guard<std::mutex> lock(active_mutex());
  const auto& slot = active_slot();
  return slot ? *slot : builtin_kernels();
}

std::shared_ptr<const KernelSet> active_kernel_set() {
  std::lock_guard<std::mutex> lock(active_mutex());
  return active_slot();
}

void set_active_kernels(std::shared_ptr<const KernelSet> set) {
  std::lock_guard<std::mutex> lock(active_mutex());
  active_slot() = std::move(set);
}

const Descriptor* find_kernel(std::string_view name) { return active_kernels().find(name); }
bool is_peer(std::string_view name) {
  const Descriptor* d = find_kernel(name);
  return d && d->role == Role::peer;
}
std::string kernel_names() { return active_kernels().names(); }

std::optional<std::string> unavailable_on(const Descriptor& k, std::string_view backend) {
  const BackendId b = backend == "cuda" ? BackendId::cuda : BackendId::cpu;
  if (k.runs_on(b)) return std::nullopt;
  return fmt::format("kernel '{}' does not run on the {} backend", k.name,
                     b == BackendId::cuda ? "CUDA" : "CPU");
}

std::optional<std::string> unsupported_head_dim(const Descriptor& k, int head_dim) {
  if (k.head_dims.empty() ||
      std::find(k.head_dims.begin(), k.head_dims.end(), head_dim) != k.head_dims.end())
    return std::nullopt;
  return fmt::format("kernel '{}' supports head_dim {}, not {}", k.name, join(k.head_dims), head_dim);
}

std::optional<std::string> unsupported_reason(const Descriptor& k, const Case& c) {
  if (std::find(k.dtypes.begin(), k.dtypes.end(), c.dtype) == k.dtypes.end()) {
    std::vector<std::string_view> names;
    for (Dtype t : k.dtypes) names.push_back(to_string(t));
    return fmt::format("kernel '{}' supports dtype {}, not {}", k.name, fmt::join(names, ", "),
                       to_string(c.dtype));
  }
  if (auto why = unsupported_head_dim(k, c.head_dim)) return why;
  const auto has = [&](Pass p) { return std::find(k.passes.begin(), k.passes.end(), p) != k.passes.end(); };
  const bool ok = c.pass == Pass::fwd_bwd ? has(Pass::fwd) && has(Pass::bwd) : has(c.pass);
  if (!ok) return fmt::format("kernel '{}' does not run the {} pass", k.name, to_string(c.pass));
  if (c.splits != 0 && !k.kv_splits)
    return fmt::format("kernel '{}' does not split the KV range: splits = {} applies to split-KV kernels "
                       "(it runs at splits = 0)",
                       k.name, c.splits);
  return std::nullopt;
}

}  // namespace fb

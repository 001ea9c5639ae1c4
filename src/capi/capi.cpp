// include/flashbench/capi.h: flashbench's built-in CUDA kernels by name, on a caller's buffers and stream.
// The kernels' entries are the registry's (src/registry.h): what `flashbench run` times is what this runs.
#include "flashbench/capi.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "case.h"
#include "registry.h"

namespace {

using fb::Descriptor;

struct Failure {
  std::string message;
};

int fail(const std::string& message, char* err, std::size_t err_size) {
  if (err && err_size) std::snprintf(err, err_size, "%s", message.c_str());
  return 1;
}

fb::Dtype dtype_of(int32_t t) {
  switch (t) {
    case FB_FP64: return fb::Dtype::fp64;
    case FB_FP32: return fb::Dtype::fp32;
    case FB_FP16: return fb::Dtype::fp16;
    case FB_BF16: return fb::Dtype::bf16;
    default: throw Failure{"dtype " + std::to_string(t) + " is not an fb_dtype (0 fp64, 1 fp32, 2 fp16, 3 bf16)"};
  }
}

// The kernel, and the call's case and params (pointers unset); throws Failure naming what is wrong.
struct Resolved {
  const Descriptor* kernel = nullptr;
  fb::Case c;
  fb::AttentionParams p;
};

// The kernel a name names: a built-in, or "KERNEL:VAR=VALUE[:VAR=VALUE...]", KERNEL under those FB_* settings (its
// probe words) for this call only, as `flashbench run --variant` runs it (fb::make_variant; the settings it can assign
// are kernels/common/settings.h's). One descriptor per distinct name, kept for the process. Throws Failure.
const Descriptor* kernel_named(const std::string& name) {
  const std::size_t colon = name.find(':');
  const std::string base_name = name.substr(0, colon);
  const Descriptor* base = fb::builtin_kernels().find(base_name);
  if (!base || !base->cuda)
    throw Failure{"kernel '" + base_name + "': not one of this library's (" + fb_capi_kernels() + ")"};
  if (colon == std::string::npos) return base;
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Descriptor>> made;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto it = made.find(name); it != made.end()) return it->second.get();
  std::vector<std::pair<std::string, std::string>> env;
  for (std::size_t at = colon + 1;;) {
    const std::size_t end = name.find(':', at);
    const std::string item = name.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const std::size_t eq = item.find('=');
    if (eq == 0 || eq == std::string::npos)
      throw Failure{"kernel '" + name + "': '" + item + "' is not VAR=VALUE (KERNEL:VAR=VALUE[:VAR=VALUE...])"};
    env.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  try {
    const std::string variant = base->name + ".capi" + std::to_string(made.size());
    auto d = std::make_unique<Descriptor>(fb::make_variant(*base, variant, env));
    d->name = name;  // messages name the call's kernel as the caller wrote it
    return made.emplace(name, std::move(d)).first->second.get();
  } catch (const std::invalid_argument& e) {
    throw Failure{"kernel '" + name + "': " + e.what()};
  }
}

Resolved resolve(const char* name, fb::Pass pass, const fb_capi_call* call) {
  if (!name) throw Failure{"kernel: NULL"};
  Resolved r;
  r.kernel = kernel_named(name);
  if (!call) throw Failure{"call: NULL"};
  if (call->struct_size != sizeof(fb_capi_call))
    throw Failure{"call.struct_size " + std::to_string(call->struct_size) + ": this library's fb_capi_call is " +
                  std::to_string(sizeof(fb_capi_call)) + " bytes (rebuild against its capi.h)"};
  const std::pair<const char*, int32_t> dims[] = {{"batch", call->batch},       {"heads", call->heads},
                                                  {"kv_heads", call->kv_heads}, {"seq_q", call->seq_q},
                                                  {"seq_k", call->seq_k},       {"head_dim", call->head_dim}};
  for (const auto& [field, value] : dims)
    if (value < 1) throw Failure{std::string("call.") + field + " " + std::to_string(value) + ": must be >= 1"};
  if (call->heads % call->kv_heads)
    throw Failure{"call.kv_heads " + std::to_string(call->kv_heads) + " does not divide call.heads " +
                  std::to_string(call->heads)};
  if (call->causal != 0 && call->causal != 1)
    throw Failure{"call.causal " + std::to_string(call->causal) + ": must be 0 or 1"};
  if (!(call->scale >= 0) || std::isinf(call->scale))
    throw Failure{"call.scale: must be finite and >= 0 (0: 1/sqrt(head_dim))"};
  fb::Case& c = r.c;
  c.batch = call->batch;
  c.heads = call->heads;
  c.kv_heads = call->kv_heads;
  c.seq_q = call->seq_q;
  c.seq_k = call->seq_k;
  c.head_dim = call->head_dim;
  c.dtype = dtype_of(call->dtype);
  c.causal = call->causal != 0;
  c.pass = pass;
  if (auto why = fb::unsupported_reason(*r.kernel, c)) throw Failure{*why};
  r.p = c.params();
  if (call->scale > 0) r.p.scale = call->scale;
  if (auto why = r.kernel->cuda.unsupported ? r.kernel->cuda.unsupported(pass, r.p) : std::nullopt)
    throw Failure{why->rfind(r.kernel->name, 0) == 0 ? *why : "kernel '" + r.kernel->name + "': " + *why};
  return r;
}

// A forward's call.lse may be NULL (capi.h: the inference forward). A kernel that always writes the log-sum-exp then
// writes it into the workspace, after its own scratch (256-byte aligned): fb_capi_workspace_bytes counts that room
// for FB_PASS_FWD. 0 for a kernel that can skip it (Ops::lse_optional).
std::size_t lse_room_offset(std::size_t own_bytes) { return (own_bytes + 255) / 256 * 256; }
std::size_t lse_room_bytes(const Resolved& r) {
  return r.kernel->cuda.lse_optional ? 0 : std::size_t(r.p.rows()) * fb::accum_bytes(r.c.dtype);
}
// Scratch bytes: the kernel's own, and the room above after them.
std::size_t with_room(std::size_t own_bytes, std::size_t room) {
  return room ? lse_room_offset(own_bytes) + room : own_bytes;
}

void bind(fb::AttentionParams& p, const fb_capi_call* call, bool backward) {
  const std::pair<const char*, const void*> needed[] = {{"q", call->q}, {"k", call->k}, {"v", call->v}, {"o", call->o}};
  for (const auto& [field, ptr] : needed)
    if (!ptr) throw Failure{std::string("call.") + field + ": NULL"};
  if (backward) {
    if (!call->lse) throw Failure{"call.lse: NULL (a backward reads its forward's)"};
    const std::pair<const char*, const void*> grads[] = {
        {"dout", call->dout}, {"dq", call->dq}, {"dk", call->dk}, {"dv", call->dv}};
    for (const auto& [field, ptr] : grads)
      if (!ptr) throw Failure{std::string("call.") + field + ": NULL (a backward writes it)"};
  }
  p.q = call->q;
  p.k = call->k;
  p.v = call->v;
  p.o = call->o;
  p.lse = call->lse;
  p.dout = call->dout;
  p.dq = call->dq;
  p.dk = call->dk;
  p.dv = call->dv;
  p.workspace = call->workspace;
}

// The naive kernel's GEMMs run through cuBLAS: one handle per thread, bound to the call's stream.
cublasHandle_t cublas_for(void* stream) {
  struct Handle {
    cublasHandle_t h = nullptr;
    ~Handle() {
      if (h) cublasDestroy(h);
    }
  };
  thread_local Handle handle;
  if (!handle.h && cublasCreate(&handle.h) != CUBLAS_STATUS_SUCCESS) {
    handle.h = nullptr;
    throw Failure{"cublasCreate failed (is there a CUDA device?)"};
  }
  if (cublasSetStream(handle.h, static_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS)
    throw Failure{"cublasSetStream failed"};
  return handle.h;
}

template <class F>
int guarded(char* err, std::size_t err_size, F&& f) {
  try {
    f();
    return 0;
  } catch (const Failure& e) {
    return fail(e.message, err, err_size);
  } catch (const std::exception& e) {
    return fail(e.what(), err, err_size);
  } catch (...) {
    return fail("unknown error", err, err_size);
  }
}

int run(const char* name, bool backward, const fb_capi_call* call, char* err, std::size_t err_size) {
  return guarded(err, err_size, [&] {
    // The pass the workspace was sized for does not change a forward's work; a backward needs fwd_bwd's.
    const fb::Pass pass = backward ? fb::Pass::fwd_bwd : fb::Pass::fwd;
    Resolved r = resolve(name, pass, call);
    bind(r.p, call, backward);
    const std::size_t own = r.kernel->cuda.workspace_bytes(pass, r.p);
    // A forward without call.lse whose kernel always writes one (bind: a backward has call.lse).
    const std::size_t room = call->lse ? 0 : lse_room_bytes(r);
    const std::size_t need = with_room(own, room);
    if (need && (!call->workspace || call->workspace_size < need))
      throw Failure{"call.workspace: " + std::to_string(call->workspace_size) + " bytes, kernel '" + r.kernel->name +
                    "' needs " + std::to_string(need) +
                    (room ? " (call.lse is NULL: it writes the log-sum-exp there; fb_capi_workspace_bytes with "
                            "FB_PASS_FWD)"
                          : " (fb_capi_workspace_bytes)")};
    if (room) r.p.lse = static_cast<char*>(call->workspace) + lse_room_offset(own);
    const fb::cuda::Context ctx{call->stream, cublas_for(call->stream)};
    fb::NoState state;
    if (backward) {
      if (!r.kernel->cuda.backward) throw Failure{"kernel '" + r.kernel->name + "' has no backward"};
      r.kernel->cuda.backward(r.p, ctx, state);
    } else {
      r.kernel->cuda.forward(r.p, ctx, state);
    }
  });
}

}  // namespace

extern "C" {

int fb_capi_version(void) { return FB_CAPI_VERSION; }

uint32_t fb_capi_call_size(void) { return sizeof(fb_capi_call); }

const char* fb_capi_kernels(void) {
  static const std::string names = [] {
    std::string s;
    for (const Descriptor& d : fb::builtin_kernels().all())
      if (d.cuda) s += (s.empty() ? "" : ",") + d.name;
    return s;
  }();
  return names.c_str();
}

int fb_capi_workspace_bytes(const char* kernel, uint32_t passes, const fb_capi_call* call, uint64_t* bytes,
                            char* err, size_t err_size) {
  return guarded(err, err_size, [&] {
    if (passes != FB_PASS_FWD && passes != (FB_PASS_FWD | FB_PASS_BWD))
      throw Failure{"passes " + std::to_string(passes) + ": FB_PASS_FWD or FB_PASS_FWD | FB_PASS_BWD"};
    if (!bytes) throw Failure{"bytes: NULL"};
    const fb::Pass pass = passes == FB_PASS_FWD ? fb::Pass::fwd : fb::Pass::fwd_bwd;
    const Resolved r = resolve(kernel, pass, call);
    *bytes = with_room(r.kernel->cuda.workspace_bytes(pass, r.p), pass == fb::Pass::fwd ? lse_room_bytes(r) : 0);
  });
}

int fb_capi_forward(const char* kernel, const fb_capi_call* call, char* err, size_t err_size) {
  return run(kernel, false, call, err, err_size);
}

int fb_capi_backward(const char* kernel, const fb_capi_call* call, char* err, size_t err_size) {
  return run(kernel, true, call, err, err_size);
}

}  // extern "C"

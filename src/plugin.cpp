#include "plugin.h"

#include <dlfcn.h>

#include <cctype>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "flashbench/plugin.h"

namespace fb {

namespace {

// The smallest tables version 1 defines: a library may send larger ones (a later minor addition),
// never smaller.
constexpr std::size_t kPluginV1Size = offsetof(fb_plugin, last_error) + sizeof(&fb_plugin::last_error);
constexpr std::size_t kKernelV1Size = offsetof(fb_kernel, backward) + sizeof(&fb_kernel::backward);
// Room for a supports() reason.
constexpr std::size_t kWhySize = 512;
constexpr std::uint32_t kKnownPasses = FB_PASS_FWD | FB_PASS_BWD;

int32_t to_abi(Dtype t) {
  switch (t) {
    case Dtype::fp64: return FB_FP64;
    case Dtype::fp32: return FB_FP32;
    case Dtype::fp16: return FB_FP16;
    case Dtype::bf16: return FB_BF16;
    case Dtype::fp8: break;  // not in plug-in ABI v1: a plug-in cannot declare fp8
  }
  return -1;
}

// A backward case always runs the forward first, with the same workspace: its scratch covers both.
std::uint32_t abi_pass(Pass pass) { return pass == Pass::fwd ? FB_PASS_FWD : FB_PASS_FWD | FB_PASS_BWD; }

// Contiguous BHSD element strides of a [batch, heads, rows, cols] tensor.
void bhsd_strides(std::int64_t (&s)[4], int heads, int rows, int cols) {
  s[3] = 1;
  s[2] = cols;
  s[1] = std::int64_t(rows) * cols;
  s[0] = std::int64_t(heads) * rows * cols;
}

// The ABI's view of params; pointers copied as they are (null before allocation).
fb_params abi_params(std::uint32_t pass, const AttentionParams& p) {
  fb_params a{};
  a.struct_size = sizeof(fb_params);
  a.pass = pass;
  a.dtype = to_abi(p.dtype);
  a.batch = p.batch;
  a.heads = p.heads;
  a.kv_heads = p.kv_heads;
  a.seq_q = p.seq_q;
  a.seq_k = p.seq_k;
  a.head_dim = p.head_dim;
  a.causal = p.causal ? 1 : 0;
  a.scale = p.scale;
  bhsd_strides(a.q_stride, p.heads, p.seq_q, p.head_dim);
  bhsd_strides(a.o_stride, p.heads, p.seq_q, p.head_dim);
  bhsd_strides(a.k_stride, p.kv_heads, p.seq_k, p.head_dim);
  bhsd_strides(a.v_stride, p.kv_heads, p.seq_k, p.head_dim);
  a.lse_stride[2] = 1;
  a.lse_stride[1] = p.seq_q;
  a.lse_stride[0] = std::int64_t(p.heads) * p.seq_q;
  a.q = p.q;
  a.k = p.k;
  a.v = p.v;
  a.o = p.o;
  a.lse = p.lse;
  a.dout = p.dout;
  a.dq = p.dq;
  a.dk = p.dk;
  a.dv = p.dv;
  a.workspace = p.workspace;
  return a;
}

// One plug-in kernel, shared by the entries that call it.
struct Bound {
  const fb_plugin* table = nullptr;
  const fb_kernel* kernel = nullptr;
  std::string name, path;

  std::optional<std::string> unsupported(Pass pass, const AttentionParams& p) const {
    if (!kernel->supports) return std::nullopt;
    const fb_params a = abi_params(abi_pass(pass), p);
    char why[kWhySize] = {0};
    if (kernel->supports(&a, why, sizeof why) != 0) return std::nullopt;
    why[kWhySize - 1] = '\0';  // a plug-in that filled the buffer to the end
    return why[0] ? fmt::format("{}: {}", name, why)
                  : fmt::format("{}: not supported (the plug-in gave no reason)", name);
  }

  std::size_t workspace(Pass pass, const AttentionParams& p) const {
    if (!kernel->workspace_bytes) return 0;
    const fb_params a = abi_params(abi_pass(pass), p);
    return std::size_t(kernel->workspace_bytes(&a));
  }

  // Runs forward or backward; a nonzero status throws with the plug-in's own message.
  void call(bool backward, const AttentionParams& p, void* stream) const {
    // Params carry no pass: a case with dO is a backward case (its forward runs with the same scratch).
    const std::uint32_t pass = p.dout ? FB_PASS_FWD | FB_PASS_BWD : FB_PASS_FWD;
    fb_params a = abi_params(pass, p);
    a.workspace_size = kernel->workspace_bytes ? kernel->workspace_bytes(&a) : 0;
    if (a.workspace_size == 0) a.workspace = nullptr;
    const int status = backward ? kernel->backward(&a, stream) : kernel->forward(&a, stream);
    if (status == FB_OK) return;
    const char* message = table->last_error();
    throw std::runtime_error(fmt::format("{} {} returned {}: {} (plug-in {})", name,
                                         backward ? "backward" : "forward", status,
                                         message && *message ? message : "no message", path));
  }
};

std::string hex(std::uint32_t v) { return fmt::format("{:#x}", v); }

bool valid_name(const char* s) {
  if (!s || !*s) return false;
  for (const char* c = s; *c; ++c)
    if (!(std::isalnum(static_cast<unsigned char>(*c)) || *c == '_' || *c == '.' || *c == '+' || *c == '-'))
      return false;
  return true;
}

Descriptor describe(const fb_plugin* table, const fb_kernel& k, int index, const std::string& path) {
  const auto fail = [&](const std::string& what) {
    return PluginError(fmt::format("--kernel-lib {}: kernel #{}{}: {}", path, index,
                                   valid_name(k.name) ? fmt::format(" '{}'", k.name) : std::string(), what));
  };
  if (k.struct_size < kKernelV1Size)
    throw fail(fmt::format("struct_size {} is smaller than fb_kernel of ABI version 1 ({} bytes)", k.struct_size,
                           kKernelV1Size));
  if (!valid_name(k.name)) throw fail("name is missing or has characters other than A-Z a-z 0-9 _ . + -");
  if (k.device != FB_DEVICE_CPU && k.device != FB_DEVICE_CUDA)
    throw fail(fmt::format("device {} is neither FB_DEVICE_CPU (0) nor FB_DEVICE_CUDA (1)", k.device));
  if (k.dtypes == 0 || (k.dtypes & ~std::uint32_t(FB_ALL_DTYPES)) != 0)
    throw fail(fmt::format("dtypes {} is not a nonzero mask of FB_DTYPE_BIT(FB_FP64..FB_BF16)", hex(k.dtypes)));
  if (!(k.passes & FB_PASS_FWD) || (k.passes & ~kKnownPasses) != 0)
    throw fail(fmt::format("passes {} must hold FB_PASS_FWD, optionally | FB_PASS_BWD", hex(k.passes)));
  if (!k.forward) throw fail("forward is NULL");
  if ((k.passes & FB_PASS_BWD) && !k.backward) throw fail("passes has FB_PASS_BWD but backward is NULL");
  if (k.num_head_dims < 0 || (k.num_head_dims > 0 && !k.head_dims))
    throw fail(fmt::format("num_head_dims {} without a head_dims array", k.num_head_dims));
  if (k.tile_rows < 0) throw fail(fmt::format("tile_rows {} is negative", k.tile_rows));

  Descriptor d;
  d.name = k.name;
  d.description = k.description && *k.description ? k.description : "(no description)";
  d.role = Role::tiled;
  d.origin = path;
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::fp16, Dtype::bf16})
    if (k.dtypes & FB_DTYPE_BIT(to_abi(t))) d.dtypes.push_back(t);
  d.passes.push_back(Pass::fwd);
  if (k.passes & FB_PASS_BWD) {
    d.passes.push_back(Pass::bwd);
    d.passes.push_back(Pass::fwd_bwd);
  }
  for (int i = 0; i < k.num_head_dims; ++i) {
    if (k.head_dims[i] < 1) throw fail(fmt::format("head_dims[{}] = {} is not positive", i, k.head_dims[i]));
    d.head_dims.push_back(k.head_dims[i]);
  }
  d.bytes = tiled_bytes;

  auto b = std::make_shared<Bound>();
  b->table = table;
  b->kernel = &k;
  b->name = d.name;
  b->path = path;
  const int tile = k.tile_rows;
  if (k.device == FB_DEVICE_CPU) {
    CpuEntry& e = d.cpu;
    e.unsupported = [b](Pass pass, const AttentionParams& p) { return b->unsupported(pass, p); };
    e.workspace_bytes = [b](Pass pass, const AttentionParams& p) { return b->workspace(pass, p); };
    e.forward = [b](const AttentionParams& p, const cpu::Context&, cpu::Saved&) { b->call(false, p, nullptr); };
    if (k.backward)
      e.backward = [b](const AttentionParams& p, const cpu::Context&, cpu::Saved&) { b->call(true, p, nullptr); };
    if (tile > 0) e.tile = [tile](Pass, const AttentionParams&, const cpu::Context&) { return tile; };
  } else {
    CudaEntry& e = d.cuda;
    e.unsupported = [b](Pass pass, const AttentionParams& p) { return b->unsupported(pass, p); };
    e.workspace_bytes = [b](Pass pass, const AttentionParams& p) { return b->workspace(pass, p); };
    e.forward = [b](const AttentionParams& p, const cuda::Context& ctx, NoState&) { b->call(false, p, ctx.stream); };
    if (k.backward)
      e.backward = [b](const AttentionParams& p, const cuda::Context& ctx, NoState&) {
        b->call(true, p, ctx.stream);
      };
    if (tile > 0) e.tile = [tile](Pass, const AttentionParams&, const cuda::Context&) { return tile; };
  }
  return d;
}

}  // namespace

std::vector<Descriptor> load_kernel_library(const std::string& path) {
  const auto fail = [&](const std::string& what) { return PluginError(fmt::format("--kernel-lib {}: {}", path, what)); };
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw fail("no such file");
  if (fs::is_directory(path, ec)) throw fail("is a folder, not a shared library");
  // dlopen searches the library path for a name without a slash: "libmine.so" means the file given.
  const std::string absolute = fs::absolute(path, ec).string();
  void* handle = ::dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    throw fail(fmt::format("cannot load it ({})", why ? why : "dlopen failed"));
  }
  // Never dlclose'd: descriptors hold pointers into it for the rest of the process.
  ::dlerror();
  void* sym = ::dlsym(handle, FB_PLUGIN_ENTRY_SYMBOL);
  if (!sym)
    throw fail(fmt::format("does not export {}() (a plug-in defines `const fb_plugin* {}(void)`, "
                           "include/flashbench/plugin.h)",
                           FB_PLUGIN_ENTRY_SYMBOL, FB_PLUGIN_ENTRY_SYMBOL));
  fb_plugin_entry entry = nullptr;
  static_assert(sizeof(entry) == sizeof(sym), "function and object pointers differ in size");
  std::memcpy(&entry, &sym, sizeof entry);  // POSIX: dlsym's object pointer is the function's address
  const fb_plugin* table = entry();
  if (!table) throw fail(fmt::format("{}() returned NULL", FB_PLUGIN_ENTRY_SYMBOL));
  if (table->abi_version != FB_PLUGIN_ABI_VERSION)
    throw fail(fmt::format("built for plug-in ABI version {}, this flashbench loads version {}: rebuild it "
                           "against this flashbench's include/flashbench/plugin.h",
                           table->abi_version, FB_PLUGIN_ABI_VERSION));
  if (table->struct_size < kPluginV1Size)
    throw fail(fmt::format("fb_plugin.struct_size {} is smaller than ABI version 1's ({} bytes)",
                           table->struct_size, kPluginV1Size));
  if (!table->last_error) throw fail("fb_plugin.last_error is NULL");
  if (table->num_kernels < 1 || !table->kernels)
    throw fail(fmt::format("lists no kernels (num_kernels {})", table->num_kernels));
  std::vector<Descriptor> out;
  for (int i = 0; i < table->num_kernels; ++i) out.push_back(describe(table, table->kernels[i], i, path));
  return out;
}

void activate_kernel_libraries(const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  KernelSet set(builtin_kernels().all());
  for (const std::string& path : paths) {
    for (Descriptor& d : load_kernel_library(path)) {
      if (const Descriptor* taken = set.find(d.name))
        throw PluginError(fmt::format("--kernel-lib {}: kernel '{}' is already registered (by {})", path, d.name,
                                      taken->origin));
      set.add(std::move(d));
    }
  }
  set_active_kernels(std::make_shared<const KernelSet>(std::move(set)));
}

}  // namespace fb

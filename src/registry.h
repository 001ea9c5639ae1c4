// The one list of kernels: a Descriptor per kernel holds everything flashbench knows about it — its
// name, role, what it supports, its byte model and its entry points on each backend. The runner, the
// backends, spec validation, the CLI's help, `info` and the scripts (via `flashbench info --json`)
// read descriptors; nothing else compares kernel names.
//
// Adding a kernel: a folder under kernels/ with its Ops (kernels/attention.h), one entry in
// builtin_kernels() (registry.cpp), its CMake line and its tests. A user's kernels arrive the same way
// at run time from a plug-in library (--kernel-lib, include/flashbench/plugin.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attention.h"
#include "case.h"

namespace fb {

namespace cpu {
struct Context;
struct Saved;
}  // namespace cpu

// What a kernel is for. The runner judges tiled kernels against the baseline's error (verification
// rule, README) and reports speed-ups over the baseline; the reference is the fp64 yardstick. A peer
// (a labelled comparison point or a diagnostic, e.g. TF32 GEMMs in an fp32 sweep) runs only when named,
// is judged and reported like any kernel, but its verdict does not fail `run`, `verify` or the gate.
enum class Role { baseline, tiled, reference, peer };
std::string_view to_string(Role r);

enum class BackendId { cpu, cuda };
std::string_view to_string(BackendId b);

// A kernel's entry points on one backend. Pointers in AttentionParams are that backend's (host for
// the CPU, device for CUDA). Every function may throw; the runner records the case as failed.
template <class Ctx, class State>
struct Entry {
  // Why these params cannot run `pass` here (nullopt: they can). Called before anything is allocated.
  std::function<std::optional<std::string>(Pass, const AttentionParams&)> unsupported;
  // Scratch bytes params.workspace must hold for `pass` (allocated and tracked by the backend).
  std::function<std::size_t(Pass, const AttentionParams&)> workspace_bytes;
  std::function<void(const AttentionParams&, const Ctx&, State&)> forward;
  // Empty: forward only. Runs after a forward with the same params, workspace and state.
  std::function<void(const AttentionParams&, const Ctx&, State&)> backward;
  // Rows per tile along the dimension the kernel loops over (query rows for the forward, key rows
  // for the backward), for the byte model; empty or 0 = not tiled.
  std::function<int(Pass, const AttentionParams&, const Ctx&)> tile;
  // The forward takes params.lse == nullptr and writes O only (cuda::Ops::lse_optional; the C API's inference
  // forward). false: it always writes LSE.
  bool lse_optional = false;
  explicit operator bool() const { return bool(forward); }
};

struct NoState {};
using CpuEntry = Entry<cpu::Context, cpu::Saved>;
using CudaEntry = Entry<cuda::Context, NoState>;

// Modelled HBM bytes of one run of a case (`query_tile` as the kernel reported it; 0 if not tiled).
using ByteModel = std::function<double(const Case&, int query_tile)>;

struct Descriptor {
  std::string name;         // what specs and results call it
  std::string description;  // one line for --help, info and README
  Role role = Role::tiled;
  std::vector<Dtype> dtypes;   // supported; the runner records other dtypes as skipped
  std::vector<int> head_dims;  // supported; empty = any
  std::vector<Pass> passes;    // supported (fwd_bwd needs fwd and bwd)
  ByteModel bytes;
  CpuEntry cpu;    // empty: not on the CPU backend
  CudaEntry cuda;  // empty: not on the CUDA backend (or this build has no CUDA)
  std::string origin = "built-in";  // or the plug-in library's path
  // Honours Case::splits (split-KV kernels): its tile is then keys per split. Other kernels are
  // recorded skipped for splits != 0 (they run at splits = 0 only).
  bool kv_splits = false;
  // A variant (make_variant): the kernel it runs and the kernel settings it runs under; empty for any other kernel.
  std::string variant_of;
  std::vector<std::pair<std::string, std::string>> variant_env;  // (FB_* variable, value), by variable

  bool runs_on(BackendId b) const { return b == BackendId::cpu ? bool(cpu) : bool(cuda); }
  std::vector<BackendId> backends() const;
};

// A set of kernels a run can name: the built-ins, plus plug-ins, plus (in tests) mutants.
class KernelSet {
 public:
  KernelSet() = default;
  explicit KernelSet(std::vector<Descriptor> kernels);
  // Throws std::invalid_argument if the name is taken or the descriptor is incomplete.
  void add(Descriptor d);
  const std::vector<Descriptor>& all() const { return kernels_; }
  const Descriptor* find(std::string_view name) const;
  const Descriptor* baseline() const;   // the first kernel with Role::baseline, if any
  const Descriptor* reference() const;  // the fp64 reference
  std::vector<const Descriptor*> user_kernels() const;  // every role but reference, in order
  // What runs when none are named: no peers, no variants (`run` puts a variant after its kernel).
  std::vector<const Descriptor*> default_kernels() const;
  std::string names() const;  // "naive, flash, flash-sm90" for messages (user kernels)

 private:
  std::vector<Descriptor> kernels_;
};

// A variant: `base` under its own name, every entry point called with `env` (FB_* kernel settings,
// kernels/common/settings.h kOverlayVars) in force over the process's environment, so that one process times a
// kernel beside itself under other probe words (`flashbench run --variant`). Its role, support and byte model are
// the base's. Throws std::invalid_argument naming what is wrong: an empty or malformed name, a base that is the
// reference, a variant or a plug-in's (whose settings are its own), no assignment, a variable a variant cannot set.
Descriptor make_variant(const Descriptor& base, const std::string& name,
                        const std::vector<std::pair<std::string, std::string>>& env);

// The kernels compiled into flashbench, in the order they run and print.
const KernelSet& builtin_kernels();
// The set a run uses: built-ins unless replaced (plug-ins loaded by the CLI, mutants in tests).
const KernelSet& active_kernels();
void set_active_kernels(std::shared_ptr<const KernelSet> set);  // nullptr: back to the built-ins
std::shared_ptr<const KernelSet> active_kernel_set();          // what set_active_kernels set (nullptr: built-ins)

// Shorthands over active_kernels().
const Descriptor* find_kernel(std::string_view name);
bool is_peer(std::string_view name);  // a peer's verdict never fails run, verify or compare
std::string kernel_names();

// Why a kernel has no entry on a backend ("cpu" | "cuda"), nullopt if it has one.
std::optional<std::string> unavailable_on(const Descriptor& k, std::string_view backend);
// Why a kernel cannot run a head dim at all (spec validation refuses it), nullopt if it may.
std::optional<std::string> unsupported_head_dim(const Descriptor& k, int head_dim);
// Why a kernel cannot run a case on any backend (dtype, head dim, pass), nullopt if it may.
std::optional<std::string> unsupported_reason(const Descriptor& k, const Case& c);

}  // namespace fb

// Kernel settings: the FB_* variables through which the built-in kernels take their timing probes and variant
// choices, and the overlays that let one process run a kernel under other values of them beside itself (a
// variant: `flashbench run --variant`, registry.h make_variant). Host only.
//
// A reader asks get(name) rather than std::getenv and keeps what it parses in a PerOverlay, once per overlay: so the
// shipping kernel (no overlay) reads the process's environment once, as before, and a variant's calls, made inside a
// Scope of its overlay, read its assignments (a variable it does not assign: the process's value).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fb::settings {

// The variables read through get(), which a variant may assign. Others (FB_CUDNN_*, FB_FP8_*, FB_DECODE_RING,
// FB_FLASH_BWD_SPLIT, FB_L2_FLUSH, ...) are read once from the process's environment: a variant refuses them.
inline constexpr std::array<std::string_view, 13> kOverlayVars = {
    "FB_SM90_FWD_PROBE",   "FB_SM90_BWD64",       "FB_SM90_BWD128",       "FB_SM90_BWD_SPLIT",
    "FB_SM90_BWD_QTAIL",   "FB_SM90_BWD_PERSIST", "FB_SM90_BWD_SHARE",    "FB_SM90_BWD_GROUPED",
    "FB_SM90_BWD64_PG",    "FB_SM90_BWD_PREPASS", "FB_SM90_BWD_LAUNCHES", "FB_FLASH_FWD_PROBE",
    "FB_FLASH_BWD",
};
inline bool overlayable(std::string_view name) {
  for (std::string_view v : kOverlayVars)
    if (v == name) return true;
  return false;
}

using Assignments = std::vector<std::pair<std::string, std::string>>;  // (variable, value)

// A set of assignments with its id: 1 .. kMaxOverlays, one per distinct set in a process (0 is the environment).
struct Overlay {
  int id = 0;
  Assignments vars;  // sorted by variable, each at most once
};
inline constexpr int kMaxOverlays = 64;

// The overlay of `vars` (one object for one set of assignments, whatever their order; it lives as long as the
// process). Throws std::invalid_argument for a variable that is not in kOverlayVars, one assigned twice, or a
// kMaxOverlays + 1-th distinct set.
inline const Overlay* overlay(Assignments vars) {
  static std::mutex mu;
  static std::map<Assignments, std::unique_ptr<Overlay>> made;
  std::sort(vars.begin(), vars.end());
  for (std::size_t i = 0; i < vars.size(); ++i) {
    if (!overlayable(vars[i].first)) {
      std::string known;
      for (std::string_view v : kOverlayVars) known += (known.empty() ? "" : ", ") + std::string(v);
      throw std::invalid_argument("'" + vars[i].first + "' is not a kernel setting a variant can assign (" + known +
                                  ")");
    }
    if (i > 0 && vars[i].first == vars[i - 1].first)
      throw std::invalid_argument("'" + vars[i].first + "' is assigned twice");
  }
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = made.find(vars); it != made.end()) return it->second.get();
  if (made.size() >= std::size_t(kMaxOverlays))
    throw std::invalid_argument("more than " + std::to_string(kMaxOverlays) +
                                " different sets of kernel settings in one process");
  auto o = std::make_unique<Overlay>();
  o->id = int(made.size()) + 1;
  o->vars = vars;
  return made.emplace(std::move(vars), std::move(o)).first->second.get();
}

namespace detail {
inline thread_local const Overlay* t_current = nullptr;
}  // namespace detail

// The overlay in force on this thread (nullptr: the process's environment).
inline const Overlay* current() { return detail::t_current; }

// `o` in force on this thread for the Scope's life (nullptr: the environment), the one before it after.
class Scope {
 public:
  explicit Scope(const Overlay* o) : prev_(detail::t_current) { detail::t_current = o; }
  ~Scope() { detail::t_current = prev_; }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const Overlay* prev_;
};

// A kernel setting: the overlay's value where it assigns `name`, else the environment's (nullptr: unset).
inline const char* get(const char* name) {
  if (const Overlay* o = detail::t_current)
    for (const auto& [var, value] : o->vars)
      if (var == name) return value.c_str();
  return std::getenv(name);
}

// What a reader parsed from its settings, once per overlay (a function-local static in place of the `static const
// T v = parse()` it replaces). A parse that throws leaves nothing behind: the next call parses again and throws again.
template <class T>
class PerOverlay {
 public:
  template <class Parse>
  const T& get(Parse&& parse) {
    const Overlay* o = detail::t_current;
    const std::size_t i = o != nullptr ? std::size_t(o->id) : 0;
    if (ready_[i].load(std::memory_order_acquire)) return *value_[i];
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_[i].load(std::memory_order_relaxed)) {
      value_[i].emplace(parse());
      ready_[i].store(true, std::memory_order_release);
    }
    return *value_[i];
  }

 private:
  std::mutex mu_;
  std::array<std::atomic<bool>, kMaxOverlays + 1> ready_{};
  std::array<std::optional<T>, kMaxOverlays + 1> value_{};
};

}  // namespace fb::settings

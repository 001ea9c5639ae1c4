// A JSON sweep spec -> a Sweep. The rules here and configs/spec.schema.json describe the same format.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/rep_order.h"
#include "case.h"

namespace fb {

// Bad spec: what() is one line naming the field (e.g. "spec.head_dim[1]: must be a positive integer").
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::size_t kMaxCases = 100000;  // a bigger sweep is refused, not run

struct Sweep {
  std::vector<Case> cases;           // Cartesian product, in axis order
  std::vector<std::string> kernels;  // registry names, in registry order if not given
  int warmup = 3;
  int reps = 10;
  std::uint64_t seed = 42;
  bool verify = true;
  double input_scale = 1.0;  // Q and K are scale x standard normal: scores grow as its square
  RepOrder rep_order = RepOrder::blocked;  // how a case's kernels take their reps (backend/timing.h)
  nlohmann::json spec;  // the spec as given
};

Sweep parse_spec(const std::string& text);       // throws SpecError
Sweep load_spec(const std::string& path);        // throws SpecError (also for an unreadable file)
Sweep sweep_from_json(const nlohmann::json& j);  // throws SpecError

// What the parser accepts, exposed so tests can hold configs/spec.schema.json to the same rules.
const std::vector<std::string>& spec_keys();         // every top-level key a spec may have
const std::vector<std::string>& spec_dtype_names();  // values of the dtype axis
const std::vector<std::string>& spec_pass_names();   // values of the pass axis

}  // namespace fb

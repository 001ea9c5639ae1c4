// The example CUDA plug-in (examples/plugin/cuda) on the GPU [gpu]: loaded through the same loader as
// `--kernel-lib`, run by the runner beside naive, and verified by the same rule, on square, decode-like
// and seq_q > seq_k causal shapes (rows with no key), GQA, both head dims and its three dtypes.
#include <string>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "catch.h"
#include "plugin.h"
#include "registry.h"
#include "runner.h"
#include "spec.h"

using namespace fb;

TEST_CASE("the example CUDA plug-in gives verified rows beside naive", "[gpu]") {
  const std::vector<Descriptor> plugin = load_kernel_library(FB_EXAMPLE_CUDA_PLUGIN);
  REQUIRE(plugin.size() == 1);
  REQUIRE(plugin.front().name == "example-cuda");
  REQUIRE(plugin.front().runs_on(BackendId::cuda));

  auto set = std::make_shared<KernelSet>(builtin_kernels().all());
  set->add(plugin.front());
  set_active_kernels(set);  // spec validation reads the active set

  struct Shape {
    int seq_q, seq_k;
  };
  // Square, odd lengths past a tile; decode (one query row); fewer queries than keys; more queries than
  // keys (causal: the first seq_q - seq_k rows see no key).
  const Shape shapes[] = {{200, 200}, {1, 1000}, {37, 300}, {130, 70}};
  std::vector<Record> rows;
  auto backend = make_backend(BackendKind::cuda, 0);
  for (const Shape& s : shapes) {
    const nlohmann::json spec = {{"seq_q", {s.seq_q}},
                                 {"seq_k", {s.seq_k}},
                                 {"batch", {2}},
                                 {"heads", {4}},
                                 {"kv_heads", {2}},
                                 {"head_dim", {64, 128}},
                                 {"dtype", {"fp32", "fp16", "bf16"}},
                                 {"causal", {false, true}},
                                 {"pass", {"fwd"}},
                                 {"kernels", {"naive", "example-cuda"}},
                                 {"warmup", 1},
                                 {"reps", 3}};
    const Results res = run_sweep(sweep_from_json(spec), *backend);
    rows.insert(rows.end(), res.records.begin(), res.records.end());
  }
  set_active_kernels(nullptr);

  int checked = 0;
  for (const Record& r : rows) {
    if (r.kernel != "example-cuda") continue;
    INFO(r.c.key() << ": " << r.reason << " " << r.errors.dump());
    CHECK(r.status == Status::ok);
    REQUIRE(r.verified.has_value());
    CHECK(*r.verified);
    CHECK(r.time_ms.median > 0);
    CHECK(r.bytes_moved > 0);
    ++checked;
  }
  CHECK(checked == 4 * 2 * 3 * 2);  // shapes x head dims x dtypes x causal
}

TEST_CASE("the example CUDA plug-in says why it skips what it does not run", "[gpu]") {
  auto set = std::make_shared<KernelSet>(builtin_kernels().all());
  set->add(load_kernel_library(FB_EXAMPLE_CUDA_PLUGIN).front());
  set_active_kernels(set);
  const nlohmann::json spec = {{"seq", {128}},        {"batch", {1}},         {"heads", {2}},
                               {"head_dim", {64}},    {"dtype", {"fp64"}},    {"causal", {false}},
                               {"pass", {"fwd", "bwd"}}, {"kernels", {"example-cuda"}}, {"warmup", 0},
                               {"reps", 1}};
  auto backend = make_backend(BackendKind::cuda, 0);
  const Results res = run_sweep(sweep_from_json(spec), *backend);
  set_active_kernels(nullptr);
  REQUIRE(res.records.size() == 2);
  for (const Record& r : res.records) {
    INFO(r.c.key() << ": " << r.reason);
    CHECK(r.status == Status::skipped);
    CHECK(r.reason.find("example-cuda") != std::string::npos);
  }
}

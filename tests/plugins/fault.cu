// Test fixture (tests/test_gpu_runner.cpp): a CUDA plug-in whose one kernel, "fault-illegal-address",
// stores through a null pointer, the device fault that loses the process's CUDA context (every later
// CUDA call then fails with cudaErrorIllegalAddress). It runs only at seq_q == kFaultSeqQ (supports()
// skips every other case), so a sweep over several lengths shows the cases before and after the fault.
// Built as target fb_fixture_fault; never part of flashbench's own kernel list.
#include <cuda_runtime.h>

#include <cstdio>

#include "flashbench/plugin.h"

namespace {

constexpr int kFaultSeqQ = 256;

char g_message[160];

// `where` is a kernel argument, so the compiler cannot see it is null: the store is issued and faults.
__global__ void store_through(float* where) { *where = 1.0f; }

const char* last_error() { return g_message; }

int supports(const fb_params* p, char* why, size_t why_size) {
  if (p->seq_q == kFaultSeqQ) return 1;
  std::snprintf(why, why_size, "fault-illegal-address runs only at seq_q = %d (where it faults)", kFaultSeqQ);
  return 0;
}

int forward(const fb_params* p, void* stream) {
  (void)p;
  store_through<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(nullptr);
  const cudaError_t err = cudaGetLastError();  // a launch that did not happen; the fault itself comes later
  if (err == cudaSuccess) return FB_OK;
  std::snprintf(g_message, sizeof g_message, "launch failed: %s", cudaGetErrorString(err));
  return FB_ERROR;
}

const fb_kernel kKernels[] = {{
    sizeof(fb_kernel),
    "fault-illegal-address",
    "test fixture: stores through a null pointer, which loses the CUDA context",
    FB_DEVICE_CUDA,
    FB_ALL_DTYPES,
    FB_PASS_FWD,
    nullptr,  // any head dim
    0,
    0,  // untiled
    supports,
    nullptr,  // no workspace
    forward,
    nullptr,  // forward only
}};

const fb_plugin kPlugin = {
    sizeof(fb_plugin), FB_PLUGIN_ABI_VERSION, "fault fixture", 1, kKernels, last_error,
};

}  // namespace

extern "C" const fb_plugin* flashbench_plugin(void) { return &kPlugin; }

/* flashbench's built-in CUDA kernels behind a C ABI, for programs outside the tool: libflashbench_capi.so.
 *
 * The other direction from plugin.h (a user's kernel run by flashbench): here a user's program runs
 * flashbench's kernels by name (`flashbench info` lists them), on its own buffers and stream.
 * scripts/fb_torch.py wraps it for PyTorch, so that scripts/peers.py can time flashbench's kernels and PyTorch's
 * SDPA in one process and one timed loop:
 *     python3 scripts/peers.py SPEC.json --callable scripts/fb_torch.py:flash_sm90 --backends cudnn
 *
 * Layout: Q, O, dO, dQ are [batch, heads, seq_q, head_dim], K, V, dK, dV [batch, kv_heads, seq_k, head_dim],
 * contiguous (row-major), in `dtype`; LSE is [batch, heads, seq_q] in the accumulator type (double for FB_FP64,
 * float otherwise). Causal is bottom-right aligned (query i sees keys j <= i + seq_k - seq_q). All pointers are
 * device pointers of the current CUDA device. Calls are asynchronous on `stream`; errors of the launches are
 * reported, errors inside a kernel surface at the caller's next synchronisation.
 *
 * Every function returns 0 on success; otherwise nonzero, with a one-line message (naming the kernel and what
 * was wrong) in err (err_size bytes, NUL-terminated; err may be NULL). Nothing is kept between calls but a cuBLAS
 * handle per thread (for the naive kernel). */
#ifndef FLASHBENCH_CAPI_H
#define FLASHBENCH_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "plugin.h" /* fb_dtype, FB_PASS_FWD, FB_PASS_BWD */

#ifdef __cplusplus
extern "C" {
#endif

/* 2: call.lse may be NULL in a forward (the inference forward, below).
 * 3: a kernel name may carry FB_* settings for its calls: "KERNEL:VAR=VALUE[:VAR=VALUE...]" (below). */
#define FB_CAPI_VERSION 3

typedef struct fb_capi_call {
  uint32_t struct_size; /* sizeof(fb_capi_call) of the caller: checked against the library's */
  int32_t dtype;        /* fb_dtype */
  int32_t batch;
  int32_t heads;    /* query heads */
  int32_t kv_heads; /* divides heads */
  int32_t seq_q;
  int32_t seq_k;
  int32_t head_dim;
  int32_t causal; /* 0 or 1 */
  double scale;   /* softmax scale; 0 = 1/sqrt(head_dim) */

  const void* q;
  const void* k;
  const void* v;
  void* o;
  /* NULL in a forward that no backward follows (inference, as PyTorch's SDPA under no_grad): flash-sm90 then
   * writes O only; a kernel that always writes the log-sum-exp writes it into the workspace, whose size for
   * FB_PASS_FWD counts room for it. A backward needs the LSE its forward wrote. */
  void* lse;
  /* Backward only (NULL for a forward). */
  const void* dout;
  void* dq;
  void* dk;
  void* dv;

  /* Scratch of fb_capi_workspace_bytes(kernel, passes, call) bytes. A backward takes the workspace its
   * forward ran with (asked for with passes FB_PASS_FWD | FB_PASS_BWD), unchanged in between. */
  void* workspace;
  uint64_t workspace_size;
  void* stream; /* cudaStream_t; NULL: the legacy default stream */
} fb_capi_call;

int fb_capi_version(void);
uint32_t fb_capi_call_size(void);
/* Comma-separated names of the kernels this library runs (those with a CUDA entry). Every function below that takes
 * a kernel name also takes "KERNEL:VAR=VALUE[:VAR=VALUE...]": KERNEL with those kernel settings (its probe words, e.g.
 * "flash-sm90:FB_SM90_FWD_PROBE=ones") in force for its calls only, as `flashbench run --variant` runs it, so that one
 * process can time a kernel beside itself under other settings; a variable no variant can assign is refused. */
const char* fb_capi_kernels(void);
/* Scratch bytes for passes (FB_PASS_FWD, or FB_PASS_FWD | FB_PASS_BWD when a backward will follow); checks
 * that the kernel can run the call's shape and dtype on the current device. Pointers are not read. */
int fb_capi_workspace_bytes(const char* kernel, uint32_t passes, const fb_capi_call* call, uint64_t* bytes,
                            char* err, size_t err_size);
/* O and LSE from Q, K, V (O only where call.lse is NULL). */
int fb_capi_forward(const char* kernel, const fb_capi_call* call, char* err, size_t err_size);
/* dQ, dK, dV from Q, K, V, O, LSE, dO, after a forward of the same call with the same workspace. */
int fb_capi_backward(const char* kernel, const fb_capi_call* call, char* err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* FLASHBENCH_CAPI_H */

/* flashbench plug-in ABI: benchmark and verify your own attention kernels.
 *
 * A plug-in is a shared library (.so) that exports one function,
 *
 *     const fb_plugin* flashbench_plugin(void);
 *
 * returning a table of kernels. `flashbench run SPEC --kernel-lib ./libmine.so` (and `verify`, `info`)
 * loads it with dlopen, checks the table, and runs each kernel through the same inputs, poisoning,
 * timing, memory tracking, fp64 verification, results file and regression gate as the built-in kernels.
 * A spec's "kernels" names plug-in kernels like built-in ones.
 *
 * Plain C99: no C++ types cross this boundary, so a plug-in can be written in C, C++, CUDA C++ or
 * anything that makes a C-callable shared library. A C++ plug-in declares flashbench_plugin
 * `extern "C"` (this header does that when compiled as C++).
 *
 * ---- Versioning ----
 * fb_plugin.abi_version must equal FB_PLUGIN_ABI_VERSION of the flashbench that loads it (a mismatch
 * is refused with a message naming the library, before anything runs). Each struct starts with a
 * `struct_size` field: the producer sets it to sizeof() of the struct as it was compiled, so later
 * versions can append fields while older readers and writers still agree on the prefix. flashbench
 * refuses a table or kernel whose struct_size is smaller than version 1's.
 *
 * ---- Layout (today) ----
 * Tensors are dense, "BHSD", element strides given in fb_params (in elements, not bytes):
 *   Q, O, dO, dQ : [batch, heads,    seq_q, head_dim]
 *   K, V, dK, dV : [batch, kv_heads, seq_k, head_dim]
 *   LSE          : [batch, heads,    seq_q]           natural-log log-sum-exp of the scaled scores
 * Query head h reads K/V head h / (heads / kv_heads) (GQA / MQA; kv_heads divides heads).
 * Element types: FB_FP64 double, FB_FP32 float, FB_FP16 IEEE binary16, FB_BF16 bfloat16 (both 16-bit
 * storage). LSE is in the accumulator type: double for FB_FP64, float for every other dtype.
 * flashbench passes contiguous tensors today (innermost stride 1); read the strides anyway, so a
 * plug-in keeps working when flashbench starts passing strided views.
 *
 * ---- What a kernel computes ----
 *   S = scale * Q K^T,  P = softmax(S) over the keys each query sees,  O = P V,  LSE = log sum exp S.
 * Causal masking with seq_q != seq_k is aligned bottom-right (FlashAttention >= 2.1): query row i sees
 * keys j <= i + seq_k - seq_q. A query row that sees no key (causal, seq_q > seq_k) must get O = 0 and
 * LSE = -inf, and in the backward dQ = 0 (it adds nothing to dK, dV).
 * Backward: dQ, dK, dV from Q, K, V, O, LSE, dO, as the gradients of sum(O * dO); dK and dV sum over
 * the query heads that share a K/V head. A backward call always follows a forward call with the same
 * params and workspace (it may read what the forward left in the workspace).
 *
 * ---- Memory ----
 * Every pointer is owned by flashbench. For an FB_DEVICE_CUDA kernel they are device pointers on the
 * current CUDA device; for an FB_DEVICE_CPU kernel, host pointers. Outputs are filled with NaN before
 * every call, so an element a kernel does not write fails verification. Scratch memory: return its
 * size from workspace_bytes(); flashbench allocates it with its tracking allocator (it counts in the
 * result's peak memory), on the kernel's device, not initialised, aligned to at least 64 bytes, and
 * passes it in fb_params.workspace for the whole run of a case (forward and backward calls). A kernel
 * should not allocate device memory of its own: that memory would go uncounted.
 *
 * ---- Streams, threads, lifetime ----
 * CUDA kernels: launch on the `stream` argument (a cudaStream_t) and do not synchronise it; flashbench
 * times with events on that stream. CPU kernels: `stream` is NULL; the call is timed with a wall clock
 * and must be finished when it returns (a kernel may use its own threads inside the call).
 * flashbench calls a plug-in from one thread at a time. The library stays loaded until the process
 * exits (it is never unloaded), so the table and every string in it must live that long.
 *
 * ---- Errors ----
 * forward/backward return FB_OK (0) on success, any other value on failure; flashbench then asks
 * fb_plugin.last_error() for a message and records the case as `failed` with it (the sweep goes on).
 * supports() returns 1 when the kernel can run the params, 0 (with a reason written to `why`) when it
 * cannot; the case is then recorded as `skipped` with that reason.
 */
#ifndef FLASHBENCH_PLUGIN_H
#define FLASHBENCH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FB_PLUGIN_ABI_VERSION 1

/* The exported function's name, for dlsym. */
#define FB_PLUGIN_ENTRY_SYMBOL "flashbench_plugin"

/* Status codes of forward/backward. Any nonzero value is a failure; these name the common ones. */
#define FB_OK 0
#define FB_ERROR 1

/* Element types (fb_params.dtype) and their bits in fb_kernel.dtypes. */
typedef enum fb_dtype { FB_FP64 = 0, FB_FP32 = 1, FB_FP16 = 2, FB_BF16 = 3 } fb_dtype;
#define FB_DTYPE_BIT(t) (1u << (unsigned)(t))
#define FB_ALL_DTYPES (FB_DTYPE_BIT(FB_FP64) | FB_DTYPE_BIT(FB_FP32) | FB_DTYPE_BIT(FB_FP16) | FB_DTYPE_BIT(FB_BF16))

/* Passes, as bits: fb_kernel.passes lists what a kernel implements (FB_PASS_BWD needs backward != NULL);
 * fb_params.pass says what the case runs (see there). */
#define FB_PASS_FWD 1u
#define FB_PASS_BWD 2u

/* Where a kernel runs, and so what its pointers point at. */
typedef enum fb_device { FB_DEVICE_CPU = 0, FB_DEVICE_CUDA = 1 } fb_device;

/* One call's arguments. Filled by flashbench; read-only for the plug-in (write only through the output
 * pointers and the workspace). Valid for the duration of the call only: do not keep the pointer. */
typedef struct fb_params {
  uint32_t struct_size; /* sizeof(fb_params) in the flashbench that filled it */
  uint32_t pass;        /* FB_PASS_FWD for a forward-only case; FB_PASS_FWD | FB_PASS_BWD for a case with a
                           backward (its forward runs first, with the same workspace, which must serve both) */
  int32_t dtype;        /* fb_dtype of Q, K, V, O, dO, dQ, dK, dV */
  int32_t batch;
  int32_t heads;    /* query heads */
  int32_t kv_heads; /* K/V heads; divides heads */
  int32_t seq_q;    /* query rows */
  int32_t seq_k;    /* key rows */
  int32_t head_dim;
  int32_t causal; /* 0 or 1; bottom-right aligned (see above) */
  double scale;   /* softmax scale, 1/sqrt(head_dim) unless the spec says otherwise */

  /* Element strides [batch, head, row, column]; dO shares O's, dQ Q's, dK K's, dV V's. */
  int64_t q_stride[4];
  int64_t k_stride[4];
  int64_t v_stride[4];
  int64_t o_stride[4];
  int64_t lse_stride[3]; /* [batch, head, row] */

  /* Forward inputs and outputs. */
  const void* q;
  const void* k;
  const void* v;
  void* o;
  void* lse; /* accumulator type */

  /* Backward: inputs dO (and q, k, v, o, lse from above); outputs dQ, dK, dV. NULL in forward-only cases. */
  const void* dout;
  void* dq;
  void* dk;
  void* dv;

  /* Scratch: workspace_bytes(params) bytes (NULL when it asked for 0). */
  void* workspace;
  uint64_t workspace_size;
} fb_params;

/* One kernel. All function pointers get the params of the case about to run (pointers NULL in
 * supports() and workspace_bytes(): they are asked before anything is allocated). */
typedef struct fb_kernel {
  uint32_t struct_size; /* sizeof(fb_kernel) as the plug-in was compiled */
  const char* name;        /* what specs and results call it: [A-Za-z0-9_.+-], unique among all kernels */
  const char* description; /* one line for `flashbench info` */
  int32_t device;          /* fb_device */
  uint32_t dtypes;         /* FB_DTYPE_BIT mask of the dtypes it runs */
  uint32_t passes;         /* FB_PASS_FWD, optionally | FB_PASS_BWD */
  const int32_t* head_dims; /* the head dims it runs; NULL (or num_head_dims 0) = any */
  int32_t num_head_dims;
  /* Rows per tile along the dimension the kernel loops over (query rows forward, key rows backward),
   * for flashbench's modelled bytes (K/V re-read once per query tile); 0 = untiled. */
  int32_t tile_rows;

  /* Optional (NULL: every case its dtypes, passes and head dims allow). 1 = can run; 0 = cannot, with
   * a NUL-terminated reason of at most why_size bytes written to `why`. */
  int (*supports)(const fb_params* p, char* why, size_t why_size);
  /* Optional (NULL: 0). Scratch bytes for p->pass. */
  uint64_t (*workspace_bytes)(const fb_params* p);
  /* Required. O and LSE from Q, K, V. */
  int (*forward)(const fb_params* p, void* stream);
  /* Optional (NULL: forward only; then passes must not hold FB_PASS_BWD). dQ, dK, dV. */
  int (*backward)(const fb_params* p, void* stream);
} fb_kernel;

/* The library's table. */
typedef struct fb_plugin {
  uint32_t struct_size; /* sizeof(fb_plugin) as the plug-in was compiled */
  uint32_t abi_version; /* FB_PLUGIN_ABI_VERSION the plug-in was compiled against */
  const char* name;     /* the library's name, for messages */
  int32_t num_kernels;  /* at least 1 */
  const fb_kernel* kernels;
  /* Required. The message of the last failed forward/backward call on the calling thread (never NULL;
   * "" if none). */
  const char* (*last_error)(void);
} fb_plugin;

/* What the library exports (visibility default). */
typedef const fb_plugin* (*fb_plugin_entry)(void);
const fb_plugin* flashbench_plugin(void);

#ifdef __cplusplus
}
#endif

#endif /* FLASHBENCH_PLUGIN_H */

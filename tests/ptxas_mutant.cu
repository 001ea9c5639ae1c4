// The ptxas_spills_mutant test's kernel (tests/ptxas_mutant.sh): held to 32 registers a thread (1024 threads, two
// blocks an SM) while it keeps 64 values live, so ptxas must spill. Never linked into anything.
__global__ void __launch_bounds__(1024, 2) ptxas_mutant_spill(float* x, int n) {
  float a[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) a[i] = x[threadIdx.x + i * n];
  float s = 0.f;
  for (int j = 0; j < n; ++j)
#pragma unroll
    for (int i = 0; i < 64; ++i) s += a[i] * a[(i + j) & 63];
  x[threadIdx.x] = s;
}

// The second mutant: a wgmma whose accumulator an ordinary instruction rewrites while the wgmma may still be in flight
// (between its commit and its wait). ptxas injects a wait (C7517) and serialises the function's wgmmas (C7511 at nvcc
// 13.0): the check must report both. Never run: the descriptors are whatever the caller passes.
__global__ void __launch_bounds__(128) ptxas_mutant_wgmma(float* out, unsigned long long da, unsigned long long db,
                                                           int n) {
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  for (int j = 0; j < n; ++j) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "l"(da), "l"(db), "r"(j));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    d0 = d0 * 0.5f + float(j);
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  out[threadIdx.x] = d0 + d1 + d2 + d3;
}

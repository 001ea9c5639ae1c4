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

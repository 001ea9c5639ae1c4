// Flash backward main kernels for fp32 on TF32 tensor cores, operands rounded once (the 1xTF32
// diagnostic), one per head_dim.
#include "flash/flash_bwd_tf32.cuh"

namespace fb::cuda::flash::bwd {

template void run_main_tf32<32, Fp32Math::tf32x1>(const MainArgs&, cudaStream_t);
template void run_main_tf32<64, Fp32Math::tf32x1>(const MainArgs&, cudaStream_t);
template void run_main_tf32<128, Fp32Math::tf32x1>(const MainArgs&, cudaStream_t);

}  // namespace fb::cuda::flash::bwd

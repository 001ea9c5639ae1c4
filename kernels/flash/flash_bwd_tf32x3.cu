// Flash backward main kernels for fp32 on TF32 tensor cores with the 3xTF32 split (the fp32 default),
// one per head_dim.
#include "flash/flash_bwd_tf32.cuh"

namespace fb::cuda::flash::bwd {

template void run_main_tf32<32, Fp32Math::tf32x3>(const MainArgs&, cudaStream_t);
template void run_main_tf32<64, Fp32Math::tf32x3>(const MainArgs&, cudaStream_t);
template void run_main_tf32<128, Fp32Math::tf32x3>(const MainArgs&, cudaStream_t);
template int main_tf32_smem_bytes<32>();
template int main_tf32_smem_bytes<64>();
template int main_tf32_smem_bytes<128>();
template int main_tf32_key_tile<32>();
template int main_tf32_key_tile<64>();
template int main_tf32_key_tile<128>();

}  // namespace fb::cuda::flash::bwd

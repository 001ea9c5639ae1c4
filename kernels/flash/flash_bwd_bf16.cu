// Flash backward main kernels for bf16 (tensor cores), one per supported head_dim.
#include "flash/flash_bwd_tc.cuh"

namespace fb::cuda::flash::bwd {

template void run_main_tc<__nv_bfloat16, 32>(const MainArgs&, TcLaunch, cudaStream_t);
template void run_main_tc<__nv_bfloat16, 64>(const MainArgs&, TcLaunch, cudaStream_t);
template void run_main_tc<__nv_bfloat16, 128>(const MainArgs&, TcLaunch, cudaStream_t);
template int main_tc_smem_bytes<__nv_bfloat16, 32>();
template int main_tc_smem_bytes<__nv_bfloat16, 64>();
template int main_tc_smem_bytes<__nv_bfloat16, 128>();
template int main_tc_key_tile<__nv_bfloat16, 32>();
template int main_tc_key_tile<__nv_bfloat16, 64>();
template int main_tc_key_tile<__nv_bfloat16, 128>();
template SplitTiles main_tc_split_tiles<__nv_bfloat16, 32>();
template SplitTiles main_tc_split_tiles<__nv_bfloat16, 64>();
template SplitTiles main_tc_split_tiles<__nv_bfloat16, 128>();
template void run_convert_dq_tiled<__nv_bfloat16, 64>(const float*, void*, std::int64_t, int, int, cudaStream_t);
template void run_convert_dq_tiled<__nv_bfloat16, 128>(const float*, void*, std::int64_t, int, int, cudaStream_t);

}  // namespace fb::cuda::flash::bwd

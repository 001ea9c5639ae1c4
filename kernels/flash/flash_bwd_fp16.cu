// Flash backward main kernels for fp16 (tensor cores), one per supported head_dim.
#include "flash/flash_bwd_tc.cuh"

namespace fb::cuda::flash::bwd {

template void run_main_tc<__half, 32>(const MainArgs&, TcLaunch, cudaStream_t);
template void run_main_tc<__half, 64>(const MainArgs&, TcLaunch, cudaStream_t);
template void run_main_tc<__half, 128>(const MainArgs&, TcLaunch, cudaStream_t);
template int main_tc_smem_bytes<__half, 32>();
template int main_tc_smem_bytes<__half, 64>();
template int main_tc_smem_bytes<__half, 128>();
template int main_tc_key_tile<__half, 32>();
template int main_tc_key_tile<__half, 64>();
template int main_tc_key_tile<__half, 128>();
template SplitTiles main_tc_split_tiles<__half, 32>();
template SplitTiles main_tc_split_tiles<__half, 64>();
template SplitTiles main_tc_split_tiles<__half, 128>();
template void run_convert_dq_tiled<__half, 64>(const float*, void*, std::int64_t, int, int, cudaStream_t);
template void run_convert_dq_tiled<__half, 128>(const float*, void*, std::int64_t, int, int, cudaStream_t);

}  // namespace fb::cuda::flash::bwd

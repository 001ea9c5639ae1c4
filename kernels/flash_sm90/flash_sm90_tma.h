// Host side of the TMA copies: tensor maps for BHSD tensors (flash_sm90.cu). cuTensorMapEncodeTiled
// is a driver API function; it is reached through cudaGetDriverEntryPointByVersion, so nothing links
// libcuda.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap

#include "attention.h"

namespace fb::cuda::flash_sm90 {

// A 3-D tensor map over a contiguous [planes, seq, d] tensor of 16-bit (or fp32) elements (planes = batch *
// heads or batch * kv_heads), boxes of (box_cols, box_rows, 1) elements, 128-byte swizzle. Rows past
// `seq` read as zeros and are never written. Throws fb::CudaError when the driver refuses it.
void encode_bhsd_map(CUtensorMap* map, Dtype t, const void* base, int head_dim, int seq,
                     std::int64_t planes, int box_cols, int box_rows);

// A 3-D tensor map over one-byte elements (the fp8 forward's e4m3 tiles): (cols, rows, planes) with
// contiguous rows of `cols` bytes, boxes of (box_cols, box_rows, 1), swizzle of `swizzle_bytes` (64
// or 128, = box_cols). Rows and columns past the ends read as zeros.
void encode_u8_map(CUtensorMap* map, const void* base, std::int64_t cols, std::int64_t rows,
                   std::int64_t planes, int box_cols, int box_rows, int swizzle_bytes);

}  // namespace fb::cuda::flash_sm90

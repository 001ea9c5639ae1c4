// The Hopper backward's host entry points, used by flash_sm90.cu (the kernel registry's
// flash-sm90 answers for Pass::bwd and Pass::fwd_bwd).
#pragma once

#include <cstddef>

#include "attention.h"

namespace fb::cuda::flash_sm90 {

// nullptr when the backward kernel can run these params (the device checks are the caller's), else
// why not.
const char* backward_unsupported(const AttentionParams& p);
// Dynamic shared memory of the backward kernel for p's (dtype, head_dim); 0 when not configured.
std::size_t backward_smem_bytes(const AttentionParams& p);
// Bytes of p.workspace the backward needs: padded LSE and D, and the dQ accumulator.
std::size_t backward_workspace_bytes(const AttentionParams& p);
// Keys per block (the byte model's key tile); 0 when unsupported.
int backward_key_tile(const AttentionParams& p);
// Into how many subsets each K/V plane's query heads are split over blocks (GQA/MQA; 1: none). Needs a device to say
// more than 1 (the SM count); tests use it.
int backward_head_split(const AttentionParams& p);
// Into how many units each tile of the grid's last partial wave runs (the query tail; 1: none). Needs a device to
// say more than 1 (the SM count); tests use it.
int backward_tail_split(const AttentionParams& p);
// Whether the d = 128 backward runs a head's last query tile as a short step (80-query kernel, at most 32 rows in the
// last tile; no head split); tests use it.
bool backward_short_step(const AttentionParams& p);
// Whether the d = 64 backward shares its last partial round of tiles out over every block (the shared tail). Needs a
// device to say true (the SM count); tests use it.
bool backward_tail_share(const AttentionParams& p);
// The plane group (K/V planes whose blocks run together, key tiles outermost) of a causal d = 64 pass launched a block
// a tile; on a head split, of virtual planes (a K/V plane and a subset of its query heads); 0 for every other pass.
// Needs a device (the SM count); tests use it.
int backward_causal_plane_group(const AttentionParams& p);
// Whether a causal d = 64 pass takes its tiles in the dynamic order (the default for MHA passes without a head split
// since session 49; FB_SM90_BWD_PERSIST=dyn: GQA too; =nodyn: none); tests use it.
bool backward_dyn_tiles(const AttentionParams& p);
// Pre-pass (D, LSE), the main kernel, dQ convert; writes p.dq, p.dk, p.dv.
void run_backward(const AttentionParams& p, const Context& ctx);

}  // namespace fb::cuda::flash_sm90

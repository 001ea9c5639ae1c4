// The Hopper 16-bit forward's tail split (kOptTailSplit, flash_sm90_kernel.cuh): which work tiles of a launch are
// split along K/V, and the workspace their parts take. Plain C++ (host and device), so that the launcher, the kernel
// and the CPU tests (tests/test_sm90fwd_split.cpp) read the same plan; session 15 (docs/perf-notes.md).
//
// With n_work work tiles of equal length (non-causal) on B persistent blocks, the last R = n_work mod B tiles run on R
// SMs for a whole tile's time while the other B - R idle. Each of them becomes S work items of about n_kv / S K/V
// tiles (parts), numbered after the n_work - R whole-round tiles so that the tile counter hands them out last; a part's
// O (divided by its row sums, f32) and base-2 LSE go to the workspace, and a second kernel merges each tile's parts.
#pragma once

#include <cstddef>

#include "common/mask.h"  // FB_HOST_DEVICE

namespace fb::cuda::flash_sm90 {

// Items [0, from) are work tiles 0 .. from - 1 as without the split; items from + u, 0 <= u < units(), are part
// u % splits of work tile from + u / splits.
struct TailSplit {
  int from;    // first split work tile (n_work: nothing split)
  int splits;  // parts per split work tile (1: nothing split)
  int items;   // work items the tile counter hands out
  FB_HOST_DEVICE int units() const { return items - from; }  // split parts (0: nothing split)
};

struct TailSplitLimits {
  // The shortest part, in K/V tiles. Splitting a tile of n K/V tiles into S parts shortens the launch's last round
  // from n to about n / S K/V-tile times (one K/V tile of a 192-row d = 64 tile: ~1.8 us on an H200 SM, session 14's
  // b1-h8 N = 16k row: 1.2 ms for 688 tiles x 128 K/V tiles on 132 SMs); it saves (S - 1) n / S of them, at least
  // n / 2 = one part's length (S = 2). What it adds does not shrink with the part: the merge kernel (a second launch
  // on the stream: the forward's drain, its launch and ramp, ~3-5 us, then the parts read once, ~1 us for 36 x 2
  // parts of 48 KB), and per part a prologue (its Q and first K/V loads, S_0 alone in its warpgroup's turn) and an
  // f32 epilogue (48 KB of O through plain stores where a whole tile stores 24 KB by TMA), about one K/V-tile time:
  // F ~ 3-4 K/V-tile times in all. A split into parts of L = 4 (b16-h32 N = 1k, 2 parts of 4) was behind the
  // unsplit kernel in session 15's call A (0.990 / 0.972x, results/h200/s15/callA/sm90fwd/table.txt), so F >= 4
  // there; parts of 10-11 (N = 4k) and 32 (N = 16k) were ahead. A part must save at least twice F: L >= 8.
  static constexpr int kMinKvTiles = 8;
  // At most this many parts (the workspace holds units() of them): more than the 132 SMs of the H200, so that the
  // parts never outnumber the blocks there.
  static constexpr int kMaxUnits = 160;
};

// The plan for n_work tiles of kv_tiles K/V tiles each on `blocks` persistent blocks: splits only a partial last
// round that follows at least one whole round (n_work > blocks), into as many parts as fill the idle SMs, each part
// at least kMinKvTiles long, at most kMaxUnits parts in all.
FB_HOST_DEVICE inline TailSplit tail_split_plan(int n_work, int blocks, int kv_tiles) {
  TailSplit ts{n_work, 1, n_work};
  const int r = blocks > 0 ? n_work % blocks : 0;
  if (n_work <= blocks || r == 0) return ts;
  int s = blocks / r;  // parts that fill the idle SMs (1 once the last round is over half full)
  const int by_len = kv_tiles / TailSplitLimits::kMinKvTiles, by_units = TailSplitLimits::kMaxUnits / r;
  s = s < by_len ? s : by_len;
  s = s < by_units ? s : by_units;
  if (s < 2) return ts;
  ts.from = n_work - r;
  ts.splits = s;
  ts.items = ts.from + r * s;
  return ts;
}

// Part `part` of a split work tile of n K/V tiles: its first K/V tile and its length (the parts differ by at most one
// K/V tile and cover the tile's K/V tiles once, in order).
struct TailPart {
  int kv_first, kv_tiles;
};
FB_HOST_DEVICE inline TailPart tail_split_part(int n, int splits, int part) {
  const int first = part * n / splits;
  return TailPart{first, (part + 1) * n / splits - first};
}

// The workspace of a plan for tiles of `rows` query rows and head dim d: per part, O (rows x d f32) and the rows'
// base-2 LSE (rows f32); the O parts first (16-byte aligned for the float2 accesses), then the LSE parts.
inline std::size_t tail_split_o_floats(const TailSplit& ts, int rows, int head_dim) {
  return std::size_t(ts.units()) * std::size_t(rows) * std::size_t(head_dim);
}
inline std::size_t tail_split_workspace_bytes(const TailSplit& ts, int rows, int head_dim) {
  if (ts.splits < 2) return 0;
  return (tail_split_o_floats(ts, rows, head_dim) + std::size_t(ts.units()) * std::size_t(rows)) * sizeof(float);
}

// Session 20's `shortstatic` (flash_sm90_launch.cuh; FwdDefaults::kShortStaticHeadDim, kShortStaticMaxKvTiles; the
// default at d = 128 since session 20's call A): whether a d = 128 launch runs the static round-robin (block b: work tiles b,
// b + grid, ...) in place of the tile counter. Only where its tiles are equal (non-causal), in pairq's plane-major
// order (so that the blocks 0 .. q_tiles - 1 of every round run one plane's query tiles, started together), and at
// most max_kv_tiles K/V tiles of kv_tile_keys keys long (seq_k <= max_kv_tiles x kv_tile_keys): session 19's call B
// read the static launch 1.022x over the tile counter at 4 K/V tiles a tile (N = 512) and level at 5 / 6 / 8 / 12
// (docs/perf-notes.md, flash-sm90 forward, "Session 19"). Host code only.
// Whether seq_k keys make at most max_kv_tiles K/V tiles of kv_tile_keys keys (false for no keys or no tile size).
inline bool kv_tiles_at_most(int seq_k, int kv_tile_keys, int max_kv_tiles) {
  if (seq_k <= 0 || kv_tile_keys <= 0) return false;
  return (seq_k + kv_tile_keys - 1) / kv_tile_keys <= max_kv_tiles;
}
inline bool short_tile_static(bool causal, bool plane_major, int seq_k, int kv_tile_keys, int max_kv_tiles) {
  return !causal && plane_major && kv_tiles_at_most(seq_k, kv_tile_keys, max_kv_tiles);
}

// Session 57's `k0rec` (flash_sm90_launch.cuh; FwdDefaults::kK0RecHeadDim, kK0RecMaxKvTiles; the default since
// calls A and B): whether a launch of the shipped variants with fastlse's epilogue runs the producer order kOptK0Rec.
// word: the probe word's tri-state (1 `k0rec`: every launch it applies to, 0 `nok0rec`: none, -1 the default: head dim
// default_head_dim where work tiles are at most max_kv_tiles K/V tiles of kv_tile_keys keys, causal or not). Host code
// only.
inline bool k0_rec_on(int word, int head_dim, int seq_k, int kv_tile_keys, int default_head_dim, int max_kv_tiles) {
  if (word >= 0) return word > 0;
  return head_dim == default_head_dim && kv_tiles_at_most(seq_k, kv_tile_keys, max_kv_tiles);
}

}  // namespace fb::cuda::flash_sm90

// The order in which a forward's blocks take their work tiles (plane bh = batch * heads + head, query
// tile q), defined once for the Hopper and the portable forward; the tails' pieces (forward and backward). Plain C++
// for host and device.
//
// Tiles go in groups of `plane_group` planes, one group after the other; within a group the last
// query tiles of every plane come first, then the ones before them. So:
//   - the blocks that run at the same time read the K/V of a few planes, which L2 holds (a
//     launch whose concurrent blocks spread over every plane re-reads K/V from HBM for each query
//     tile: the Hopper forward at 16k tokens x 2048 model dim had an L2 hit rate of 28% and DRAM 79%
//     busy that way; docs/perf-notes.md, session 5);
//   - with a causal mask the longest tiles (the last query tiles see the most keys) start first in
//     each group, and the tiles of one round are of one length, which balances the blocks.
// The launcher sizes plane_group with l2_plane_group() (common/device_caps.h).
#pragma once

#include "common/mask.h"

namespace fb {

struct PlaneTile {
  int bh;      // plane
  int q_tile;  // query tile index within the plane
};

// Work tile t of planes x q_tiles (0 <= t < planes * q_tiles); plane_group >= 1.
FB_HOST_DEVICE inline PlaneTile grouped_tile(int t, int planes, int q_tiles, int plane_group) {
  const int group_tiles = plane_group * q_tiles;
  const int grp = t / group_tiles;
  const int first_plane = grp * plane_group;
  const int left = planes - first_plane;
  const int planes_here = plane_group < left ? plane_group : left;
  const int within = t - grp * group_tiles;
  return PlaneTile{first_plane + within % planes_here, q_tiles - 1 - within / planes_here};
}

// The plane-major order (the flash-sm90 forward's `pairq`, non-causal launches; session 17, the d = 128 default since
// session 18): the q_tiles query tiles of one plane on consecutive tickets, its last tile first, then the next plane's.
// So blocks that take consecutive tickets at about the same time (every block at a persistent launch's start: block b
// runs tile b; then those finishing together) run query tiles of one plane and stream the same K/V tiles in the same
// order, which the L2 request coalescer can serve with one L2 read where two SMs of a GPC ask for a sector close
// together (cuDNN's grid, one block per query tile, gets 41% of its delivered K/V sectors so; grouped_tile, whose
// consecutive tickets are different planes, ~1%). With the static round-robin (block b takes t = b + k x grid) on an
// even grid and an even q_tiles, blocks 2i and 2i + 1 take two query tiles of one plane in every round. Plane groups
// drop out of it: within a group of planes [f, f + g) its tile f x q_tiles + u is plane f + u / q_tiles whatever g is,
// so it needs no plane_group; it is grouped_tile with plane_group = 1 (tests/test_cpu.cpp checks both), and a kernel
// that takes its order from grouped_tile runs it when launched with plane_group = 1. The L2 working set is a window of
// the planes that running blocks read (about blocks / q_tiles + 1 of them), no larger than a group's.
FB_HOST_DEVICE inline PlaneTile plane_major_tile(int t, int q_tiles) {
  const int bh = t / q_tiles;
  return PlaneTile{bh, q_tiles - 1 - (t - bh * q_tiles)};
}

// A grid's partial last wave as a launch of its own at one block an SM (the portable forward's d = 128 non-causal
// launches since session 30, kFwdPdlTail): n_blocks equal blocks on sms SMs that hold per_sm blocks each at once. In
// one launch the hardware hands the last wave's blocks to the slots that free first, which can put two on an SM while
// others idle (session 29's call E). The plan runs the whole waves as one launch and the tail as a second launch at
// one block an SM, `whole` blocks, then `tail` from block `whole` on; tail == 0: one launch of all n_blocks (no whole
// wave, no tail, a tail of more than one block an SM, or per_sm < 2). Session 30's `solotail` launched the tail after
// the first launch's last block and lost at short blocks, small tails and d = 64; as a programmatically dependent
// launch the tail's blocks take SMs as they free, so the plan has no floor on the tail.
struct TailSplit {
  long long whole;
  long long tail;
};

// Whether a kernel may be launched as a programmatic dependent of the launch before it (the launch attribute
// cudaLaunchAttributeProgrammaticStreamSerialization: pdl_tail_plan's tail, the decode combine): the device must have
// such launches (compute capability 9.0 and later) and the code it runs must have been compiled for one
// (cudaFuncAttributes::ptxVersion >= 90), where griddepcontrol.wait orders the dependent after its prerequisite. A
// build's compute_80 PTX, which the driver compiles for a newer GPU (an "80;90a" build on a Blackwell, or an "80"
// build on a Hopper), has no griddepcontrol: it launches in stream order, as on an A100.
FB_HOST_DEVICE constexpr bool programmatic_launch_ok(int device_major, int ptx_version) {
  return device_major >= 9 && ptx_version >= 90;
}
FB_HOST_DEVICE inline TailSplit pdl_tail_plan(long long n_blocks, int per_sm, int sms) {
  const long long resident = static_cast<long long>(per_sm) * sms;
  if (per_sm < 2 || sms < 1 || n_blocks <= resident) return TailSplit{n_blocks, 0};
  const long long whole = n_blocks / resident * resident;
  const long long tail = n_blocks - whole;
  if (tail == 0 || tail > sms) return TailSplit{n_blocks, 0};
  return TailSplit{whole, tail};
}

// The probe kvsubwave (flash forward, session 45): a grid of n_blocks equal blocks that fits one wave (per_sm * sms
// blocks at once, per_sm >= 2) as all tail, {0, n_blocks}, for kFwdKvTail's pieces (kv_tail_splits then leaves one of
// more than one block an SM whole); else {n_blocks, 0}: no tail.
FB_HOST_DEVICE inline TailSplit subwave_tail_plan(long long n_blocks, int per_sm, int sms) {
  if (per_sm < 2 || sms < 1 || n_blocks < 1 || n_blocks > static_cast<long long>(per_sm) * sms)
    return TailSplit{n_blocks, 0};
  return TailSplit{0, n_blocks};
}

// kFwdKvTail (flash forward): the blocks each of a tail's `tail` work tiles runs as, each over a run of its
// `kv_tiles` K/V tiles: as many as the device holds next to each other (per_sm * sms blocks in all), each at least
// `min_tiles` K/V tiles long; 1: the tail is not split (no tail, or too few K/V tiles). Piece s of n runs K/V tiles
// [kv_split_begin(s, n, kv_tiles), kv_split_begin(s + 1, n, kv_tiles)): their lengths differ by at most one.
FB_HOST_DEVICE inline int kv_tail_splits(long long tail, int per_sm, int sms, int kv_tiles, int min_tiles) {
  if (tail < 1 || per_sm < 1 || sms < 1 || min_tiles < 1) return 1;
  long long n = static_cast<long long>(per_sm) * sms / tail;
  const int most = kv_tiles / min_tiles;
  if (n > most) n = most;
  return n < 2 ? 1 : static_cast<int>(n);
}
FB_HOST_DEVICE inline int kv_split_begin(int s, int n, int kv_tiles) {
  return static_cast<int>(static_cast<long long>(s) * kv_tiles / n);
}

// The most K/V tiles one block of a non-causal flash forward launch runs: `kv_tiles` where any block runs a whole work
// tile (a grid with `whole` blocks of whole tiles, or no pieces), else the longest of kv_split_begin's `pieces` runs.
// The probe br64short (session 53) takes 64-row tiles only where this is at most kBr64ShortMaxTiles.
FB_HOST_DEVICE inline int longest_kv_run(long long whole, int pieces, int kv_tiles) {
  if (whole > 0 || pieces < 2) return kv_tiles;
  return (kv_tiles + pieces - 1) / pieces;
}

// The flash forward's grids of less than one wave (session 46's probe kvsubwave3, the default since call N): in pieces
// only where each of such a grid's tiles gets at least `min_pieces` pieces of at least `min_tiles` K/V tiles: the
// pieces of such a grid (kv_tail_splits over subwave_tail_plan's tail), else 1, the grid left whole. Session 46's call
// K: three pieces of 6-7 K/V tiles a tile (72-88 blocks) 1.22-1.27x; two pieces 0.93-1.06x; pieces of 2-3 K/V tiles
// 0.985-1.008x.
FB_HOST_DEVICE inline int subwave_pieces(long long n_blocks, int per_sm, int sms, int kv_tiles, int min_tiles,
                                         int min_pieces) {
  const TailSplit s = subwave_tail_plan(n_blocks, per_sm, sms);
  if (s.tail == 0) return 1;
  const int n = kv_tail_splits(s.tail, per_sm, sms, kv_tiles, min_tiles);
  return n >= min_pieces && n >= 2 ? n : 1;
}

// The shared tail (flash-sm90's d = 64 backward, kBwd64TailShare): a persistent grid's last partial round of `tail`
// equal tiles of n query tiles each, laid end to end (total = tail * n query tiles, tile slot s at s * n), cut into
// `blocks` runs: run b is [tail_run_begin(total, blocks, b), tail_run_begin(total, blocks, b + 1)), their lengths
// differ by at most one. A run is walked as pieces, each a range [lo, hi) of one slot's query tiles: tail_piece(pos,
// end, n) is the piece that starts at pos, and the next starts at slot * n + hi. With tail < blocks a run is at most
// n long, so it has one piece or two (the end of one tile and the start of the next).
FB_HOST_DEVICE inline long long tail_run_begin(long long total, int blocks, int b) {
  return total * b / blocks;
}
struct TailPiece {
  int slot;
  int lo;
  int hi;
};
FB_HOST_DEVICE inline TailPiece tail_piece(long long pos, long long end, int n) {
  const int slot = static_cast<int>(pos / n);
  const long long tile_pos = static_cast<long long>(slot) * n;
  const long long left = end - tile_pos;
  return TailPiece{slot, static_cast<int>(pos - tile_pos), static_cast<int>(left < n ? left : n)};
}

}  // namespace fb

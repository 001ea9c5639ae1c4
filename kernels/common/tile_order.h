// The order in which a forward's blocks take their work tiles (plane bh = batch * heads + head, query
// tile q), defined once for the Hopper and the portable forward. Plain C++ for host and device.
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

}  // namespace fb

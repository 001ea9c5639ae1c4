// How many blocks share the query heads of one K/V tile in a GQA/MQA backward: the list-scheduling model
// both backwards (flash's warp-grid kernel and flash-sm90's) use. Host code only; the callers decide where a
// split may run (dtype, head dim, variant, device) and pass the tile sizes of the kernel that would run.
//
// A block of work is one (key tile, K/V plane, subset of the group's query heads); it costs its query-tile
// steps (per head: the query tiles that see the key tile, all of them without causal) plus kUnitOverhead
// steps (launch, K/V load, the fp32 dK/dV reductions). Blocks are placed greedily, longest key tiles first,
// on `sms` processors; of the splits (divisors of the group, at most kMaxSplit) whose modelled time is within
// kNearBest of the best, the largest wins, if it saves at least kMinGain over no split. Shapes with at least
// kFewTilesPerSm (key tile, K/V plane) tiles per SM fill the GPU already: no split. Cached per shape, device
// size, tiles and model. The constants were fitted in session 7 (docs/perf-notes.md, "flash-sm90 backward on
// GQA/MQA") and picked within 3% of the best forced split for flash in session 8. The unsplit grid may be modelled as
// its kernel runs it (HeadSplitModel::unsplit_query_tail, unsplit_plane_major): that time decides whether to split,
// the plain one (longest first, a whole last wave) how many.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "attention.h"

namespace fb::cuda {

// Greedy list scheduling on `sms` processors, the hardware's block scheduling as the backwards' models
// take it: each block, in launch order, goes to the processor that frees first; end() is the makespan.
class ListSchedule {
 public:
  explicit ListSchedule(int sms) {
    for (int i = 0; i < sms; ++i) free_at_.push(0.0);
  }
  void place(double cost) {
    const double t = free_at_.top() + cost;
    free_at_.pop();
    free_at_.push(t);
    end_ = std::max(end_, t);
  }
  double end() const { return end_; }

 private:
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at_;
  double end_ = 0.0;
};

// The modelled makespan of a causal grid of `planes` planes run in groups of `group` (causal_plane_group()'s order: key
// tiles outermost within a group, the groups in turn), each block key_tile_cost[j].
inline double plane_group_makespan(const std::vector<double>& key_tile_cost, std::int64_t planes, std::int64_t group,
                                   int sms) {
  ListSchedule schedule(sms);
  for (std::int64_t first = 0; first < planes; first += group) {
    const std::int64_t here = std::min(group, planes - first);
    for (const double cost : key_tile_cost)
      for (std::int64_t u = 0; u < here; ++u) schedule.place(cost);
  }
  return schedule.end();
}

// A causal pass's blocks by key tile j, as the plane-group models cost them: the query tiles (block_m rows) that see key
// tile j (block_n keys) under p's mask, times `heads` (the query heads a block runs), plus `overhead` steps.
inline std::vector<double> causal_key_tile_costs(const AttentionParams& p, int block_n, int block_m, int heads,
                                                 double overhead) {
  const CausalMask mask = p.mask();
  const int q_tiles = (p.seq_q + block_m - 1) / block_m;
  const int key_tiles = (p.seq_k + block_n - 1) / block_n;
  std::vector<double> cost(static_cast<std::size_t>(std::max(key_tiles, 0)));
  for (int j = 0; j < key_tiles; ++j)
    cost[std::size_t(j)] = double(q_tiles - mask.first_q_tile(j * block_n, block_m)) * heads + overhead;
  return cost;
}

// The plane group of a causal grid that runs one block per (key tile, K/V plane) in groups of planes, key tiles
// outermost within a group (flash-sm90's bwd_work, its d = 64 kernel launched a block a tile): key_tile_cost[j] is a
// block of key tile j (its steps and overhead), the longest first under the mask. l2_group planes keep what the group's
// blocks re-read within L2 (l2_plane_group()); but where a block is long beside a SM's share of the grid (GQA: a block
// runs the group's query heads), groups of few planes start the last groups' longest blocks late: 40 q / 8 kv heads,
// d = 64, N = 3300, groups of 2 planes model 171 steps against 133 for groups of 4, and ran 0.501 ms where 40 q / 1 kv
// head, split into the same 208 blocks in one group, ran 0.403 ms (results/h200/s35/E/). Candidates: every group from
// l2_group up to what `waves` device-fulls of blocks hold (waves x sms / key tiles planes), modelled in launch order
// (ListSchedule); the smallest within near_best of the fastest. The model has no memory term; the bound stands in for
// it: a group whose blocks take many waves has each plane's key tiles run waves apart, re-reading its Q, dO and dQ rows
// from memory. Session 36's call C (results/h200/s36/C/, groups forced): every plane in one group ran 0.89x / 1.01x the
// L2 group at 32 q / 8 kv, batch 16 / 4, N = 1024 / 4096 (128 / 32 planes), where groups of one or two waves of blocks
// ran 1.04x / 1.07x.
inline std::int64_t causal_plane_group(const std::vector<double>& key_tile_cost, std::int64_t planes,
                                       std::int64_t l2_group, int sms, double near_best = 0.02, double waves = 2.0) {
  if (planes <= 1 || sms <= 0 || key_tile_cost.empty()) return std::max<std::int64_t>(planes, 1);
  l2_group = std::clamp<std::int64_t>(l2_group, 1, planes);
  const auto key_tiles = static_cast<std::int64_t>(key_tile_cost.size());
  const std::int64_t most =
      std::max(l2_group, std::min(planes, static_cast<std::int64_t>(waves * sms) / key_tiles));
  auto makespan = [&](std::int64_t group) { return plane_group_makespan(key_tile_cost, planes, group, sms); };
  std::vector<std::pair<std::int64_t, double>> times;  // (plane group, modelled time), group ascending
  for (std::int64_t g = l2_group; g <= most; ++g) times.emplace_back(g, makespan(g));
  double fastest = times.front().second;
  for (const auto& [g, t] : times) fastest = std::min(fastest, t);
  for (const auto& [g, t] : times)
    if (t <= (1.0 + near_best) * fastest) return g;
  return l2_group;
}

// A head split's virtual planes (flash-sm90's causal d = 64 head split, since session 37; splitpg was its probe):
// causal_plane_group()'s pick, unless every virtual plane in one group (the split's order before: all key tiles
// outermost) is modelled near_best or more faster than it (where the L2 group is already past two device-fulls of
// blocks, or the bound leaves the last groups' long blocks late).
inline std::int64_t split_causal_plane_group(const std::vector<double>& key_tile_cost, std::int64_t planes,
                                             std::int64_t l2_group, int sms, double near_best = 0.02) {
  const std::int64_t g = causal_plane_group(key_tile_cost, planes, l2_group, sms, near_best);
  if (g >= planes) return g;
  const double one = plane_group_makespan(key_tile_cost, planes, planes, sms);
  return (1.0 + near_best) * one < plane_group_makespan(key_tile_cost, planes, g, sms) ? planes : g;
}

// The tail split: of a non-causal grid's n_blocks equal blocks (`steps` steps each: `heads` runs of `tiles` query
// tiles), the first n_blocks - tail (tail = n_blocks % sms) run whole, as whole waves; each of the last `tail` may run
// as S units, whose partial dK / dV the launcher sums in fp32. Model: the tail's units run in ceil(tail S / sms)
// rounds of (a unit's steps + unit_overhead) against one round of (steps + unit_overhead) unsplit. A unit's steps:
// steps / S where units cut the (head, tile) walk anywhere (flash's warp-grid kernel), ceil(tiles / S) x heads where
// every unit walks a range of query tiles of every head (flash-sm90's); S <= the steps or tiles it divides. The S in
// 2..max_split with the shortest tail, if that is at least min_gain shorter than the unsplit tail; else 1. Fitted
// for flash in session 10 (flash_bwd.cu tail_split()) and taken by flash-sm90 in session 24 (flash_sm90_bwd.cu
// qtail_parts()). Host code; no device here (the callers pass the SM count).
struct TailSplitModel {
  int max_split = 16;
  double unit_overhead = 4.0;
  double min_gain = 0.01;
  bool whole_tiles = false;  // units walk whole query tiles of every head (flash-sm90)
};

// The modelled time of the last partial wave of n_blocks equal blocks (as model_tail_split's steps): split into the
// chosen S units where model_tail_split splits, else whole; 0 where the blocks fill whole waves.
struct TailSplitChoice {
  int splits = 1;
  double time = 0.0;
};
inline TailSplitChoice model_tail_split_choice(long long n_blocks, int sms, int tiles, int heads,
                                               const TailSplitModel& m = TailSplitModel{}) {
  if (sms <= 0 || n_blocks <= 0 || tiles <= 0 || heads <= 0) return {};
  const long long tail = n_blocks % sms;
  if (tail == 0) return {};
  const double steps = double(tiles) * heads;
  const double unsplit = steps + m.unit_overhead;
  int best = 1;
  double best_t = unsplit;
  const int most = std::min<long long>(m.max_split, m.whole_tiles ? tiles : (long long)steps);
  for (int s = 2; s <= most; ++s) {
    const double unit = m.whole_tiles ? double((tiles + s - 1) / s) * heads : steps / s;
    const double t = double((tail * s + sms - 1) / sms) * (unit + m.unit_overhead);
    if (t < best_t) {
      best = s;
      best_t = t;
    }
  }
  if (best_t <= (1.0 - m.min_gain) * unsplit) return {best, best_t};
  return {1, unsplit};
}
inline int model_tail_split(long long n_blocks, int sms, int tiles, int heads, const TailSplitModel& m = TailSplitModel{}) {
  return model_tail_split_choice(n_blocks, sms, tiles, heads, m).splits;
}

// flash-sm90's d = 64 persistent backward (kBwd64TailShare): n_tiles equal tiles of `tiles` query tiles of `heads`
// steps each on `blocks` persistent blocks run as whole rounds and a last partial one of R = n_tiles mod blocks tiles
// (time tiles * heads steps, while blocks - R blocks wait). Shared out, the R tiles' R * tiles query tiles are cut
// into `blocks` runs (ceil(R * tiles / blocks) query tiles the longest), each run one or more pieces (a tile's range
// of query tiles; a run straddles a tile's end at most ceil(run / tiles) times), each piece paying piece_overhead
// steps (its K/V load, pipeline fill and the fp32 dK / dV partials it sends). Shared where that saves at least
// min_gain of the tail's time. The times are in steps of the tail (whole rounds left out).
struct TailShareModel {
  double piece_overhead = 2.0;
  double min_gain = 0.1;
};
struct TailShareChoice {
  bool share = false;
  double unshared = 0.0;  // the partial round: one tile
  double shared = 0.0;    // the longest run and its pieces
};
inline TailShareChoice model_tail_share(long long n_tiles, int blocks, int tiles, int heads,
                                        const TailShareModel& m = TailShareModel{}) {
  TailShareChoice c;
  if (blocks <= 0 || n_tiles <= blocks || tiles <= 0 || heads <= 0) return c;
  const long long tail = n_tiles % blocks;
  if (tail == 0) return c;
  const long long run = (tail * tiles + blocks - 1) / blocks;  // query tiles
  const long long pieces = std::min<long long>(tail, (run + tiles - 1) / tiles + 1);
  c.unshared = double(tiles) * heads;
  c.shared = double(run) * heads + double(pieces) * m.piece_overhead;
  c.share = c.shared <= (1.0 - m.min_gain) * c.unshared;
  return c;
}

struct HeadSplitModel {
  int max_split = 8;
  std::int64_t few_tiles_per_sm = 8;
  double unit_overhead = 4.0;
  double min_gain = 0.05;
  double near_best = 0.05;
  // Non-causal passes whose kernel splits the unsplit grid's last partial wave (flash-sm90's query tail, d = 128):
  // the unsplit time is its whole waves plus that wave as model_tail_split_choice (units of whole query tiles) has it,
  // not a whole wave more. Causal passes ignore it (their blocks differ in length).
  bool unsplit_query_tail = false;
  // Non-causal passes whose persistent kernel shares its last partial round out over every block (flash-sm90's shared
  // tail, d = 64): the unsplit time is its whole rounds plus that round as model_tail_share has it where it shares.
  bool unsplit_tail_share = false;
  // Causal passes whose unsplit grid runs plane-major (flash's kHeadMajorCausal: each plane's key tiles in turn, the
  // longest first within a plane), where the split grid runs the longest key tiles of every plane first: the unsplit
  // time places its blocks in that order (session 26, call G: with them placed longest first the model had the
  // unsplit grid 1.1-1.4x faster than it ran, and kept whole groups that five or seven subsets ran 1.14-1.44x faster).
  bool unsplit_plane_major = false;
};

// block_n: keys per K/V tile, block_m: queries per step of the kernel that would run.
inline int model_head_split(const AttentionParams& p, int sms, int block_n, int block_m,
                            const HeadSplitModel& m = HeadSplitModel{}) {
  const int group = p.kv_heads > 0 && p.heads % p.kv_heads == 0 ? p.heads / p.kv_heads : 0;
  if (group <= 1 || sms <= 0 || block_n <= 0 || block_m <= 0 || p.seq_q < 1 || p.seq_k < 1 || p.batch < 1)
    return 1;
  const std::int64_t key_tiles = (std::int64_t(p.seq_k) + block_n - 1) / block_n;
  const std::int64_t planes = std::int64_t(p.batch) * p.kv_heads;
  if (key_tiles * planes >= m.few_tiles_per_sm * sms) return 1;

  using Key = std::tuple<int, int, int, int, int, bool, int, int, int, int, std::int64_t, double, double, double, bool,
                         bool, bool>;
  static std::mutex mu;
  static std::map<Key, int> cache;
  const Key key{p.batch,   p.heads,       p.kv_heads,         p.seq_q,          p.seq_k,
                p.causal,  sms,           block_n,            block_m,          m.max_split,
                m.few_tiles_per_sm, m.unit_overhead, m.min_gain, m.near_best, m.unsplit_query_tail,
                m.unsplit_plane_major, m.unsplit_tail_share};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const int q_tiles = (p.seq_q + block_m - 1) / block_m;
  const std::vector<double> per_head = causal_key_tile_costs(p, block_n, block_m, 1, 0.0);
  auto makespan = [&](int split) {
    ListSchedule schedule(sms);
    for (std::int64_t j = 0; j < key_tiles; ++j) {
      const double cost = per_head[std::size_t(j)] * (group / split) + m.unit_overhead;
      for (std::int64_t u = 0; u < planes * split; ++u) schedule.place(cost);
    }
    return schedule.end();
  };
  // The plain unsplit time: its blocks longest first over every plane, a whole last wave.
  const double plain = makespan(1);
  // The unsplit time as the grid runs. unsplit_plane_major (causal): the unsplit blocks in the order its grid runs
  // them, plane after plane. unsplit_query_tail (non-causal: every block costs q_tiles x group + unit_overhead steps):
  // whole waves, then the last partial one as the query tail runs it; under one wave the grid whole (session 43's call
  // B weighed it with the query tail there, the probe subq: rule not met, results/h200/s43/B/).
  auto unsplit = [&] {
    const long long n_blocks = key_tiles * planes;
    if (p.causal && m.unsplit_plane_major) {
      ListSchedule schedule(sms);
      for (std::int64_t plane = 0; plane < planes; ++plane)
        for (std::int64_t j = 0; j < key_tiles; ++j)
          schedule.place(per_head[std::size_t(j)] * group + m.unit_overhead);
      return schedule.end();
    }
    const double block = double(q_tiles) * group + m.unit_overhead;
    if (m.unsplit_tail_share && !p.causal && n_blocks > sms) {
      const TailShareChoice share = model_tail_share(n_blocks, sms, q_tiles, group);
      if (share.share) return double(n_blocks / sms) * block + share.shared;
    }
    if (!m.unsplit_query_tail || p.causal || n_blocks < sms) return plain;
    TailSplitModel tm;
    tm.whole_tiles = true;
    tm.unit_overhead = m.unit_overhead;
    const TailSplitChoice tail = model_tail_split_choice(n_blocks, sms, q_tiles, group, tm);
    return double(n_blocks / sms) * block + tail.time;
  };
  std::vector<std::pair<int, double>> splits;  // (split >= 2, modelled time), split ascending
  for (int split = 2; split <= std::min(group, m.max_split); ++split)
    if (group % split == 0) splits.emplace_back(split, makespan(split));
  // Of the splits within near_best of the fastest time (the unsplit one among them), the largest that saves min_gain
  // over the unsplit time; 1 if none.
  auto choose = [&](double unsplit_time) {
    double fastest = unsplit_time;
    for (const auto& [split, t] : splits) fastest = std::min(fastest, t);
    int best = 1;
    for (const auto& [split, t] : splits)
      if (t <= (1.0 + m.near_best) * fastest && t <= (1.0 - m.min_gain) * unsplit_time) best = split;
    return best;
  };
  // The unsplit time as the grid runs (unsplit_plane_major, unsplit_query_tail) decides whether to split; how many
  // subsets, where the plain model (the unsplit blocks longest first, the last wave whole) splits too, stays its
  // choice: the split grids run as modelled, and a larger unsplit time only lets more of them pass min_gain, toward
  // the largest within near_best (session 26's call H: 6 subsets in place of the plain model's 3, 0.968x and 0.979x;
  // call I, with the plain model's count: 1.000x and 1.001x).
  const double as_run = unsplit();
  int best = choose(as_run);
  if (best > 1 && as_run != plain) {
    if (const int plain_best = choose(plain); plain_best > 1) best = plain_best;
  }
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, best);
  return best;
}

// The plane group of an unsplit causal GQA grid of one block per (key tile, K/V plane) over the group's query heads,
// run plane after plane (1) or in groups of planes, key tiles outermost within a group (flash's warp-grid backward,
// flash_bwd.cu causal_plane_group_of()): causal_plane_group() from 1, a block of key tile j costing its query-tile steps
// times the group plus unit_overhead (as model_head_split()'s units). 1 for MHA, non-causal passes and empty shapes.
inline std::int64_t gqa_causal_plane_group(const AttentionParams& p, int sms, int block_n, int block_m,
                                           double unit_overhead = HeadSplitModel{}.unit_overhead) {
  const int group = p.kv_heads > 0 && p.heads % p.kv_heads == 0 ? p.heads / p.kv_heads : 0;
  if (!p.causal || group <= 1 || sms <= 0 || block_n <= 0 || block_m <= 0 || p.seq_q < 1 || p.seq_k < 1 ||
      p.batch < 1)
    return 1;
  return causal_plane_group(causal_key_tile_costs(p, block_n, block_m, group, unit_overhead),
                            std::int64_t(p.batch) * p.kv_heads, 1, sms);
}

}  // namespace fb::cuda

#include "backend/timing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace fb {

std::string_view to_string(RepOrder o) { return o == RepOrder::interleaved ? "interleaved" : "blocked"; }

std::optional<RepOrder> parse_rep_order(std::string_view s) {
  if (s == "blocked") return RepOrder::blocked;
  if (s == "interleaved") return RepOrder::interleaved;
  return std::nullopt;
}

double TimingPolicy::time_cap_s() const { return max_time_s > 0 ? max_time_s : kDefaultMaxTimeS; }

nlohmann::json TimingPolicy::to_json() const {
  const std::string order(to_string(rep_order));
  if (!adaptive())
    return {{"mode", "fixed"}, {"warmup", warmup}, {"warmup_min_s", warmup_min_s}, {"reps", reps},
            {"rep_order", order}};
  return {{"mode", "adaptive"},       {"warmup", warmup},         {"warmup_min_s", warmup_min_s},
          {"min_reps", reps},         {"min_time_s", min_time_s}, {"max_noise_pct", max_noise_pct},
          {"max_time_s", time_cap_s()}, {"noise", "cv"},          {"rep_order", order}};
}

double noise_pct(const std::vector<double>& t) {
  const std::size_t n = t.size();
  if (n < 2) return 0;
  const double mean = std::accumulate(t.begin(), t.end(), 0.0) / double(n);
  double ss = 0;
  for (double x : t) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / double(n - 1));
  return mean > 0 ? 100.0 * sd / mean : 0;
}

int next_batch(const TimingPolicy& p, const std::vector<double>& t, double elapsed_s) {
  const int taken = int(t.size());
  if (taken < p.reps) return p.reps - taken;
  if (!p.adaptive()) return 0;
  const double cap = p.time_cap_s();
  if (elapsed_s >= cap) return 0;
  const double kernel_s = std::accumulate(t.begin(), t.end(), 0.0) * 1e-3;
  const bool long_enough = kernel_s >= p.min_time_s;
  // Written so that a NaN noise keeps sampling (until the cap).
  const bool quiet = p.max_noise_pct <= 0 || noise_pct(t) <= p.max_noise_pct;
  if (long_enough && quiet) return 0;

  // Wall time per sample (timer, flush and poison included) bounds what the cap still allows; kernel
  // time per sample says how many reach min_time (the 1e-9 keeps a quotient of 7.000000001, a
  // rounding of 7, from asking for 8). Noise alone: grow by half what we have.
  const double wall_per = elapsed_s / double(std::max(taken, 1));
  const double kernel_per = kernel_s / double(std::max(taken, 1));
  double want = long_enough || kernel_per <= 0 ? std::max(1.0, 0.5 * taken)
                                               : std::ceil((p.min_time_s - kernel_s) / kernel_per - 1e-9);
  if (wall_per > 0) want = std::min(want, std::floor((cap - elapsed_s) / wall_per));
  return int(std::clamp(want, 1.0, double(kMaxBatch)));
}

int next_rounds(const TimingPolicy& p, const std::vector<std::vector<double>>& t, double elapsed_s) {
  if (t.empty()) return 0;
  const double share = elapsed_s / double(t.size());
  int rounds = 0;
  for (const std::vector<double>& times : t) rounds = std::max(rounds, next_batch(p, times, share));
  return rounds;
}

std::vector<int> round_order(int kernels, long long round) {
  const int n = kernels;
  if (n <= 0) return {};
  // The first row 0, 1, n - 1, 2, n - 2, ...; row r adds r to each (mod n); an odd n adds the rows reversed.
  std::vector<int> first = {0};
  for (int lo = 1, hi = n - 1; int(first.size()) < n;) first.push_back(first.size() % 2 ? lo++ : hi--);
  const long long rows = n % 2 ? 2LL * n : n;
  const long long row = ((round % rows) + rows) % rows;
  std::vector<int> order(std::size_t(n), 0);
  for (int i = 0; i < n; ++i) order[std::size_t(i)] = int((first[std::size_t(i)] + row % n) % n);
  if (row >= n) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace fb

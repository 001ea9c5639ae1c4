// The order of a case's timed reps (TimingPolicy::rep_order, a sweep's rep_order), apart so that the spec reads
// it without the timing policy's names. Defined in timing.cpp.
#pragma once

#include <optional>
#include <string_view>

namespace fb {

// How a case's kernels take their timed reps. blocked: each kernel's reps back to back, one kernel after the
// other. interleaved: in rounds, one rep of every kernel a round, the rounds' orders a Williams design
// (round_order), so that whatever moves the device's speed over a case (the clock under a power cap, the heat
// the kernel before left) falls on every kernel alike, and rep r of every kernel ran in the same round
// (scripts/paired.py pairs them). scripts/peers.py --interleave times PyTorch's kernels the same way.
enum class RepOrder { blocked, interleaved };
std::string_view to_string(RepOrder o);
std::optional<RepOrder> parse_rep_order(std::string_view s);  // "blocked" | "interleaved"

}  // namespace fb

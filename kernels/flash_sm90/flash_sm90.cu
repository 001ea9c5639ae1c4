// Placeholder until the Hopper kernel lands: every case reports unsupported (recorded as skipped).
#include <stdexcept>

#include "flash_sm90/flash_sm90.h"

namespace fb::cuda::flash_sm90 {

const char* unsupported(Pass, const AttentionParams&) { return "flash-sm90: not built in this version"; }
std::size_t workspace_bytes(Pass, const AttentionParams&) { return 0; }
void forward(const AttentionParams&, const Context&) { throw std::invalid_argument(unsupported(Pass::fwd, {})); }
void backward(const AttentionParams&, const Context&) { throw std::invalid_argument(unsupported(Pass::bwd, {})); }
int query_tile(const AttentionParams&) { return 128; }

}  // namespace fb::cuda::flash_sm90

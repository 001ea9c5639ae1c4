// Building a family's fb::cuda::Ops (kernels/attention.h): entry points that check support first, so
// that an unsupported call throws a clear std::invalid_argument instead of launching.
#pragma once

#include <stdexcept>

#include "attention.h"

namespace fb::cuda {

using UnsupportedFn = const char* (*)(Pass, const AttentionParams&);
using RunFn = void (*)(const AttentionParams&, const Context&);

template <UnsupportedFn kUnsupported, RunFn kRun, Pass kPass>
void checked(const AttentionParams& p, const Context& ctx) {
  if (const char* why = kUnsupported(kPass, p)) throw std::invalid_argument(why);
  kRun(p, ctx);
}

}  // namespace fb::cuda

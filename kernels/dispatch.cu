// The one place a run-time algorithm choice turns into a call: fb::cuda entry points -> naive::,
// flash:: or reference::. Each implementation does its own dtype/head_dim dispatch behind its header.
#include <stdexcept>
#include <string>

#include "attention.h"
#include "flash/flash.h"
#include "naive/naive.h"
#include "reference/reference.h"

namespace fb::cuda {
namespace {

void require_supported(Algo algo, Pass pass, const AttentionParams& p) {
  if (const char* why = unsupported(algo, pass, p)) throw std::invalid_argument(why);
}

}  // namespace

const char* unsupported(Algo algo, Pass pass, const AttentionParams& p) {
  switch (algo) {
    case Algo::naive: return naive::unsupported(pass, p);
    case Algo::flash: return flash::unsupported(pass, p);
    case Algo::reference: return reference::unsupported(pass, p);
  }
  return "unknown algorithm";
}

std::size_t workspace_bytes(Algo algo, Pass pass, const AttentionParams& p) {
  switch (algo) {
    case Algo::naive: return naive::workspace_bytes(pass, p);
    case Algo::flash: return flash::workspace_bytes(pass, p);
    case Algo::reference: return reference::workspace_bytes(pass, p);
  }
  throw std::invalid_argument("workspace_bytes: unknown algorithm");
}

void forward(Algo algo, const AttentionParams& p, const Context& ctx) {
  require_supported(algo, Pass::fwd, p);
  switch (algo) {
    case Algo::naive: naive::forward(p, ctx); return;
    case Algo::flash: flash::forward(p, ctx); return;
    case Algo::reference: reference::forward(p, ctx); return;
  }
  throw std::invalid_argument("forward: unknown algorithm");
}

void backward(Algo algo, const AttentionParams& p, const Context& ctx) {
  require_supported(algo, Pass::bwd, p);
  switch (algo) {
    case Algo::naive: naive::backward(p, ctx); return;
    case Algo::flash: flash::backward(p, ctx); return;
    case Algo::reference: reference::backward(p, ctx); return;
  }
  throw std::invalid_argument("backward: unknown algorithm");
}

int flash_query_tile(const AttentionParams& p) { return flash::query_tile(p); }

}  // namespace fb::cuda

// The one place a run-time algorithm choice turns into a call: fb::cuda entry points -> naive::,
// flash:: or reference::. Each implementation does its own dtype/head_dim dispatch behind its header.
#include <stdexcept>
#include <string>

#include "attention.h"
#include "flash/flash.h"
#include "flash_sm90/flash_sm90.h"
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
    case Algo::flash_sm90: return flash_sm90::unsupported(pass, p);
    case Algo::reference: return reference::unsupported(pass, p);
  }
  return "unknown algorithm";
}

std::size_t workspace_bytes(Algo algo, Pass pass, const AttentionParams& p) {
  switch (algo) {
    case Algo::naive: return naive::workspace_bytes(pass, p);
    case Algo::flash: return flash::workspace_bytes(pass, p);
    case Algo::flash_sm90: return flash_sm90::workspace_bytes(pass, p);
    case Algo::reference: return reference::workspace_bytes(pass, p);
  }
  throw std::invalid_argument("workspace_bytes: unknown algorithm");
}

void forward(Algo algo, const AttentionParams& p, const Context& ctx) {
  require_supported(algo, Pass::fwd, p);
  switch (algo) {
    case Algo::naive: naive::forward(p, ctx); return;
    case Algo::flash: flash::forward(p, ctx); return;
    case Algo::flash_sm90: flash_sm90::forward(p, ctx); return;
    case Algo::reference: reference::forward(p, ctx); return;
  }
  throw std::invalid_argument("forward: unknown algorithm");
}

void backward(Algo algo, const AttentionParams& p, const Context& ctx) {
  require_supported(algo, Pass::bwd, p);
  switch (algo) {
    case Algo::naive: naive::backward(p, ctx); return;
    case Algo::flash: flash::backward(p, ctx); return;
    case Algo::flash_sm90: flash_sm90::backward(p, ctx); return;
    case Algo::reference: reference::backward(p, ctx); return;
  }
  throw std::invalid_argument("backward: unknown algorithm");
}

int query_tile(Algo algo, const AttentionParams& p) {
  switch (algo) {
    case Algo::flash: return flash::query_tile(p);
    case Algo::flash_sm90: return flash_sm90::query_tile(p);
    default: return 0;
  }
}

}  // namespace fb::cuda

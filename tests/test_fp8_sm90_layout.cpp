// Host test [fp8] of the index bookkeeping of flash-sm90's fp8 P V (flash_sm90_fp8_traits.h): for
// every thread of a warp and every k32 step, the key whose P a thread packs into each byte of its A
// fragment (fp8_p_acc_index over the S accumulator layout) is the key V^T holds at that byte's K
// position (v_key_of_position), and the permutation is one. The hardware layouts these rely on
// (accumulator: ptx_sm90.cuh; e4m3 A fragment: ptx_sm90_fp8.cuh) are checked on the device by
// tests/test_gpu_fp8_sm90.cpp.
#include <set>

#include "catch.h"
#include "flash_sm90/flash_sm90_fp8_traits.h"

namespace {

using namespace fb::cuda::flash_sm90;

}  // namespace

TEST_CASE("fp8 flash-sm90: P's A-fragment bytes and V^T's key order name the same key", "[fp8]") {
  std::set<int> keys;
  for (int k = 0; k < kVPermutationGroup; ++k) keys.insert(v_key_of_position(k));
  CHECK(keys.size() == std::size_t(kVPermutationGroup));
  CHECK(*keys.begin() == 0);
  CHECK(*keys.rbegin() == kVPermutationGroup - 1);

  constexpr int kSteps = 4;  // a 128-key tile
  int checked = 0;
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int kk = 0; kk < kSteps; ++kk)
      for (int reg = 0; reg < 4; ++reg)
        for (int byte = 0; byte < 4; ++byte) {
          // The S accumulator this byte comes from: block j, row half hf, column c (ptx_sm90.cuh).
          const int i = fp8_p_acc_index(kk, reg, byte);
          const int acc_row = g + 8 * ((i / 2) % 2);
          const int acc_key = 8 * (i / 4) + 2 * t + i % 2;
          // Where the e4m3 A fragment puts this byte (ptx_sm90_fp8.cuh): row and K position.
          const int frag_row = g + 8 * (reg % 2);
          const int frag_k = 4 * t + byte + 16 * (reg / 2);
          INFO("lane " << lane << " kk " << kk << " reg " << reg << " byte " << byte);
          CHECK(acc_row == frag_row);
          CHECK(acc_key == 32 * kk + v_key_of_position(frag_k));
          ++checked;
        }
  }
  CHECK(checked == 32 * kSteps * 16);
}

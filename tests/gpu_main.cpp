// GPU tests: without a visible CUDA device, exit 77 so that ctest reports them skipped, not passed.
#include <cstdio>

#if FB_CATCH_V3
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include "backend/backend.h"

int main(int argc, char* argv[]) {
  if (!fb::cuda_device_available()) {
    std::puts("no CUDA device visible: GPU tests skipped");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}

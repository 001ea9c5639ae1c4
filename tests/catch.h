// Catch2 v2 (single header) or v3, whichever the build found.
#pragma once
#if FB_CATCH_V3
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

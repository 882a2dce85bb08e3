// Catch2's main, alone in its translation unit so the test files never pay for it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

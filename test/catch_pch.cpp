// The translation unit izwi_catch_pch compiles Catch2's precompiled header for.
#include <catch2/catch.hpp>

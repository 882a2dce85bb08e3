#pragma once
// Build modes of izwi, as Boost.Beast and {fmt} offer them.
//
// Header-only (the default): include the headers and nothing else; every
// translation unit that uses a stock engine compiles it.
//
// Separate compilation: define IZWI_SEPARATE_COMPILATION for every
// translation unit of the program (the CMake target izwi::compiled does it
// for you) and compile <izwi/src.hpp> in exactly one of them (izwi::compiled
// is that translation unit, built once). Then
//   - the stock engine configurations of <izwi/stock_engines.hpp> are declared
//     `extern template` and instantiated once, in src.hpp;
//   - the non-template parts marked IZWI_DECL (the model-file readers and
//     writers of io/, model loading, the server's stock model loader) are
//     declared in their headers and defined once, in a src.hpp (izwi/,
//     izwi/io/, izwi/server/), instead of `inline` in every translation unit.
// Anything else (your own engine configuration, your own model family) is
// still instantiated where you use it, in either mode.
//
// The mode changes where code is compiled, never what it does: the test suite
// runs in separate-compilation mode and a packaging test builds a header-only
// consumer (test/build).

#if defined(IZWI_SEPARATE_COMPILATION)
/// Declared here, defined once in <izwi/src.hpp>.
#define IZWI_DECL
#else
/// Defined in the header, inline.
#define IZWI_DECL inline
#endif

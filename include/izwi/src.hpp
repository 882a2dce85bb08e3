#pragma once
// izwi's compiled part, for IZWI_SEPARATE_COMPILATION (see izwi/config.hpp):
// include this in exactly one translation unit of a program whose every
// translation unit defines IZWI_SEPARATE_COMPILATION. The CMake target
// izwi::compiled is that translation unit (src/izwi.cpp).
//
// It defines the non-template functions marked IZWI_DECL (model loading) and
// explicitly instantiates the stock engine configurations of
// izwi/stock_engines.hpp. The model files' part (io/) is <izwi/io/src.hpp>,
// the server's <izwi/server/src.hpp>.

#if !defined(IZWI_SEPARATE_COMPILATION)
#error "izwi/src.hpp is for IZWI_SEPARATE_COMPILATION builds; header-only builds need no compiled part"
#endif

#define IZWI_SOURCE
#include "izwi/stock_engines.hpp"

#include "izwi/models/impl/qwen3_load.ipp"

#define IZWI_STOCK_INSTANTIATION template
#include "izwi/detail/stock_instantiations.hpp"
#undef IZWI_STOCK_INSTANTIATION

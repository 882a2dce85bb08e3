// izwi::compiled: the one translation unit of izwi's separate-compilation
// mode (include/izwi/config.hpp). Built by cmake/izwiCompiled.cmake with
// IZWI_SEPARATE_COMPILATION defined, as every user of the target is.
#include <izwi/src.hpp>

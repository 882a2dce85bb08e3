// izwi::io_compiled: the model files' translation unit of izwi's
// separate-compilation mode (include/izwi/config.hpp). Built by
// cmake/izwiCompiled.cmake with IZWI_SEPARATE_COMPILATION defined, as every
// user of the target is.
#include <izwi/io/src.hpp>

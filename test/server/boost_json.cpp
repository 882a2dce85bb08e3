// Boost.JSON's compiled part, once for every test executable of this area
// (izwi is header-only; a program using izwi/server compiles it in one TU).
#include <boost/json/src.hpp>

// multipart/form-data parser tests (the parser lands in the next commit).
#include <catch2/catch.hpp>

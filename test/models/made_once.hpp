#pragma once
// A test checkpoint written once per build tree by one of the project's
// generators. ctest -j starts many test processes at once, and each may find
// the checkpoint missing: every one writes into its own staging directory and
// renames it into place, so no process ever reads a half-written file (a
// reader that found `dir` by its first file alone once read a truncated
// safetensors that another process was still writing).

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace izwi::testing {

/// `dir`, made by running `write(staging)` (a shell command that writes the
/// checkpoint into the staging directory it is given) when `dir/last_file`
/// does not exist. `last_file` is any file of the checkpoint: `dir` appears
/// whole or not at all.
template <class CommandFor>
std::filesystem::path made_once(const std::filesystem::path& dir, const std::string& last_file,
                                CommandFor&& write) {
  if (std::filesystem::exists(dir / last_file)) return dir;
  const std::filesystem::path staging = dir.string() + ".staging-" + std::to_string(::getpid());
  std::error_code error;
  std::filesystem::remove_all(staging, error);
  const std::string command = std::string(write(staging)) + " > /dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  std::filesystem::rename(staging, dir, error);  // fails when another process got there first
  std::filesystem::remove_all(staging, error);
  REQUIRE(std::filesystem::exists(dir / last_file));
  return dir;
}

}  // namespace izwi::testing

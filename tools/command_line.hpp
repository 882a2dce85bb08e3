// The command lines of izwi's own programs (tools/ and bench/): what every one
// of them shares around Boost.Program_options, so that they all read, reject
// and explain their arguments the same way. Each program keeps its own
// options, defaults, checks and texts; only the plumbing is here. The library
// headers (include/izwi/) never use it: the library has no command line, and
// Program_options is a dependency of the programs alone (the CMake target
// izwi_command_line, which links it).
//
// Why each piece:
//   usage_error        one way to refuse a command line: "program: problem",
//                      the usage, where to look (--help), exit status 2.
//   read_command_line  one parse: options spelled in full (no guessing from a
//                      prefix: callers pass whole names, and a new option
//                      cannot make an old abbreviation ambiguous), bare words
//                      only where the program names positions for them, any
//                      other one named in the error; --help prints what the
//                      program does, its usage and its options, and exits 0.
//                      With -h the only short option, a negative value
//                      (--eot-scale -1.5) is read as the value.
//   Count, count       Program_options reads "-1" into std::size_t as its
//                      largest value (as strtoul does), so --threads -1 would
//                      ask for 2^64 - 1 threads; a Count takes digits only.
//   parse_count_list   "1,2,4", each item a Count.
//   seconds            a double flag whose --help default shows as written
//                      (0.1, where lexical_cast writes 0.10000000000000001).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <boost/program_options.hpp>

namespace izwi::command_line {

namespace po = boost::program_options;

/// What a program says about itself in its messages.
struct Program {
  const char* name;      // "izwi-audio-info": the first word of every message
  const char* synopsis;  // follows "usage: "; may span lines
  const char* about;     // --help's first line, after the name
};

/// Refuses the command line: prints the problem and the usage, exits 2.
[[noreturn]] inline void usage_error(const Program& program, const std::string& problem) {
  std::cerr << program.name << ": " << problem << "\nusage: " << program.synopsis << "\n(" << program.name
            << " --help lists the options)\n";
  std::exit(2);
}

/// The value of a count flag (see count()).
struct Count {
  std::size_t value;
};

inline std::ostream& operator<<(std::ostream& out, Count c) { return out << c.value; }  // --help's defaults

/// Digits only: no sign, no space, nothing after; nullopt otherwise (or on overflow).
inline std::optional<std::size_t> parse_count(std::string_view text) {
  std::size_t n = 0;
  const auto [stop, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (error != std::errc() || stop != text.data() + text.size()) return std::nullopt;
  return n;
}

/// How Program_options reads a Count (found by argument-dependent lookup).
inline void validate(boost::any& out, const std::vector<std::string>& values, Count*, int) {
  po::validators::check_first_occurrence(out);  // as Boost's own validators: a flag given twice is an error
  const std::string& text = po::validators::get_single_string(values);
  const std::optional<std::size_t> n = parse_count(text);
  if (!n) throw po::invalid_option_value(text);
  out = Count{*n};
}

/// A count flag stored in `target`, whose value is the default.
inline po::typed_value<Count>* count(std::size_t* target) {
  return po::value<Count>()->default_value(Count{*target})->notifier([target](Count c) { *target = c.value; });
}

/// "1,2,4" -> {1, 2, 4}; nullopt unless every item is a count ("", "1,", "1,-2").
inline std::optional<std::vector<std::size_t>> parse_count_list(std::string_view text) {
  std::vector<std::size_t> counts;
  for (std::size_t start = 0;;) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::optional<std::size_t> n = parse_count(text.substr(start, comma - start));
    if (!n) return std::nullopt;
    counts.push_back(*n);
    if (comma == text.size()) return counts;
    start = comma + 1;
  }
}

/// A flag in seconds stored in `target`, whose value is the default.
inline po::typed_value<double>* seconds(double* target) {
  char text[64];
  char* end = std::to_chars(text, text + sizeof text, *target, std::chars_format::fixed).ptr;
  return po::value(target)->default_value(*target, std::string(text, end));
}

/// The command line read against `visible` (the options --help lists; one of
/// them "help,h") and `hidden` (those it does not, such as the names of
/// `positional` arguments), or exit: 2 on a mistake, 0 after --help.
inline po::variables_map read_command_line(int argc, char** argv, const Program& program,
                                           const po::options_description& visible,
                                           const po::options_description& hidden = {},
                                           const po::positional_options_description& positional = {}) {
  po::options_description all;
  all.add(visible).add(hidden);
  po::variables_map vm;
  try {
    constexpr int style = po::command_line_style::unix_style ^ po::command_line_style::allow_guessing;
    po::parsed_options parsed = po::command_line_parser(argc, argv).options(all).style(style).run();
    // Bare words take `positional`'s names, as .positional() would do, except
    // that the first one too many is named in the error.
    unsigned position = 0;
    for (po::option& word : parsed.options) {
      if (word.position_key == -1) continue;
      if (position >= positional.max_total_count())
        usage_error(program, "unexpected argument '" + word.value.front() + "'");
      word.string_key = positional.name_for_position(position++);
    }
    po::store(parsed, vm);
    po::notify(vm);
  } catch (const po::error& e) {
    usage_error(program, e.what());
  }
  if (vm.count("help")) {
    std::cout << program.name << ": " << program.about << "\nusage: " << program.synopsis << "\n" << visible;
    std::exit(0);
  }
  return vm;
}

}  // namespace izwi::command_line

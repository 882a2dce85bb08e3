#!/usr/bin/env python3
"""Every public header names the standard headers of what it uses.

The header self-containment check (cmake/izwiHeaderCheck.cmake) compiles each
public header alone, but with the standard library precompiled: that check
proves izwi's own includes, not the standard ones. This one proves those, and
without the accident of one standard library's internals: libstdc++ 12's
<vector> happens to bring <algorithm>'s std::min, libc++ and MSVC's do not, so
a compile with libstdc++ alone cannot see such a gap.

Rule: a file that names std::X (outside comments and string literals) must
include X's standard header itself, or reach it through izwi headers it
includes. A body under impl/ also sees what its including header sees. Under
IZWI_SEPARATE_COMPILATION another header's body is left out, so the includes
inside an `#if !defined(IZWI_SEPARATE_COMPILATION)` block are not followed from
outside (the strict reading, as the compiled check's).

Names not in NAMES_BY_HEADER are not checked (std::size_t and the like come with
nearly every header; std::move and std::swap with <utility>, which every
container brings). Add a name when a gap in it is found.

Usage: check_std_includes.py INCLUDE_DIR [--stamp FILE]
Exit 1 with one line per gap, file:line: std::X needs <H>.
"""
import re
import sys
from pathlib import Path

# What each standard header declares, of the names izwi uses (see above for
# what is left out).
NAMES_BY_HEADER = {
    "vector": "vector",
    "array": "array",
    "deque": "deque",
    "queue": "queue priority_queue",
    "map": "map multimap",
    "set": "set",
    "unordered_map": "unordered_map",
    "unordered_set": "unordered_set",
    "span": "span",
    "string_view": "string_view",
    "list": "list",
    "bitset": "bitset",
    "initializer_list": "initializer_list",
    "string": "string to_string stoi stol stoul stoull stof stod",
    "charconv": "from_chars to_chars chars_format",
    "sstream": "ostringstream istringstream stringstream",
    "fstream": "ifstream ofstream fstream",
    "cctype": "isspace isdigit isalpha isalnum tolower toupper isxdigit",
    "cstring": "memcpy memset memcmp memmove strlen strerror strcmp strncmp",
    "cstdio": "snprintf fprintf printf fopen fclose fread fwrite FILE fflush puts fputs",
    "cstdlib": "getenv abort strtol strtoul strtod strtof exit free malloc aligned_alloc",
    "memory": ("unique_ptr shared_ptr weak_ptr make_unique make_shared enable_shared_from_this allocator "
        "addressof destroy_at construct_at uninitialized_copy"),
    "optional": "optional nullopt nullopt_t",
    "variant": "variant visit holds_alternative get_if monostate",
    "tuple": "tuple make_tuple tie apply",
    "utility": ("pair make_pair exchange in_place in_place_type index_sequence make_index_sequence "
        "integer_sequence"),
    "functional": "function invoke reference_wrapper ref cref bind_front less greater equal_to hash",
    "any": "any",
    "algorithm": ("min max clamp minmax sort stable_sort partial_sort nth_element find find_if find_if_not "
        "count count_if copy copy_n copy_if fill fill_n transform reverse rotate unique remove_if "
        "all_of any_of none_of equal lower_bound upper_bound binary_search max_element "
        "min_element minmax_element mismatch search lexicographical_compare for_each generate "
        "shuffle is_sorted push_heap pop_heap make_heap"),
    "numeric": ("accumulate iota inner_product reduce partial_sum gcd lcm exclusive_scan inclusive_scan "
        "midpoint"),
    "limits": "numeric_limits",
    "cmath": ("sqrt exp log pow fabs floor ceil round lround llround isnan isinf isfinite tanh sin cos "
        "atan2 log10 log2 exp2 erf nearbyint fmod hypot log1p expm1 copysign trunc signbit frexp "
        "ldexp abs"),
    "complex": "complex",
    "bit": ("bit_cast popcount countl_zero countr_zero bit_width has_single_bit bit_ceil bit_floor "
        "rotl endian"),
    "random": ("mt19937 mt19937_64 uniform_real_distribution uniform_int_distribution "
        "normal_distribution discrete_distribution random_device generate_canonical"),
    "iterator": ("back_inserter distance next prev advance istreambuf_iterator ostreambuf_iterator "
        "make_move_iterator reverse_iterator"),
    "type_traits": ("is_same_v is_same enable_if_t remove_cvref_t decay_t conditional_t "
        "is_trivially_copyable_v is_integral_v is_floating_point_v integral_constant true_type "
        "false_type underlying_type_t invoke_result_t is_invocable_v "
        "is_nothrow_move_constructible_v remove_reference_t is_const_v is_enum_v add_const_t "
        "is_constant_evaluated is_signed_v is_unsigned_v make_unsigned_t"),
    "concepts": ("same_as convertible_to derived_from integral floating_point invocable regular_invocable "
        "movable copyable default_initializable destructible predicate unsigned_integral "
        "signed_integral equality_comparable totally_ordered constructible_from "
        "move_constructible semiregular regular assignable_from"),
    "stdexcept": ("runtime_error invalid_argument out_of_range logic_error length_error overflow_error "
        "range_error domain_error"),
    "exception": ("exception exception_ptr current_exception rethrow_exception make_exception_ptr terminate "
        "uncaught_exceptions"),
    "system_error": "error_code system_error system_category generic_category errc",
    "new": "bad_alloc nothrow align_val_t launder hardware_destructive_interference_size",
    "thread": "thread jthread",
    "stop_token": "stop_token stop_source",
    "mutex": "mutex recursive_mutex lock_guard unique_lock scoped_lock once_flag call_once",
    "shared_mutex": "shared_mutex shared_lock",
    "condition_variable": "condition_variable condition_variable_any",
    "atomic": ("atomic atomic_flag memory_order_relaxed memory_order_acquire memory_order_release "
        "memory_order_acq_rel memory_order_seq_cst memory_order atomic_thread_fence"),
    "future": "future promise async packaged_task",
    "csignal": "sig_atomic_t signal raise",
    "ctime": "time_t tm gmtime_r strftime clock",
    "source_location": "source_location",
}
# Names another header declares too: any of them will do. The ordered
# containers' default Compare is std::less, so <map> and <set> declare it.
ALSO_DECLARED_BY = {"less": ("map", "set")}

STD_HEADER = {name: (header,) + ALSO_DECLARED_BY.get(name, ())
              for header, names in NAMES_BY_HEADER.items() for name in names.split()}
# A std:: namespace that names its header wherever it is used.
STD_NAMESPACE = {"chrono": ("chrono",), "filesystem": ("filesystem",), "numbers": ("numbers",),
                 "this_thread": ("thread",), "placeholders": ("functional",),
                 "ranges": None, "views": None, "pmr": None}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
MODE_BLOCK = re.compile(r'^\s*#\s*(if\s*!\s*defined|ifndef)\s*\(?\s*IZWI_SEPARATE_COMPILATION')
STD_USE = re.compile(r'\bstd::(\w+)')
COMMENT_OR_STRING = re.compile(
    r'//[^\n]*|/\*.*?\*/|R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
    re.S)


def blank(match):
    """Keeps line numbers: a comment or literal becomes its newlines."""
    return "\n" * match.group(0).count("\n")


class Header:
    def __init__(self, path, rel):
        self.rel = rel
        self.std = set()              # standard headers included here
        self.izwi = []                # (izwi header, inside a mode block)
        depth = 0                     # #if nesting inside a mode block; 0 = outside
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if depth == 0 and MODE_BLOCK.match(line):
                depth = 1
                continue
            if depth:
                if re.match(r'^\s*#\s*if', line):
                    depth += 1
                elif re.match(r'^\s*#\s*endif', line):
                    depth -= 1
                    if depth == 0:
                        continue
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(2)
            if name.startswith("izwi/"):
                self.izwi.append((name, depth > 0))
            elif "/" not in name and "." not in name:
                self.std.add(name)
        code = COMMENT_OR_STRING.sub(blank, text)
        self.uses = []                # (line, name, the headers that declare it)
        for number, line in enumerate(code.splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            for m in STD_USE.finditer(line):
                name = m.group(1)
                declared_by = STD_NAMESPACE[name] if name in STD_NAMESPACE else STD_HEADER.get(name)
                if declared_by:
                    self.uses.append((number, name, declared_by))


def main(argv):
    root = Path(argv[1])
    stamp = argv[3] if len(argv) > 3 and argv[2] == "--stamp" else None
    headers = {str(p.relative_to(root)): Header(p, str(p.relative_to(root)))
               for p in sorted(root.glob("izwi/**/*.hpp"))}

    # The body a header includes (impl/) sees that header's includes.
    includer_of = {}
    for h in headers.values():
        for name, _ in h.izwi:
            if "/impl/" in name:
                includer_of.setdefault(name, h.rel)

    memo = {}

    def reachable(rel, stack=()):
        """Standard headers reachable from rel through izwi includes, bodies
        in mode blocks left out."""
        if rel in memo:
            return memo[rel]
        if rel in stack or rel not in headers:
            return set()
        seen = set(headers[rel].std)
        for name, in_mode_block in headers[rel].izwi:
            if not in_mode_block:
                seen |= reachable(name, stack + (rel,))
        memo[rel] = seen
        return seen

    gaps = []
    for rel, h in headers.items():
        visible = set(reachable(rel))
        includer = includer_of.get(rel)
        while includer:
            visible |= reachable(includer)
            includer = includer_of.get(includer)
        reported = set()
        for line, name, declared_by in h.uses:
            if visible.isdisjoint(declared_by) and name not in reported:
                reported.add(name)
                wanted = " or ".join(f"<{c}>" for c in declared_by)
                gaps.append(f"{root / rel}:{line}: std::{name} needs {wanted}")
    for gap in gaps:
        print(gap)
    if gaps:
        print(f"check_std_includes: {len(gaps)} gap(s); include the named header "
              "where the name is used", file=sys.stderr)
        return 1
    if stamp:
        Path(stamp).write_text("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

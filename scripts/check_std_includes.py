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

Names not in STD_HEADER are not checked (std::size_t and the like come with
nearly every header; std::move and std::swap with <utility>, which every
container brings). Add a name when a gap in it is found.

Usage: check_std_includes.py INCLUDE_DIR [--stamp FILE]
Exit 1 with one line per gap, file:line: std::X needs <H>.
"""
import re
import sys
from pathlib import Path

STD_HEADER = {
    # containers and views
    "vector": "vector", "array": "array", "deque": "deque", "queue": "queue",
    "priority_queue": "queue", "map": "map", "multimap": "map", "set": "set",
    "unordered_map": "unordered_map", "unordered_set": "unordered_set",
    "span": "span", "string_view": "string_view", "list": "list",
    "bitset": "bitset", "initializer_list": "initializer_list",
    # strings and text
    "string": "string", "to_string": "string", "stoi": "string", "stol": "string",
    "stoul": "string", "stoull": "string", "stof": "string", "stod": "string",
    "from_chars": "charconv", "to_chars": "charconv", "chars_format": "charconv",
    "ostringstream": "sstream", "istringstream": "sstream", "stringstream": "sstream",
    "ifstream": "fstream", "ofstream": "fstream", "fstream": "fstream",
    "isspace": "cctype", "isdigit": "cctype", "isalpha": "cctype", "isalnum": "cctype",
    "tolower": "cctype", "toupper": "cctype", "isxdigit": "cctype",
    "memcpy": "cstring", "memset": "cstring", "memcmp": "cstring", "memmove": "cstring",
    "strlen": "cstring", "strerror": "cstring", "strcmp": "cstring", "strncmp": "cstring",
    "snprintf": "cstdio", "fprintf": "cstdio", "printf": "cstdio", "fopen": "cstdio",
    "fclose": "cstdio", "fread": "cstdio", "fwrite": "cstdio", "FILE": "cstdio",
    "fflush": "cstdio", "puts": "cstdio", "fputs": "cstdio",
    "getenv": "cstdlib", "abort": "cstdlib", "strtol": "cstdlib", "strtoul": "cstdlib",
    "strtod": "cstdlib", "strtof": "cstdlib", "exit": "cstdlib", "free": "cstdlib",
    "malloc": "cstdlib", "aligned_alloc": "cstdlib",
    # memory and utilities
    "unique_ptr": "memory", "shared_ptr": "memory", "weak_ptr": "memory",
    "make_unique": "memory", "make_shared": "memory", "enable_shared_from_this": "memory",
    "allocator": "memory", "addressof": "memory", "destroy_at": "memory",
    "construct_at": "memory", "uninitialized_copy": "memory",
    "optional": "optional", "nullopt": "optional", "nullopt_t": "optional",
    "variant": "variant", "visit": "variant", "holds_alternative": "variant",
    "get_if": "variant", "monostate": "variant",
    "tuple": "tuple", "make_tuple": "tuple", "tie": "tuple", "apply": "tuple",
    "pair": "utility", "make_pair": "utility", "exchange": "utility",
    "in_place": "utility", "in_place_type": "utility", "index_sequence": "utility",
    "make_index_sequence": "utility", "integer_sequence": "utility",
    "function": "functional", "invoke": "functional", "reference_wrapper": "functional",
    "ref": "functional", "cref": "functional", "bind_front": "functional",
    # the ordered containers' default Compare is std::less: <map> and <set> declare it
    "less": ("functional", "map", "set"), "greater": "functional", "equal_to": "functional",
    "hash": "functional",
    "any": "any",
    # algorithms and numerics
    "min": "algorithm", "max": "algorithm", "clamp": "algorithm", "minmax": "algorithm",
    "sort": "algorithm", "stable_sort": "algorithm", "partial_sort": "algorithm",
    "nth_element": "algorithm", "find": "algorithm", "find_if": "algorithm",
    "find_if_not": "algorithm", "count": "algorithm", "count_if": "algorithm",
    "copy": "algorithm", "copy_n": "algorithm", "copy_if": "algorithm",
    "fill": "algorithm", "fill_n": "algorithm", "transform": "algorithm",
    "reverse": "algorithm", "rotate": "algorithm", "unique": "algorithm",
    "remove_if": "algorithm", "all_of": "algorithm", "any_of": "algorithm",
    "none_of": "algorithm", "equal": "algorithm", "lower_bound": "algorithm",
    "upper_bound": "algorithm", "binary_search": "algorithm", "max_element": "algorithm",
    "min_element": "algorithm", "minmax_element": "algorithm", "mismatch": "algorithm",
    "search": "algorithm", "lexicographical_compare": "algorithm", "for_each": "algorithm",
    "generate": "algorithm", "shuffle": "algorithm", "is_sorted": "algorithm",
    "push_heap": "algorithm", "pop_heap": "algorithm", "make_heap": "algorithm",
    "accumulate": "numeric", "iota": "numeric", "inner_product": "numeric",
    "reduce": "numeric", "partial_sum": "numeric", "gcd": "numeric", "lcm": "numeric",
    "exclusive_scan": "numeric", "inclusive_scan": "numeric", "midpoint": "numeric",
    "numeric_limits": "limits",
    "sqrt": "cmath", "exp": "cmath", "log": "cmath", "pow": "cmath", "fabs": "cmath",
    "floor": "cmath", "ceil": "cmath", "round": "cmath", "lround": "cmath",
    "llround": "cmath", "isnan": "cmath", "isinf": "cmath", "isfinite": "cmath",
    "tanh": "cmath", "sin": "cmath", "cos": "cmath", "atan2": "cmath", "log10": "cmath",
    "log2": "cmath", "exp2": "cmath", "erf": "cmath", "nearbyint": "cmath",
    "fmod": "cmath", "hypot": "cmath", "log1p": "cmath", "expm1": "cmath",
    "copysign": "cmath", "trunc": "cmath", "signbit": "cmath", "frexp": "cmath",
    "ldexp": "cmath", "abs": "cmath",
    "complex": "complex", "bit_cast": "bit", "popcount": "bit", "countl_zero": "bit",
    "countr_zero": "bit", "bit_width": "bit", "has_single_bit": "bit",
    "bit_ceil": "bit", "bit_floor": "bit", "rotl": "bit", "endian": "bit",
    "mt19937": "random", "mt19937_64": "random", "uniform_real_distribution": "random",
    "uniform_int_distribution": "random", "normal_distribution": "random",
    "discrete_distribution": "random", "random_device": "random",
    "generate_canonical": "random",
    # iterators, ranges, types
    "back_inserter": "iterator", "distance": "iterator", "next": "iterator",
    "prev": "iterator", "advance": "iterator", "istreambuf_iterator": "iterator",
    "ostreambuf_iterator": "iterator", "make_move_iterator": "iterator",
    "reverse_iterator": "iterator",
    "is_same_v": "type_traits", "is_same": "type_traits", "enable_if_t": "type_traits",
    "remove_cvref_t": "type_traits", "decay_t": "type_traits", "conditional_t": "type_traits",
    "is_trivially_copyable_v": "type_traits", "is_integral_v": "type_traits",
    "is_floating_point_v": "type_traits", "integral_constant": "type_traits",
    "true_type": "type_traits", "false_type": "type_traits", "underlying_type_t": "type_traits",
    "invoke_result_t": "type_traits", "is_invocable_v": "type_traits",
    "is_nothrow_move_constructible_v": "type_traits", "remove_reference_t": "type_traits",
    "is_const_v": "type_traits", "is_enum_v": "type_traits", "add_const_t": "type_traits",
    "is_constant_evaluated": "type_traits", "is_signed_v": "type_traits",
    "is_unsigned_v": "type_traits", "make_unsigned_t": "type_traits",
    "same_as": "concepts", "convertible_to": "concepts", "derived_from": "concepts",
    "integral": "concepts", "floating_point": "concepts", "invocable": "concepts",
    "regular_invocable": "concepts", "movable": "concepts", "copyable": "concepts",
    "default_initializable": "concepts", "destructible": "concepts",
    "predicate": "concepts", "unsigned_integral": "concepts", "signed_integral": "concepts",
    "equality_comparable": "concepts", "totally_ordered": "concepts",
    "constructible_from": "concepts", "move_constructible": "concepts",
    "semiregular": "concepts", "regular": "concepts", "assignable_from": "concepts",
    # errors
    "runtime_error": "stdexcept", "invalid_argument": "stdexcept",
    "out_of_range": "stdexcept", "logic_error": "stdexcept", "length_error": "stdexcept",
    "overflow_error": "stdexcept", "range_error": "stdexcept", "domain_error": "stdexcept",
    "exception": "exception", "exception_ptr": "exception", "current_exception": "exception",
    "rethrow_exception": "exception", "make_exception_ptr": "exception",
    "terminate": "exception", "uncaught_exceptions": "exception",
    "error_code": "system_error", "system_error": "system_error",
    "system_category": "system_error", "generic_category": "system_error", "errc": "system_error",
    "bad_alloc": "new", "nothrow": "new", "align_val_t": "new", "launder": "new",
    "hardware_destructive_interference_size": "new",
    # threads and time
    "thread": "thread", "jthread": "thread", "stop_token": "stop_token",
    "stop_source": "stop_token",
    "mutex": "mutex", "recursive_mutex": "mutex", "lock_guard": "mutex",
    "unique_lock": "mutex", "scoped_lock": "mutex", "once_flag": "mutex", "call_once": "mutex",
    "shared_mutex": "shared_mutex", "shared_lock": "shared_mutex",
    "condition_variable": "condition_variable", "condition_variable_any": "condition_variable",
    "atomic": "atomic", "atomic_flag": "atomic", "memory_order_relaxed": "atomic",
    "memory_order_acquire": "atomic", "memory_order_release": "atomic",
    "memory_order_acq_rel": "atomic", "memory_order_seq_cst": "atomic",
    "memory_order": "atomic", "atomic_thread_fence": "atomic",
    "future": "future", "promise": "future", "async": "future", "packaged_task": "future",
    "sig_atomic_t": "csignal", "signal": "csignal", "raise": "csignal",
    "time_t": "ctime", "tm": "ctime", "gmtime_r": "ctime", "strftime": "ctime",
    "clock": "ctime",
    "source_location": "source_location",
}
# A std:: namespace that names its header wherever it is used.
STD_NAMESPACE = {"chrono": "chrono", "filesystem": "filesystem", "numbers": "numbers",
                 "this_thread": "thread", "ranges": None, "views": None, "pmr": None,
                 "placeholders": "functional"}

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
        self.uses = []                # (line, name, header)
        for number, line in enumerate(code.splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            for m in STD_USE.finditer(line):
                name = m.group(1)
                if name in STD_NAMESPACE:
                    header = STD_NAMESPACE[name]
                else:
                    header = STD_HEADER.get(name)
                if header:
                    self.uses.append((number, name, header))


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
        for line, name, header in h.uses:
            choices = (header,) if isinstance(header, str) else header
            if visible.isdisjoint(choices) and name not in reported:
                reported.add(name)
                wanted = " or ".join(f"<{c}>" for c in choices)
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

#pragma once
// The template bodies of include/izwi/io/config.hpp, in every mode; the rest
// is in config.ipp.

#include <cmath>
#include <concepts>
#include <limits>
#include <type_traits>
#include <utility>

namespace izwi::io {

namespace detail {

template <class T>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};

template <class T>
std::string integer_type_name() {
  return std::string(std::is_signed_v<T> ? "int" : "uint") + std::to_string(8 * sizeof(T));
}

}  // namespace detail

template <class T>
T ConfigView::convert(const JsonValue& value, std::string_view key) const {
  const auto kind_problem = [&](std::string_view want) {
    return make_error(key, "is " + json_kind_phrase(value) + ", not " + std::string(want));
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_bool()) throw kind_problem("a boolean");
    return value.as_bool();
  } else if constexpr (std::is_integral_v<T>) {
    if (!value.is_number()) throw kind_problem("an integer");
    const std::optional<std::int64_t> integer = json_integer(value);
    if (!integer) {
      const double d = *json_number(value);
      // 1e6 or 1000000.0 in a config mean an integer; a fraction does not.
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
        const auto whole = static_cast<std::int64_t>(d);
        if (std::cmp_less(whole, std::numeric_limits<T>::min()) || std::cmp_greater(whole, std::numeric_limits<T>::max()))
          throw make_error(key, "value " + std::to_string(whole) + " is out of range for " + detail::integer_type_name<T>());
        return static_cast<T>(whole);
      }
      throw make_error(key, "is the number " + std::to_string(d) + ", not an integer");
    }
    const std::int64_t v = *integer;
    if (std::cmp_less(v, std::numeric_limits<T>::min()) || std::cmp_greater(v, std::numeric_limits<T>::max()))
      throw make_error(key, "value " + std::to_string(v) + " is out of range for " + detail::integer_type_name<T>());
    return static_cast<T>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number()) throw kind_problem("a number");
    const double d = *json_number(value);
    if constexpr (std::is_same_v<T, float>) {
      if (std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max()))
        throw make_error(key, "value " + std::to_string(d) + " is out of range for a float");
    }
    return static_cast<T>(d);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) throw kind_problem("a string");
    return std::string(*json_string(value));
  } else if constexpr (detail::is_std_vector<T>::value) {
    if (!value.is_array()) throw kind_problem("an array");
    T out;
    const JsonArray& array = value.as_array();
    out.reserve(array.size());
    for (std::size_t i = 0; i < array.size(); ++i)
      out.push_back(convert<typename T::value_type>(array[i], std::string(key) + "[" + std::to_string(i) + "]"));
    return out;
  } else {
    static_assert(sizeof(T) == 0, "ConfigView reads bool, integers, float, double, std::string and std::vector of those");
  }
}

template <class T>
T ConfigView::required(std::string_view key) const {
  const JsonValue* v = find(key);
  if (v == nullptr) throw make_error(key, "missing");
  if (v->is_null()) throw make_error(key, "is null, a value is required");
  return convert<T>(*v, key);
}

template <class T>
T ConfigView::optional(std::string_view key, T fallback) const {
  const JsonValue* v = find(key);
  if (v == nullptr || v->is_null()) return fallback;
  return convert<T>(*v, key);
}

template <class T>
std::optional<T> ConfigView::optional(std::string_view key) const {
  const JsonValue* v = find(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  return convert<T>(*v, key);
}

}  // namespace izwi::io

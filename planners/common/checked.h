#pragma once
// Checked integer arithmetic for sizes read from files and messages: a sum or product that does
// not fit is an input error (nine ops of 2^63-1 parameters), never a silent wrap.
#include <cstdint>
#include <optional>

namespace hippie::checked {

// std::nullopt when a + b does not fit T.
template <typename T>
std::optional<T> add(T a, T b) {
    T out;
    if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
    return out;
}

// std::nullopt when a * b does not fit T.
template <typename T>
std::optional<T> mul(T a, T b) {
    T out;
    if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
    return out;
}

}  // namespace hippie::checked

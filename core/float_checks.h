// Checks over float arrays on the hot path of every dense push.
#pragma once

#include <cstddef>
#include <span>

namespace psrt {

// How many of `v` are NaN or infinite (exponent bits all ones). Any alignment.
std::size_t count_non_finite(std::span<const float> v);

}  // namespace psrt

#pragma once
// Names in a layer's map of live tensors (layer.h) that are not Graph op names. LibTorch-free,
// so that the boundary derivation (runtime/boundaries.h) compiles without it.
#include <string>

namespace hippie::engine {

// Key of the step's input samples (token ids, images) in the live map of the first layer,
// and the one key chained layers pass along.
inline const std::string kDataKey = "data";
inline const std::string kChainKey = kDataKey;

}  // namespace hippie::engine

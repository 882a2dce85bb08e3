#pragma once
// Analysis windows for short-time Fourier transforms.

#include <cstddef>
#include <vector>

namespace izwi::audio {

/// Periodic windows repeat seamlessly when tiled (the DFT view: a length-N
/// periodic window is the first N points of a length-N+1 symmetric one); they
/// are what STFTs use, and what torch.hann_window gives by default. Symmetric
/// windows are what filter design (numpy.hanning) uses.
enum class WindowSymmetry { periodic, symmetric };

/// The Hann window w[n] = 0.5 - 0.5 * cos(2*pi*n / D), with D = length for a
/// periodic window and D = length - 1 for a symmetric one; computed in double
/// and rounded once. Matches torch.hann_window(length, periodic=...) to float
/// rounding. A window of length 1 is {1}; of length 0, empty. Real is float
/// or double (hann_window<double>(400) for double-precision frontends).
template <class Real = float>
std::vector<Real> hann_window(std::size_t length, WindowSymmetry symmetry = WindowSymmetry::periodic);

}  // namespace izwi::audio

#include <izwi/audio/impl/window.hpp>

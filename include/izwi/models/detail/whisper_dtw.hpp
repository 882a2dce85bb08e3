#pragma once
// The numeric steps of word alignment (openai-whisper's find_alignment):
// standardising the alignment heads' attention, the median filter along
// time, and dynamic time warping of text tokens against audio positions.
// Matrices are row-major float arrays: rows are tokens, columns audio positions.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "izwi/core/error.hpp"

namespace izwi::detail::whisper {

/// Each column of x [rows][cols] minus its mean, divided by its standard
/// deviation (population, over the rows): a head's attention to one audio
/// position, relative to the other tokens'. A column with no spread becomes 0
/// (torch would divide by zero).
inline void standardize_columns(float* x, std::size_t rows, std::size_t cols) {
  for (std::size_t c = 0; c < cols; ++c) {
    double sum = 0, squares = 0;
    for (std::size_t r = 0; r < rows; ++r) sum += x[r * cols + c];
    const double mean = sum / static_cast<double>(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      const double d = x[r * cols + c] - mean;
      squares += d * d;
    }
    const double deviation = std::sqrt(squares / static_cast<double>(rows));
    for (std::size_t r = 0; r < rows; ++r)
      x[r * cols + c] = deviation > 0 ? static_cast<float>((x[r * cols + c] - mean) / deviation) : 0.0f;
  }
}

/// Median of each window of `width` (odd) values along every row of x
/// [rows][cols], the row extended at both ends by reflection (…c b | a b c …,
/// the edge not repeated). Rows no longer than width / 2 are left as they are
/// (reflection needs more values than the padding).
inline void median_filter_rows(float* x, std::size_t rows, std::size_t cols, std::size_t width) {
  if (width == 0 || width % 2 == 0)
    throw izwi::invalid_argument("median_filter_width", "must be odd, is " + std::to_string(width));
  const std::size_t half = width / 2;
  if (half == 0 || cols <= half) return;
  std::vector<float> row(cols), window(width);
  const auto n = static_cast<std::ptrdiff_t>(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    float* out = x + r * cols;
    std::copy(out, out + cols, row.begin());
    for (std::ptrdiff_t c = 0; c < n; ++c) {
      for (std::size_t k = 0; k < width; ++k) {
        std::ptrdiff_t at = c + static_cast<std::ptrdiff_t>(k) - static_cast<std::ptrdiff_t>(half);
        if (at < 0) at = -at;
        if (at >= n) at = 2 * (n - 1) - at;
        window[k] = row[static_cast<std::size_t>(at)];
      }
      std::nth_element(window.begin(), window.begin() + static_cast<std::ptrdiff_t>(half), window.end());
      out[c] = window[half];
    }
  }
}

/// One step of a warping path: row (token) i matched with column (time) j.
struct DtwStep {
  std::size_t row = 0, column = 0;
};

/// The cheapest monotonic path through cost [rows][cols] from (0, 0) to
/// (rows - 1, cols - 1), each step moving down-right, down, or right.
/// Ties between predecessors go as openai-whisper's dtw_cpu breaks them: the
/// diagonal only when strictly cheapest, then "down" when strictly cheapest,
/// else "right"; at the edges the path runs along the first row and column.
/// Costs accumulate in float, as there.
inline std::vector<DtwStep> dtw_path(const float* cost, std::size_t rows, std::size_t cols) {
  if (rows == 0 || cols == 0) return {};
  enum : std::uint8_t { diagonal, down, right };
  const std::size_t w = cols + 1;
  std::vector<float> total((rows + 1) * w, std::numeric_limits<float>::infinity());
  std::vector<std::uint8_t> came_from((rows + 1) * w, right);
  total[0] = 0;
  for (std::size_t j = 1; j <= cols; ++j)
    for (std::size_t i = 1; i <= rows; ++i) {
      const float c0 = total[(i - 1) * w + j - 1], c1 = total[(i - 1) * w + j], c2 = total[i * w + j - 1];
      float best = c2;
      std::uint8_t from = right;
      if (c0 < c1 && c0 < c2) {
        best = c0;
        from = diagonal;
      } else if (c1 < c0 && c1 < c2) {
        best = c1;
        from = down;
      }
      total[i * w + j] = cost[(i - 1) * cols + j - 1] + best;
      came_from[i * w + j] = from;
    }
  // Every cell but the first row's and column's is reachable, so the walk
  // back leaves through (0, 0) (the first row goes right, the first column
  // only diagonally into the origin).
  std::vector<DtwStep> path;
  std::size_t i = rows, j = cols;
  while (i > 0 && j > 0) {
    path.push_back({i - 1, j - 1});
    const std::uint8_t from = came_from[i * w + j];
    if (from != right) --i;
    if (from != down) --j;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

/// For each row, the column where the path first reaches it (the path's
/// "jumps" into that row): a token's start, in audio positions.
inline std::vector<std::size_t> dtw_row_starts(std::span<const DtwStep> path, std::size_t rows) {
  std::vector<std::size_t> starts(rows, 0);
  std::vector<bool> seen(rows, false);
  for (const DtwStep& s : path)
    if (s.row < rows && !seen[s.row]) {
      seen[s.row] = true;
      starts[s.row] = s.column;
    }
  return starts;
}

}  // namespace izwi::detail::whisper

#include "core/workflow/resolution_rule.hpp"

#include <cfenv>
#include <cmath>
#include <numeric>

namespace headroom::workflow {

std::optional<std::pair<long long, long long>> resolution_sides(std::pair<int, int> ratio, double megapixels,
                                                                long long multiple, long long minimum) {
  const auto [w_ratio, h_ratio] = ratio;
  if (w_ratio <= 0 || h_ratio <= 0 || !(megapixels > 0) || megapixels > 1024 || multiple <= 0 || multiple > 4096 ||
      minimum < 0 || minimum > 16384)
    return std::nullopt;
  const double scale = std::sqrt(megapixels * 1024.0 * 1024.0 / (static_cast<double>(w_ratio) * h_ratio));
  // std::nearbyint rounds half to even under the default rounding mode, as Python's round() does.
  auto side = [&](int r) { return static_cast<long long>(std::nearbyint(r * scale / multiple)) * multiple; };
  long long width = side(w_ratio), height = side(h_ratio);
  if (width < minimum || height < minimum) {
    const long long step_w = multiple / std::gcd<long long>(w_ratio, multiple);
    const long long step_h = multiple / std::gcd<long long>(h_ratio, multiple);
    const long long k_step = std::lcm(step_w, step_h);
    const auto min_k = static_cast<long long>(std::ceil(std::max(static_cast<double>(minimum) / w_ratio,
                                                                 static_cast<double>(minimum) / h_ratio)));
    const long long k = (min_k + k_step - 1) / k_step * k_step;
    width = w_ratio * k;
    height = h_ratio * k;
  }
  if (width <= 0 || height <= 0) return std::nullopt;
  return std::make_pair(width, height);
}

}  // namespace headroom::workflow

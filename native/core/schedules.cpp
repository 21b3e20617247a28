#include "core/schedules.hpp"

#include <algorithm>
#include <cmath>

namespace rh::core {

namespace {
double log_features(std::int64_t n_features) {
    return std::log(static_cast<double>(std::max<std::int64_t>(n_features, 2)));
}
}  // namespace

double bandwidth(double tau, double bandwidth_scale, double weight_sum_after, std::int64_t n_features) {
    return std::min(bandwidth_scale / (std::sqrt(weight_sum_after) * log_features(n_features)), tau);
}

double lambda_level(Penalty penalty, double tau, double lambda_scale, double weight_sum_after,
                    std::int64_t n_features) {
    if (penalty != Penalty::l1) return 0.0;
    return lambda_scale * tau * std::sqrt(log_features(n_features) / weight_sum_after);
}

}  // namespace rh::core

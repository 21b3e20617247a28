// Engine<T>::partition_sums (partition_sums.hpp): the reference-order
// objective's data terms over one partition, at the caller's point.
#include <algorithm>
#include <cmath>

#include "core/invariants.hpp"
#include "core/status.hpp"
#include "cpu/engine.hpp"
#include "cpu/platform/blas_thread_lease.hpp"
#include "cpu/platform/finite_scan.hpp"
#include "cpu/reference/pairwise_sum.hpp"
#include "cpu/reference/surrogate_objective.hpp"

namespace rh::cpu {

namespace {

void check_point(double tau, double bandwidth) {
    if (!(std::isfinite(tau) && tau > 0.0))
        throw core::EngineError(core::Status::invalid_argument, "tau must be a positive finite number");
    if (!(std::isfinite(bandwidth) && bandwidth > 0.0))
        throw core::EngineError(core::Status::invalid_argument, "bandwidth must be a positive finite number");
}

template <class T>
void check_outputs(const PartitionSumsRequest& request, const PartitionSumsOutput<T>& out) {
    if ((request.score_product && out.score_product == nullptr) ||
        (request.curvature_gram && out.curvature_gram == nullptr) || (request.unit_gram && out.unit_gram == nullptr) ||
        (request.score_gram && out.score_gram == nullptr))
        throw core::EngineError(core::Status::invalid_argument, "every requested partition sum needs an output array");
}

}  // namespace

template <class T>
void Engine<T>::partition_sums(const core::BatchView<T>& design, const PartitionSumsPoint<T>& point,
                               const PartitionSumsRequest& request, PartitionSumsOutput<T>& out) {
    const std::int64_t n = design.rows, d = design.features;
    if (n < 0 || d < 1)
        throw core::EngineError(core::Status::invalid_argument, "the design must have at least one column");
    if (point.theta == nullptr) throw core::EngineError(core::Status::invalid_argument, "theta must not be null");
    check_point(point.tau, point.bandwidth);
    check_outputs(request, out);
    check_blas_sizes(n, d, "partition", "partitions");
    if (!all_finite(point.theta, d))
        throw core::EngineError(core::Status::invalid_argument, "theta must contain only finite values");
    const int threads = std::max(threads_.threads(), 1);
    const BlasThreadLease blas_lease(threads);
    if (design.sample_weight == nullptr) reserve_unit_weights(n);
    reference_buffers_.reserve(growth_, n, d, false);
    core::check_batch_values(
        design, [&] { return scan_rows(std::min(threads, kMaxParts), design.X, n, d, nullptr); },
        MultiversionFiniteness{}, /*positive_weight_sum=*/false);

    reference::SurrogateObjective<T> objective;
    objective.rows = n;
    objective.d = d;
    objective.design = design.X;
    objective.response = design.y;
    objective.weights = design.sample_weight != nullptr ? design.sample_weight : unit_weights_.data();
    objective.tau = static_cast<T>(point.tau);
    objective.bandwidth = static_cast<T>(point.bandwidth);
    objective.workspace = &reference_buffers_;

    const T* w = objective.weights;
    out.weight_sum = static_cast<double>(reference::pairwise_sum<T>(n, [=](std::int64_t i) { return w[i]; }));
    if (n == 0) {  // an empty partition adds nothing
        out.loss_sum = 0.0;
        if (request.score_product) std::fill(out.score_product, out.score_product + d, T(0));
        if (request.curvature_gram) std::fill(out.curvature_gram, out.curvature_gram + d * d, T(0));
        if (request.unit_gram) std::fill(out.unit_gram, out.unit_gram + d * d, T(0));
        if (request.score_gram) std::fill(out.score_gram, out.score_gram + d * d, T(0));
        return;
    }
    T* r = reference_buffers_.residual.data();
    if (request.loss || request.score_product || request.curvature_gram || request.score_gram)
        objective.residual(point.theta, r);
    out.loss_sum = request.loss ? static_cast<double>(objective.data_loss(r)) : 0.0;
    if (request.score_product) objective.score_product(r, out.score_product);
    if (request.curvature_gram) objective.weighted_gram(r, out.curvature_gram);
    if (request.unit_gram) objective.unit_gram(out.unit_gram);
    if (request.score_gram) objective.score_gram(r, out.score_gram);
}

template void Engine<float>::partition_sums(const core::BatchView<float>&, const PartitionSumsPoint<float>&,
                                            const PartitionSumsRequest&, PartitionSumsOutput<float>&);
template void Engine<double>::partition_sums(const core::BatchView<double>&, const PartitionSumsPoint<double>&,
                                             const PartitionSumsRequest&, PartitionSumsOutput<double>&);

}  // namespace rh::cpu

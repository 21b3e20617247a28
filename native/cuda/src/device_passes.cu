#include "device_passes.cuh"

#include <cstring>

#include "gram_kernels.cuh"
#include "huber_kernels.cuh"
#include "lamm_proposals.cuh"
#include "launch.cuh"
#include "row_products.cuh"
#include "vendor_calls.cuh"

namespace rh::cuda {

template <class T>
void DevicePasses<T>::send(const T* point, const PassInputs& inputs) {
    std::memcpy(host.upload(), point, sizeof(T) * d());
    *host.inputs() = inputs;
    launch_receive<T>(stream, host.inputs(), ws.inputs.data(), d(), host.upload(), ws.theta.data());
}

template <class T>
void DevicePasses<T>::send_constants() {
    BatchConstants<T>& values = *host.constants();
    values.terms = terms;
    values.X = batch.X;
    values.w = batch.w;
    values.tau = tau;
    values.h = h;
    RH_CUDA_CHECK(cudaMemcpyAsync(ws.constants.data(), &values, sizeof(BatchConstants<T>), cudaMemcpyHostToDevice,
                                  stream));
    constants_sent = true;
}

template <class T>
void DevicePasses<T>::send_trials() {
    launch_receive<T>(stream, nullptr, nullptr, host.upload_count(), host.upload(), ws.trial_inputs.data());
}

template <class T>
void DevicePasses<T>::publish(bool system_flags, const T* vector, const T* values, std::int64_t n2) {
    launch_publish<T>(stream, system_flags ? ws.system.data() : nullptr, host.record(), vector != nullptr ? d() : 0,
                      vector, host.vector(), n2, values, host.candidates());
}

template <class T>
void DevicePasses<T>::wait() {
    wait_for(nullptr);
}

template <class T>
void DevicePasses<T>::wait_for(cudaEvent_t event) {
    if (check.unlaunched()) {  // no pass launched it: on its own, before the wait
        launch_batch_check<T>(batch, p(), ws, check.host_sums, stream);
        check.launched = true;
        event = nullptr;  // the check comes after the event: the whole stream
    }
    RH_CUDA_CHECK(event != nullptr ? cudaEventSynchronize(event) : cudaStreamSynchronize(stream));
    ++syncs;
    if (check.pending()) {
        const double* sums = check.host_sums;
        check = DeferredCheck{};
        judge_batch_check(sums, batch.rows, batch.weighted);
    }
}

template <class T>
bool DevicePasses<T>::start(const T* point, bool check_values) {
    const T* intercept = terms.intercept ? point + p() : nullptr;
    if (p() <= kRowProductColumns) {  // Z point, the loss (and the check) in one read of the rows
        launch_start_rows<T>(stream, batch.rows, p(), batch.X, point, intercept, batch.y, batch.w, tau, ws.r.data(),
                             ws.partials.data(), check_values ? ws.partials.data() + blocks() : nullptr);
        return check_values;
    }
    vendor::rows_times(blas, static_cast<int>(batch.rows), static_cast<int>(p()), batch.X, point, ws.r.data());
    launch_start_residual<T>(stream, batch.rows, batch.y, batch.w, intercept, tau, ws.r.data(), ws.partials.data());
    return false;
}

template <class T>
void DevicePasses<T>::point_pass() {
    if (start(ws.theta.data(), check.unlaunched())) {  // the check's sums behind the pass, for the wait to judge
        send_check_sums(ws.partials.data() + blocks(), blocks(), ws, check.host_sums, stream);
        check.launched = true;
    }
    launch_point_memory<T>(stream, terms, ws.theta.data(), 1, PassLosses{ws.partials.data(), blocks(), 1},
                           &record()->point_loss, &record()->point_memory, ws.grid_scratch());
}

template <class T>
void DevicePasses<T>::score(bool curvature) {
    const PassInputs* inputs = ws.inputs.data();
    const ResidualAdvance<T> advance{ws.dz.data(), &inputs->t, ws.trial_residuals.data(), &inputs->trial};
    launch_score_rows<T>(stream, batch.rows, advance, batch.w, tau, h, ws.r.data(), ws.s.data(),
                         curvature ? ws.c.data() : nullptr, ws.partials.data());
    if (curvature) weighted_gram(ws.c.data(), ws.G.data());
}

template <class T>
ScoreSums DevicePasses<T>::direction_scores() {
    if (d() > kNarrowGram) {
        score(true);
        score_products();
        return {ws.partials.data(), blocks()};
    }
    const PassInputs* inputs = ws.inputs.data();
    const ResidualAdvance<T> advance{ws.dz.data(), &inputs->t, ws.trial_residuals.data(), &inputs->trial};
    launch_narrow_score_gram<T>(stream, batch.rows, p(), terms.intercept, batch.X, advance, batch.w, tau, h,
                                ws.r.data(), ws.gram_partials.data(), ws.G.data(), ws.product.data(),
                                ws.partials.data(), batch_constants());
    return {ws.partials.data(), 1};
}

template <class T>
void DevicePasses<T>::score_products() {
    vendor::transposed_times(blas, static_cast<int>(batch.rows), static_cast<int>(p()), batch.X, ws.s.data(),
                             ws.product.data());
}

template <class T>
void DevicePasses<T>::weighted_gram(const T* weights, T* G) {
    if (d() <= kNarrowGram) {  // the Gram from X and the weights directly
        launch_narrow_gram<T>(stream, batch.rows, p(), terms.intercept, batch.X, weights, ws.gram_partials.data(), G);
        return;
    }
    launch_weighted_rows<T>(stream, batch.rows, p(), terms.intercept, batch.X, weights, ws.weighted_rows.data());
    vendor::gram(blas, static_cast<int>(batch.rows), static_cast<int>(d()), ws.weighted_rows.data(), G);
}

template <class T>
void DevicePasses<T>::halving_pass() {
    const T* intercept_step = terms.intercept ? ws.step.data() + p() : nullptr;
    if (p() <= kRowProductColumns) {  // Z step and the losses in one read of the rows
        launch_step_line_search<T>(stream, batch.rows, p(), batch.X, ws.step.data(), intercept_step, ws.r.data(),
                                   batch.w, tau, ws.dz.data(), ws.partials.data(), batch_constants());
    } else {
        vendor::rows_times(blas, static_cast<int>(batch.rows), static_cast<int>(p()), batch.X, ws.step.data(),
                           ws.dz.data());
        launch_line_search_losses<T>(stream, batch.rows, ws.r.data(), ws.dz.data(), intercept_step, batch.w, tau,
                                     ws.partials.data());
    }
    launch_search_memory<T>(stream, terms, ws.theta.data(), ws.step.data(), 1.0, -1, kLineSearchSteps,
                            ws.points.data(), PassLosses{ws.partials.data(), blocks(), kLineSearchSteps}, record(),
                            ws.grid_scratch(), terms_in(batch_constants()));
}

template <class T>
void DevicePasses<T>::doubling_pass() {
    launch_doubling_losses<T>(stream, batch.rows, ws.r.data(), ws.dz.data(), batch.w, tau, ws.partials.data());
    launch_search_memory<T>(stream, terms, ws.theta.data(), ws.step.data(), 2.0, 1, kDoublingSteps,
                            ws.points.data(), PassLosses{ws.partials.data(), blocks(), kDoublingSteps}, record(),
                            ws.grid_scratch());
}

template <class T>
void DevicePasses<T>::propose_trials(const T* mask, double lambda_value) {
    launch_lamm_proposals<T>(stream, d(), p(), terms.intercept, ws.theta.data(), ws.gradient.data(), mask,
                             lambda_value, &ws.inputs.data()->phi, ws.trial_candidates(), ws.trial_feature_changes(d()),
                             ws.trial_intercept_changes(p(), d()));
}

template <class T>
void DevicePasses<T>::lamm_trial_pass() {
    constexpr int K = kLammTrialsPerPass;
    const T* intercept_changes = terms.intercept ? ws.trial_intercept_changes(p(), d()) : nullptr;
    if (p() <= kRowProductColumns) {  // X Delta and the trials in one read of the rows
        launch_lamm_trial_rows<T>(stream, batch.rows, p(), batch.X, ws.trial_feature_changes(d()), intercept_changes,
                                  ws.r.data(), batch.w, tau, ws.trial_residuals.data(), ws.partials.data());
    } else {
        vendor::rows_times_matrix(blas, static_cast<int>(batch.rows), static_cast<int>(p()), K, batch.X,
                                  ws.trial_feature_changes(d()), ws.trial_products.data());
        launch_lamm_trials<T>(stream, batch.rows, K, ws.r.data(), ws.trial_products.data(), intercept_changes, batch.w,
                              tau, ws.trial_residuals.data(), ws.partials.data());
    }
    launch_point_memory<T>(stream, terms, ws.trial_candidates(), K, PassLosses{ws.partials.data(), blocks(), K},
                           record()->losses, record()->memory, ws.grid_scratch());
}

template <class T>
void DevicePasses<T>::close() {
    score(true);  // r_hat: the last accepted move applied; c and the Gram there
    launch_information_update<T>(stream, d(), terms.information, ws.G.data(), ws.J_next.data());
    RH_CUDA_CHECK(cudaMemcpyAsync(ws.theta_next.data(), ws.theta.data(), sizeof(T) * d(), cudaMemcpyDeviceToDevice,
                                  stream));
}

template <class T>
void DevicePasses<T>::close_meat() {
    start(ws.theta_next.data());  // r_hat = y - Z theta_hat (its loss partials unused)
    launch_meat_weights<T>(stream, batch.rows, ws.r.data(), batch.w, tau, ws.meat_weights.data());
    weighted_gram(ws.meat_weights.data(), ws.G.data());
    launch_information_update<T>(stream, d(), ws.meat_current.data(), ws.G.data(), ws.meat_next.data());
}

template struct DevicePasses<float>;
template struct DevicePasses<double>;

}  // namespace rh::cuda

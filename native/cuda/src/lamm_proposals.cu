#include "lamm_proposals.cuh"

#include "core/lamm_driver.hpp"
#include "core/soft_threshold.hpp"
#include "engine_internal.cuh"
#include "huber_kernels.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

template <class T>
__global__ void lamm_proposals_kernel(std::int64_t d, std::int64_t p, bool intercept, const T* theta,
                                      const T* gradient, const T* mask, double lambda_value, const double* first_phi,
                                      T* candidates, T* feature_changes, T* intercept_changes) {
    const int k = blockIdx.x;  // the trial: phi after k rejections
    double phi = *first_phi;
    for (int rejected = 0; rejected < k; ++rejected) phi = core::LammProposal<T>::next_phi(phi);
    for (std::int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        T candidate, change;
        core::lamm_proposal<T>(1, theta + j, gradient + j, mask + j, lambda_value, phi, &candidate, &change);
        candidates[j + k * d] = candidate;
        if (j < p) feature_changes[j + k * p] = change;
        else if (intercept) intercept_changes[k] = change;
    }
}

}  // namespace

template <class T>
void launch_lamm_proposals(cudaStream_t stream, std::int64_t d, std::int64_t p, bool intercept, const T* theta,
                           const T* gradient, const T* mask, double lambda_value, const double* phi, T* candidates,
                           T* feature_changes, T* intercept_changes) {
    lamm_proposals_kernel<T><<<kLammTrialsPerPass, kThreads, 0, stream>>>(
        d, p, intercept, theta, gradient, mask, lambda_value, phi, candidates, feature_changes, intercept_changes);
    RH_CUDA_LAUNCHED();
}

template void launch_lamm_proposals<float>(cudaStream_t, std::int64_t, std::int64_t, bool, const float*, const float*,
                                           const float*, double, const double*, float*, float*, float*);
template void launch_lamm_proposals<double>(cudaStream_t, std::int64_t, std::int64_t, bool, const double*,
                                            const double*, const double*, double, const double*, double*, double*,
                                            double*);

}  // namespace rh::cuda

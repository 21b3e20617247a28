// The reference-order evaluator for the LAMM driver (core/lamm_driver.hpp):
// NumPy's arithmetic, operation by operation (surrogate_objective.hpp).
#pragma once

#include <utility>

#include "core/lamm_driver.hpp"
#include "cpu/platform/blas_provider.hpp"
#include "cpu/reference/surrogate_objective.hpp"

namespace rh::cpu::reference {

template <class T>
class LammEvaluator {
public:
    explicit LammEvaluator(const SurrogateObjective<T>& objective) : f_(objective), ws_(*objective.workspace) {}

    double start(const T* theta) {
        f_.residual(theta, ws_.residual.data());
        return f_.value(theta, ws_.residual.data());
    }
    // The reference recomputes a point's residual as `y - Z @ theta`.
    double move_to(const T* theta, const T*) { return start(theta); }
    void gradient(const T* theta, T* g) { f_.gradient(theta, ws_.residual.data(), g); }
    double dot(const T* a, const T* b) const {
        return static_cast<double>(blas::dot(static_cast<blas::index_t>(f_.d), a, b));
    }
    double norm(const T* x) const { return reference_norm(f_.d, x); }
    double trial(const T* candidate, const T*, double, const core::LammProposal<T>&) {
        f_.residual(candidate, ws_.candidate_residual.data());
        return f_.value(candidate, ws_.candidate_residual.data());
    }
    void accept() { std::swap(ws_.residual, ws_.candidate_residual); }

private:
    const SurrogateObjective<T>& f_;
    ReferenceBuffers<T>& ws_;
};

}  // namespace rh::cpu::reference

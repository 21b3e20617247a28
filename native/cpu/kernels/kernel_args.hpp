// Argument structs of the fast path's kernels (fast_kernels.hpp,
// narrow_passes.hpp, local_model_kernels.hpp): a kernel takes one struct
// whose fields name what each pointer is, not a dozen positional pointers.
// Callers fill them with designated initializers.
#pragma once

#include <cstdint>

namespace rh::cpu::fast {

// The sums a scoring pass returns.
struct ScoreSums {
    double score_sum = 0.0;          // sum_i w_i score(r_i): the intercept's Z' s
    std::int64_t changed = 0;        // rows with c_i != the Gram's weight
    std::int64_t weighted_rows = 0;  // rows with c_i > 0

    ScoreSums& operator+=(const ScoreSums& other) {
        score_sum += other.score_sum;
        changed += other.changed;
        weighted_rows += other.weighted_rows;
        return *this;
    }
};

// The sums a LAMM trial pass returns.
struct TrialSums {
    double loss = 0.0;       // sum_i w_i loss(r_trial_i)
    double score_sum = 0.0;  // sum_i w_i score(r_trial_i)

    TrialSums& operator+=(const TrialSums& other) {
        loss += other.loss;
        score_sum += other.score_sum;
        return *this;
    }
};

// How a pass scores the residual it forms: s = w score(r) into `s`; with
// `c` also c = w kappa(r) (bandwidth h) and the counts of ScoreSums against
// `c_gram`, the weights the Gram currently represents.
template <class T>
struct RowScoring {
    const T* w = nullptr;
    T tau = T(1);
    T h = T(1);
    const T* c_gram = nullptr;
    T* s = nullptr;
    T* c = nullptr;  // null: no curvature, no counts
};

// The rows [0, n) of one part of a narrow pass, as column panels
// (narrow_passes.hpp) of p features.
template <class T>
struct PanelRows {
    std::int64_t n = 0;
    std::int64_t p = 0;
    const T* panels = nullptr;
};

// ------------------------------------------------------------ row kernels

// Newton's full step over rows [0, n), given dz = X step[:p]: dz += b,
// r_next = r + dz, scored at r_next.
template <class T>
struct FullStepRows {
    std::int64_t n = 0;
    const T* r = nullptr;
    T* dz = nullptr;
    T b = T(0);
    T* r_next = nullptr;
    RowScoring<T> scoring;
};

// One LAMM trial over rows [0, n), given dz = X change[:p]:
// r_trial = r - (dz + b), s = w score(r_trial).
template <class T>
struct TrialRows {
    std::int64_t n = 0;
    const T* r = nullptr;
    const T* dz = nullptr;
    T b = T(0);
    const T* w = nullptr;
    T tau = T(1);
    T* r_trial = nullptr;
    T* s = nullptr;
};

// ---------------------------------------------------------- narrow passes

// Newton's full step: dz = x . step[:p] + b, r_next = r + dz, scored;
// product[:p] = X' s; *loss = sum w loss(r_next), summed as loss_sum sums.
template <class T>
struct StepPass {
    PanelRows<T> rows;
    const T* step = nullptr;
    T b = T(0);
    const T* r = nullptr;
    RowScoring<T> scoring;
    T* dz = nullptr;
    T* r_next = nullptr;
    T* product = nullptr;
    double* loss = nullptr;
};

// The start of a solve: r = y - (x . theta[:p] + b), scored; product = X' s.
template <class T>
struct ResidualPass {
    PanelRows<T> rows;
    const T* theta = nullptr;
    T b = T(0);
    const T* y = nullptr;
    RowScoring<T> scoring;
    T* r = nullptr;
    T* product = nullptr;
};

// Newton's damped step: r += t dz, scored; product = X' s.
template <class T>
struct AdvancePass {
    PanelRows<T> rows;
    T t = T(0);
    const T* dz = nullptr;
    T* r = nullptr;
    RowScoring<T> scoring;
    T* product = nullptr;
};

// A LAMM trial: r_trial = r - (x . change[:p] + b); product = X' s (skipped
// when null).
template <class T>
struct TrialPass {
    PanelRows<T> rows;
    const T* change = nullptr;
    T b = T(0);
    const T* r = nullptr;
    const T* w = nullptr;
    T tau = T(1);
    T* r_trial = nullptr;
    T* product = nullptr;
};

// Two LAMM trials in one read: the first without X' s (its loss into
// first_sums->loss), the second as TrialPass with X' s.
template <class T>
struct PairTrialPass {
    PanelRows<T> rows;
    const T* first_change = nullptr;
    T first_b = T(0);
    const T* second_change = nullptr;
    T second_b = T(0);
    const T* r = nullptr;
    const T* w = nullptr;
    T tau = T(1);
    T* r_first = nullptr;
    T* r_second = nullptr;
    T* product = nullptr;
    TrialSums* first_sums = nullptr;
};

// ------------------------------------------------------- local Huber model

// Rows [0, n) sorted into certain and uncertain ones for a model of the
// given reach (local_model_kernels.hpp).
template <class T>
struct LocalClassification {
    std::int64_t n = 0;
    const T* r = nullptr;
    const T* w = nullptr;
    const T* norms = nullptr;
    T tau = T(1);
    T reach = T(0);
    const T* c_gram = nullptr;
    T* c = nullptr;
    std::int64_t* index = nullptr;
    std::int64_t* changed = nullptr;
    std::int64_t* weighted = nullptr;
};

// The gathered uncertain rows: column j of row k at columns[j * stride + k],
// their residuals r0 and weights w0 at the anchor.
template <class T>
struct GatheredRows {
    std::int64_t m = 0;
    std::int64_t p = 0;
    bool intercept = true;
    T* columns = nullptr;
    std::int64_t stride = 0;
    T* r0 = nullptr;
    T* w0 = nullptr;
};

}  // namespace rh::cpu::fast

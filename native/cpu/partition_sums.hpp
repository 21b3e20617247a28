// A partition's share of one batch's data terms at given coefficients
// (ALGORITHM.md, "Smooth surrogate objective" and "Closing the batch"). With
// r = y - Z theta over the partition's rows:
//
//   loss_sum        sum_i w_i loss(r_i)           f's data term, times N
//   score_product   Z' (w * score(r))             grad f's data term, times -N
//   curvature_gram  Z' diag(w * kappa(r)) Z       H's data term and J_new - J_prev
//   unit_gram       Z' diag(w) Z                  the majorizer M's data term
//   score_gram      Z' diag(w * score(r)^2) Z     the meat's data term (amendment 0003)
//   weight_sum      sum_i w_i                     N - Wprev
//
// Every row-dependent term of the update is one of these summed over the
// batch's rows, so a batch split into partitions is solved by adding the
// partitions' sums: the driver's decisions need only these d and d x d
// quantities (the Dask parallel-batch mode, src/renewable_huber/dask.py).
// The sums are formed exactly as the reference-order path forms them for a
// whole batch (cpu/reference/surrogate_objective.hpp), so one partition
// holding the whole batch gives the reference's bits.
#pragma once

#include <cstdint>

namespace rh::cpu {

// Which terms to form (each costs a pass over the partition; the Grams
// O(rows d^2), the others O(rows d)).
struct PartitionSumsRequest {
    bool loss = false;
    bool score_product = false;
    bool curvature_gram = false;
    bool unit_gram = false;
    bool score_gram = false;
};

// Where the terms go: d entries, d x d row-major; each pointer must be
// non-null when its term is requested.
template <class T>
struct PartitionSumsOutput {
    double loss_sum = 0.0;
    double weight_sum = 0.0;
    T* score_product = nullptr;
    T* curvature_gram = nullptr;
    T* unit_gram = nullptr;
    T* score_gram = nullptr;
};

// The point and the schedules the terms are evaluated with.
template <class T>
struct PartitionSumsPoint {
    const T* theta = nullptr;  // d coefficients (intercept last when Z has its column)
    double tau = 0.0;
    double bandwidth = 0.0;  // h of the batch (only kappa uses it)
};

}  // namespace rh::cpu

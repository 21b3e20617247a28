#include "workspace.cuh"

#include <algorithm>

#include "gram_kernels.cuh"
#include "launch.cuh"

namespace rh::cuda {

template <class T>
void Workspace<T>::reserve_parameters(int device, std::int64_t p, std::int64_t d, bool block_solver,
                                      cudaStream_t stream) {
    constexpr std::int64_t K = kLammTrialsPerPass;
    ArenaLayout layout;
    for (auto* array : {&theta_current, &theta_next, &theta, &step, &gradient, &mask, &history}) layout.add(*array, d);
    for (auto* array : {&J_current, &J_next, &G, &H, &G_majorizer}) layout.add(*array, d * d);
    layout.add(product, p);
    layout.add(points, d * kPassPoints);
    layout.add(trial_inputs, (d + p + 1) * K);
    // (the point pass's loss and, behind it, the value check's sums: DevicePasses::point_pass)
    static_assert(kLineSearchSteps >= 1 + kBatchCheckSums, "partials hold a pass's loss and the check's sums");
    layout.add(partials, static_cast<std::int64_t>(kMaxBlocks) * kLineSearchSteps);
    layout.add(sums, kBatchCheckSums);
    if (d <= kNarrowGram) layout.add(gram_partials, narrow_gram_partials(d));
    layout.add(system, 1);
    layout.add(inputs, 1);
    layout.add(constants, 1);
    layout.add(pass_record, 1);
    layout.add(newton_loop, 1);
    layout.add(grid_values, grid_scratch_values(d));
    layout.add(grid_counters, kGridCounters);
    if (block_solver) {
        layout.add(block_matrices, block_solver_matrices(d));
        layout.add(block_vectors, block_solver_vectors(d));
        layout.add(block_score_sums, kBlockSolverGrid);
        layout.add(block_partials, block_solver_partials(d));
        layout.add(block_flags, kBlockSolverGrid);
        layout.add(outcome, 1);
    }
    // Once per engine (its constructor): a second call throws (the views would move).
    allocations_ += parameter_arena.place(device, layout);
    RH_CUDA_CHECK(cudaMemsetAsync(grid_counters.data(), 0, sizeof(unsigned) * kGridCounters, stream));
    // (the device-driven solve's replay copies the whole record, flags included, which it then overwrites)
    RH_CUDA_CHECK(cudaMemsetAsync(pass_record.data(), 0, sizeof(PassRecord), stream));
}

template <class T>
void Workspace<T>::reserve_rows(int device, std::int64_t n, std::int64_t p, std::int64_t d, bool host_batch,
                                bool unit_weights, cudaStream_t stream) {
    constexpr std::int64_t K = kLammTrialsPerPass;
    const RowLayout& placed = rows_placed_;
    if (n > placed.rows || (host_batch && !placed.host_batch) || (unit_weights && !placed.unit_weights)) {
        const RowLayout wanted{std::max(n, placed.rows), host_batch || placed.host_batch,
                               unit_weights || placed.unit_weights};
        // The old storage goes before the new one comes (a batch's work
        // arrays hold nothing to keep; freeing first keeps the peak at the
        // larger layout, not both): after an out-of-memory error the arena is
        // empty (its arrays reset) and the next batch places it again.
        row_arena.release();
        rows_placed_ = RowLayout{};
        ones_filled_ = 0;
        const std::int64_t rows = wanted.rows;
        ArenaLayout layout;
        if (wanted.host_batch) {
            layout.add(X, rows * p);
            layout.add(y, rows);
            layout.add(w, rows);
        }
        for (auto* array : {&r, &s, &c, &dz}) layout.add(*array, rows);
        if (d > kNarrowGram) layout.add(weighted_rows, rows * d);
        layout.add(trial_products, rows * K);
        layout.add(trial_residuals, rows * K);
        if (wanted.unit_weights) layout.add(ones, rows);
        allocations_ += row_arena.place(device, layout);
        rows_placed_ = wanted;
    }
    if (unit_weights && ones_filled_ < n) {
        launch_fill<T>(stream, ones.size(), T(1), ones.data());
        ones_filled_ = ones.size();
    }
}

template <class T>
void Workspace<T>::reserve_meat(int device, std::int64_t n, std::int64_t d) {
    for (auto* array : {&meat_current, &meat_next}) grow(*array, device, d * d);
    if (n > 0) grow(meat_weights, device, n);
}

template <class T>
void Workspace<T>::reserve_state_before(int device, std::int64_t d, bool meat) {
    grow(theta_before, device, d);
    grow(J_before, device, d * d);
    if (meat) grow(meat_before, device, d * d);
}

template <class T>
std::int64_t Workspace<T>::bytes() const noexcept {
    std::int64_t total = partials.bytes() + sums.bytes() + gram_partials.bytes() + system.bytes() + inputs.bytes() +
                         outcome.bytes() + block_score_sums.bytes() + block_partials.bytes() + block_flags.bytes() +
                         grid_values.bytes() + grid_counters.bytes() + pass_record.bytes() + newton_loop.bytes();
    for (const auto* array : {&theta_current, &theta_next, &J_current, &J_next, &X, &y, &w, &ones, &r, &s, &c, &dz,
                              &weighted_rows, &trial_products, &trial_residuals, &theta, &step, &gradient, &product,
                              &mask, &history, &points, &trial_inputs, &G, &H, &G_majorizer, &block_matrices,
                              &block_vectors, &meat_current, &meat_next, &meat_weights, &theta_before, &J_before,
                              &meat_before})
        total += array->bytes();
    return total;
}

template struct Workspace<float>;
template struct Workspace<double>;

}  // namespace rh::cuda

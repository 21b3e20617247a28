// Google Benchmark of the engine's kernels on one batch, beside the BLAS
// library's own SYRK/GEMM on the same matrix (PERFORMANCE.md: Gram time
// within 1.5x of the library's SYRK/GEMM).
//   native/build/bench/rh_engine_kernels_benchmark --benchmark_filter=...
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/batch_view.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "cpu/platform/blas_provider.hpp"
#include "cpu/engine.hpp"
#include "cpu/kernels/fast_kernels.hpp"
#include "cpu/kernels/narrow_gram.hpp"
#include "cpu/kernels/narrow_passes.hpp"
#include "cpu/solve_ladder.hpp"
#include "cpu/platform/staggered_allocator.hpp"
#include "cpu/reference/surrogate_objective.hpp"
#include "cpu/platform/blas_thread_lease.hpp"
#include "cpu/platform/thread_policy.hpp"

namespace {

// Buffers as the engine's workspace allocates them (on cache lines, at
// staggered page offsets), so kernel timings match the update's.
template <class T>
using Buffer = rh::cpu::StaggeredVector<T>;

template <class T>
struct Problem {
    std::int64_t n, d;
    Buffer<T> Z, y, w, r, theta, J, s, out, gram, weighted;
    rh::cpu::BufferGrowth growth;
    rh::cpu::reference::ReferenceBuffers<T> workspace;
    rh::cpu::SolveLadder<T> ladder;
    rh::cpu::reference::SurrogateObjective<T> objective;

    Problem(std::int64_t rows, std::int64_t features) : n(rows), d(features + 1) {
        std::mt19937_64 rng(7);
        std::normal_distribution<double> normal;
        Z.resize(n * d);
        for (std::int64_t i = 0; i < n; ++i) {
            for (std::int64_t j = 0; j + 1 < d; ++j) Z[i * d + j] = T(normal(rng));
            Z[i * d + d - 1] = T(1);
        }
        y.resize(n);
        r.resize(n);
        for (auto& v : y) v = T(normal(rng));
        r = y;
        w.assign(n, T(1));
        theta.assign(d, T(0));
        J.assign(d * d, T(0));
        s.assign(d, T(0));
        out.assign(n > d * d ? n : d * d, T(0));
        gram.assign(d * d, T(0));
        weighted.resize(n * d);
        for (std::int64_t i = 0; i < n * d; ++i) weighted[i] = Z[i] * T(0.5);
        workspace.reserve(growth, n, d, false);
        objective.rows = n;
        objective.d = d;
        objective.design = Z.data();
        objective.response = y.data();
        objective.weights = w.data();
        objective.theta_prev = theta.data();
        objective.information_prev = J.data();
        objective.history_direction = s.data();
        objective.weight_sum = T(n);
        objective.tau = T(1.345);
        objective.bandwidth = T(0.05);
        objective.workspace = &workspace;
    }

    // X (n x p, row-major): Z without its intercept column.
    Buffer<T> features_only() const {
        const std::int64_t p = d - 1;
        Buffer<T> X(n * p);
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < p; ++j) X[i * p + j] = Z[i * d + j];
        return X;
    }
};

template <class T>
void weighted_gram(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    for (auto _ : state) {
        p.objective.weighted_gram(p.r.data(), p.gram.data());
        benchmark::DoNotOptimize(p.gram.data());
    }
}

template <class T>
void blas_syrk(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    for (auto _ : state) {
        rh::cpu::blas::gram_upper(p.n, p.d, p.weighted.data(), p.gram.data());
        benchmark::DoNotOptimize(p.gram.data());
    }
}

template <class T>
void blas_gemm(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    for (auto _ : state) {
        rh::cpu::blas::gemm_transposed_left(p.n, p.d, p.Z.data(), p.weighted.data(), p.gram.data());
        benchmark::DoNotOptimize(p.gram.data());
    }
}

template <class T>
void residual(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    for (auto _ : state) {
        p.objective.residual(p.theta.data(), p.r.data());
        benchmark::DoNotOptimize(p.r.data());
    }
}

template <class T>
void objective_value(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    for (auto _ : state) benchmark::DoNotOptimize(p.objective.value(p.theta.data(), p.r.data()));
}

template <class T>
void gradient(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    for (auto _ : state) {
        p.objective.gradient(p.theta.data(), p.r.data(), p.out.data());
        benchmark::DoNotOptimize(p.out.data());
    }
}

// The fast path's full Gram: gather the sqrt(c)-scaled rows of [X, 1] (all
// rows weighted here) + SYRK; compare with blas_syrk on the gathered matrix.
template <class T>
void fast_gram_full(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    const std::int64_t features = p.d - 1;
    const Buffer<T> X = p.features_only();
    Buffer<T> c(p.n, T(1));
    rh::cpu::ThreadPolicy policy(static_cast<int>(state.range(2)));
    const rh::cpu::BlasThreadLease lease(policy.threads());
    for (auto _ : state) {
        const auto m = rh::cpu::fast::gather_weighted_rows(p.n, features, true, X.data(), c.data(), p.weighted.data());
        rh::cpu::blas::gram_upper(static_cast<rh::cpu::blas::index_t>(m), p.d, p.weighted.data(), p.gram.data());
        benchmark::DoNotOptimize(p.gram.data());
    }
}

// The fast path's Gram for narrow rows: in place, register tiles (cpu/narrow_gram.hpp).
template <class T>
void narrow_gram(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    const std::int64_t features = p.d - 1;
    const Buffer<T> X = p.features_only();
    Buffer<T> c(p.n, T(1));
    Buffer<T> scratch(rh::cpu::fast::narrow_gram_scratch_size(features));
    for (auto _ : state) {
        rh::cpu::fast::narrow_gram_accumulate(p.n, features, true, X.data(), c.data(), T(1), p.gram.data(),
                                              scratch.data());
        benchmark::DoNotOptimize(p.gram.data());
    }
}

// One LAMM trial over the narrow panels (cpu/narrow_passes.hpp), with the
// speculative X' s (range 2 = 1) or without it (0): the pass that dominates
// the latency class's "l1" update.
// The column panels of a benchmark problem's X.
template <class T>
Buffer<T> panels_of(const Problem<T>& p) {
    const std::int64_t features = p.d - 1;
    const Buffer<T> X = p.features_only();
    Buffer<T> panels(rh::cpu::fast::narrow_panel_size<T>(p.n, features));
    rh::cpu::fast::narrow_build_panels(p.n, features, X.data(), panels.data());
    return panels;
}

template <class T>
void narrow_trial_pass(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    const std::int64_t features = p.d - 1;
    const Buffer<T> panels = panels_of(p);
    Buffer<T> change(p.d, T(0.01)), r_trial(p.n), s(p.n), product(p.d);
    T* out = state.range(2) != 0 ? product.data() : nullptr;
    for (auto _ : state) {
        auto sums = rh::cpu::fast::narrow_trial_pass<T>({.rows = {p.n, features, panels.data()},
                                                         .change = change.data(),
                                                         .b = T(0.01),
                                                         .r = p.r.data(),
                                                         .w = p.w.data(),
                                                         .tau = T(1.345),
                                                         .r_trial = r_trial.data(),
                                                         .product = out});
        benchmark::DoNotOptimize(sums);
        benchmark::DoNotOptimize(product.data());
    }
}

// Two trials in one pass (the first without X' s), against the two passes.
template <class T>
void narrow_pair_trial_pass(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    const std::int64_t features = p.d - 1;
    const Buffer<T> panels = panels_of(p);
    Buffer<T> first(p.d, T(0.01)), second(p.d, T(0.005)), r_first(p.n), r_second(p.n), product(p.d);
    rh::cpu::fast::TrialSums first_sums;
    for (auto _ : state) {
        auto sums = rh::cpu::fast::narrow_pair_trial_pass<T>({.rows = {p.n, features, panels.data()},
                                                              .first_change = first.data(),
                                                              .first_b = T(0.01),
                                                              .second_change = second.data(),
                                                              .second_b = T(0.005),
                                                              .r = p.r.data(),
                                                              .w = p.w.data(),
                                                              .tau = T(1.345),
                                                              .r_first = r_first.data(),
                                                              .r_second = r_second.data(),
                                                              .product = product.data(),
                                                              .first_sums = &first_sums});
        benchmark::DoNotOptimize(sums);
        benchmark::DoNotOptimize(first_sums);
        benchmark::DoNotOptimize(product.data());
    }
}

// Building the panels from row-major X (once per update).
template <class T>
void narrow_build_panels(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    const std::int64_t features = p.d - 1;
    Buffer<T> X(p.n * features, T(0.5));
    Buffer<T> panels(rh::cpu::fast::narrow_panel_size<T>(p.n, features));
    for (auto _ : state) {
        rh::cpu::fast::narrow_build_panels(p.n, features, X.data(), panels.data());
        benchmark::DoNotOptimize(panels.data());
    }
}

template <class T>
void blas_syrk_threads(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    rh::cpu::ThreadPolicy policy(static_cast<int>(state.range(2)));
    const rh::cpu::BlasThreadLease lease(policy.threads());
    for (auto _ : state) {
        rh::cpu::blas::gram_upper(p.n, p.d, p.weighted.data(), p.gram.data());
        benchmark::DoNotOptimize(p.gram.data());
    }
}

// X v (rows x p) and X' s: the two GEMVs of every fast-path iteration.
template <class T>
void fast_matvec(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    rh::cpu::ThreadPolicy policy(static_cast<int>(state.range(2)));
    const rh::cpu::BlasThreadLease lease(policy.threads());
    const std::int64_t features = p.d - 1;
    Buffer<T> X(p.n * features, T(0.5));
    for (auto _ : state) {
        rh::cpu::blas::matvec(p.n, features, X.data(), p.theta.data(), p.out.data());
        benchmark::DoNotOptimize(p.out.data());
    }
}

template <class T>
void fast_matvec_transposed(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    rh::cpu::ThreadPolicy policy(static_cast<int>(state.range(2)));
    const rh::cpu::BlasThreadLease lease(policy.threads());
    const std::int64_t features = p.d - 1;
    Buffer<T> X(p.n * features, T(0.5));
    for (auto _ : state) {
        rh::cpu::blas::matvec_transposed(p.n, features, X.data(), p.y.data(), p.out.data());
        benchmark::DoNotOptimize(p.out.data());
    }
}

template <class T>
void fast_score_pass(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    Buffer<T> s(p.n), c(p.n), c_gram(p.n, T(1));
    for (auto _ : state) {
        auto sums = rh::cpu::fast::score_pass<T>(
            p.n, p.y.data(),
            {.w = p.w.data(), .tau = T(1.345), .h = T(0.01), .c_gram = c_gram.data(), .s = s.data(), .c = c.data()});
        benchmark::DoNotOptimize(sums);
    }
}

template <class T>
void fast_loss_sum(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    for (auto _ : state)
        benchmark::DoNotOptimize(
            rh::cpu::fast::loss_sum<T>(p.n, p.y.data(), p.r.data(), T(0.5), p.w.data(), T(1.345)));
}

template <class T>
void whole_update(benchmark::State& state) {
    Problem<T> p(state.range(0), state.range(1));
    const std::int64_t features = p.d - 1;
    const Buffer<T> X = p.features_only();
    Buffer<T> y(p.n);
    for (std::int64_t i = 0; i < p.n; ++i) {
        T fitted = 0;
        for (std::int64_t j = 0; j < features; ++j) fitted += X[i * features + j] * T(0.1 * (j % 7));
        y[i] = fitted + p.y[i] * T(0.2);
    }
    rh::cpu::Engine<T> engine(static_cast<int>(state.range(4)), static_cast<rh::cpu::KernelChoice>(state.range(3)));
    rh::core::SolverConfig config;
    config.penalty = state.range(2) ? rh::core::Penalty::l1 : rh::core::Penalty::none;
    Buffer<T> coef(p.d, T(0)), info(p.d * p.d, T(0)), coef_out(p.d), info_out(p.d * p.d);
    rh::core::StateView<T> view{coef.data(), info.data(), {features, true, 0, 0, 0.0, 0.0}};
    rh::core::BatchView<T> batch{X.data(), y.data(), nullptr, p.n, features};
    rh::core::StateOutput<T> next{coef_out.data(), info_out.data(), {}};
    for (auto _ : state) {
        auto diagnostics = engine.update(view, batch, config, next);
        benchmark::DoNotOptimize(diagnostics);
    }
}

void shapes(benchmark::internal::Benchmark* b) {
    b->Args({4096, 16})->Args({32768, 90})->Args({4096, 256})->Args({65536, 32});
}
// (rows, features, penalty, kernel: 1 reference_order / 2 fast, threads)
void update_shapes(benchmark::internal::Benchmark* b) {
    for (int kernel : {1, 2})
        for (int penalty : {0, 1})
            b->Args({4096, 16, penalty, kernel, 1})->Args({32768, 90, penalty, kernel, 1})
                ->Args({4096, 256, penalty, kernel, 1})->Args({65536, 32, penalty, kernel, 1});
}
void thread_shapes(benchmark::internal::Benchmark* b) {
    for (int threads : {1, 2})
        b->Args({4096, 16, threads})->Args({32768, 90, threads})->Args({4096, 256, threads})->Args({65536, 32, threads});
}

}  // namespace

// The Newton system's solve (symmetric ladder: Cholesky with its exact
// reciprocal condition number up to d = 32) on a well-conditioned d x d
// Gram-like matrix, as every Newton iteration solves it.
template <class T>
void newton_solve(benchmark::State& state) {
    const std::int64_t d = state.range(0);
    Problem<T> p(4 * d, d - 1);
    Buffer<T> A(d * d, T(0)), b(d, T(1)), x(d);
    for (std::int64_t i = 0; i < p.n; ++i)
        for (std::int64_t a = 0; a < d; ++a)
            for (std::int64_t c = a; c < d; ++c) A[a * d + c] += p.Z[i * d + a] * p.Z[i * d + c];
    for (std::int64_t a = 0; a < d; ++a) A[a * d + a] += T(1);
    p.ladder.reserve(p.growth, d);
    for (auto _ : state) {
        benchmark::DoNotOptimize(p.ladder.solve_symmetric(d, A.data(), b.data(), x.data()));
        benchmark::DoNotOptimize(x.data());
    }
}

BENCHMARK(weighted_gram<double>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(blas_syrk<double>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(blas_gemm<double>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(weighted_gram<float>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(blas_syrk<float>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(blas_gemm<float>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(residual<double>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(objective_value<double>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(gradient<double>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(fast_gram_full<double>)->Apply(thread_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(blas_syrk_threads<double>)->Apply(thread_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(narrow_gram<double>)->Args({4096, 16})->Args({65536, 32})->Args({32768, 64})->Args({32768, 90})->Args({4096, 256})->Unit(benchmark::kMicrosecond);
BENCHMARK(narrow_gram<float>)->Args({4096, 16})->Args({65536, 32})->Args({32768, 90})->Args({32768, 64})->Args({4096, 256})->Unit(benchmark::kMicrosecond);
BENCHMARK(fast_gram_full<float>)->Apply(thread_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(blas_syrk_threads<float>)->Apply(thread_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(narrow_trial_pass<double>)->Args({4096, 16, 1})->Args({4096, 16, 0})->Args({65536, 32, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(narrow_trial_pass<float>)->Args({4096, 16, 1})->Args({4096, 16, 0})->Args({65536, 32, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(narrow_pair_trial_pass<double>)->Args({4096, 16})->Unit(benchmark::kMicrosecond);
BENCHMARK(narrow_pair_trial_pass<float>)->Args({4096, 16})->Unit(benchmark::kMicrosecond);
BENCHMARK(narrow_build_panels<double>)->Args({4096, 16})->Unit(benchmark::kMicrosecond);
BENCHMARK(narrow_build_panels<float>)->Args({4096, 16})->Unit(benchmark::kMicrosecond);
BENCHMARK(fast_matvec<double>)->Apply(thread_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(fast_matvec_transposed<double>)->Apply(thread_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(fast_matvec<float>)->Apply(thread_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(fast_matvec_transposed<float>)->Apply(thread_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(fast_score_pass<double>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(fast_loss_sum<double>)->Apply(shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(whole_update<double>)->Apply(update_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(whole_update<float>)->Apply(update_shapes)->Unit(benchmark::kMicrosecond);
BENCHMARK(newton_solve<double>)->Arg(17)->Arg(33)->Unit(benchmark::kMicrosecond);
BENCHMARK(newton_solve<float>)->Arg(17)->Arg(33)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();

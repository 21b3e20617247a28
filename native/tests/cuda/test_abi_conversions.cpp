// The C ABI's translations (native/cuda/src/abi_conversions.hpp) on any
// machine: every enumerator both ways, the messages of those outside the
// ABI, the fields carried, the meat of an ABI 1.3-sized host state, the
// counters' round trip. With no GPU in CI these are the engine's only
// tested path from rh_cuda.h to its own types.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "abi_conversions.hpp"
#include "core/status.hpp"
#include "rh_cuda.hpp"

using namespace rh;
using rh::cuda_abi::make;

namespace {

template <class F>
void expect_refused(F&& call, const std::string& message) {
    try {
        call();
        ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const core::EngineError& error) {
        EXPECT_EQ(error.status(), core::Status::invalid_argument);
        EXPECT_EQ(std::string(error.what()), message);
    }
}

}  // namespace

TEST(CudaAbiConversions, EngineOptionsCarryEveryFieldAndRefuseUnknownEnumerators) {
    auto o = make<rh_cuda_engine_options>();
    o.device = 3;
    o.dtype = RH_CUDA_FLOAT32;
    o.n_features = 17;
    o.fit_intercept = 0;
    o.cuda_graphs = 1;
    o.fast_math = 1;
    o.solver_choice = RH_CUDA_SOLVER_BLOCK;
    o.block_tiles = 12;
    o.stream = 0xabcdef;
    const cuda::EngineOptions e = cuda::abi::engine_options(o);
    EXPECT_EQ(e.device, 3);
    EXPECT_EQ(e.dtype, cuda::ElementType::float32);
    EXPECT_EQ(e.n_features, 17);
    EXPECT_FALSE(e.fit_intercept);
    EXPECT_TRUE(e.cuda_graphs);
    EXPECT_TRUE(e.fast_math);
    EXPECT_EQ(e.solver_choice, cuda::SolverChoice::block);
    EXPECT_EQ(e.block_tiles, 12);
    EXPECT_EQ(e.stream, 0xabcdefu);
    o.dtype = RH_CUDA_FLOAT64;
    EXPECT_EQ(cuda::abi::engine_options(o).dtype, cuda::ElementType::float64);
    o.solver_choice = RH_CUDA_SOLVER_AUTO;
    EXPECT_EQ(cuda::abi::engine_options(o).solver_choice, cuda::SolverChoice::automatic);
    o.solver_choice = RH_CUDA_SOLVER_PIPELINE;
    EXPECT_EQ(cuda::abi::engine_options(o).solver_choice, cuda::SolverChoice::pipeline);
    o.solver_choice = 7;
    expect_refused([&] { cuda::abi::engine_options(o); },
                   "solver_choice must be RH_CUDA_SOLVER_AUTO, RH_CUDA_SOLVER_PIPELINE or RH_CUDA_SOLVER_BLOCK");
    o.solver_choice = RH_CUDA_SOLVER_AUTO;
    o.dtype = 9;
    expect_refused([&] { cuda::abi::engine_options(o); }, "dtype must be either 'float32' or 'float64'");
    // An ABI 1.4 caller zeroed the reserved bytes block_tiles now occupies: the engine's default.
    auto old = make<rh_cuda_engine_options>();
    old.dtype = RH_CUDA_FLOAT64;
    EXPECT_EQ(cuda::abi::engine_options(old).block_tiles, 0);
}

TEST(CudaAbiConversions, SolverConfigCarriesEveryFieldAndRefusesAnUnknownPenalty) {
    auto c = make<rh_cuda_solver_config>();
    c.tau = 1.5;
    c.lambda_scale = 0.5;
    c.bandwidth_scale = 2.0;
    c.tol = 1e-7;
    c.ridge = 1e-6;
    c.penalty = RH_CUDA_PENALTY_L1;
    c.max_iter = 55;
    c.fit_intercept = 1;
    const core::SolverConfig s = cuda::abi::solver_config(c);
    EXPECT_EQ(s.tau, 1.5);
    EXPECT_EQ(s.lambda_scale, 0.5);
    EXPECT_EQ(s.bandwidth_scale, 2.0);
    EXPECT_EQ(s.tol, 1e-7);
    EXPECT_EQ(s.ridge, 1e-6);
    EXPECT_EQ(s.penalty, core::Penalty::l1);
    EXPECT_EQ(s.max_iter, 55);
    EXPECT_TRUE(s.fit_intercept);
    c.penalty = RH_CUDA_PENALTY_NONE;
    EXPECT_EQ(cuda::abi::solver_config(c).penalty, core::Penalty::none);
    c.penalty = 2;
    expect_refused([&] { cuda::abi::solver_config(c); }, "penalty must be either 'none' or 'l1'");
}

TEST(CudaAbiConversions, BatchesCarryTheirArraysAndRefuseUnknownMemoryOrDtype) {
    const double X[6] = {}, y[2] = {}, w[2] = {};
    auto b = make<rh_cuda_batch>();
    b.memory = RH_CUDA_MEMORY_DEVICE;
    b.dtype = RH_CUDA_FLOAT64;
    b.rows = 2;
    b.features = 3;
    b.X = X;
    b.y = y;
    b.sample_weight = w;
    b.stream = 42;
    const cuda::BatchInput in = cuda::abi::batch_input(b);
    EXPECT_EQ(in.memory, cuda::BatchMemory::device);
    EXPECT_EQ(in.dtype, cuda::ElementType::float64);
    EXPECT_EQ(in.rows, 2);
    EXPECT_EQ(in.features, 3);
    EXPECT_EQ(in.X, X);
    EXPECT_EQ(in.y, y);
    EXPECT_EQ(in.sample_weight, w);
    EXPECT_EQ(in.producer_stream, 42u);
    b.memory = RH_CUDA_MEMORY_HOST;
    b.dtype = RH_CUDA_FLOAT32;
    EXPECT_EQ(cuda::abi::batch_input(b).memory, cuda::BatchMemory::host);
    EXPECT_EQ(cuda::abi::batch_input(b).dtype, cuda::ElementType::float32);
    b.memory = 5;
    expect_refused([&] { cuda::abi::batch_input(b); }, "batch memory must be host or device");
    b.memory = RH_CUDA_MEMORY_HOST;
    b.dtype = 0;
    expect_refused([&] { cuda::abi::batch_input(b); }, "the batch's dtype is not the engine's");
}

TEST(CudaAbiConversions, CountersRoundTripAndAnAbi13HostStateHasNoMeat) {
    const core::StateCounters counters{4, false, 1234, 7, 0.25, 987.5};
    const rh_cuda_state_counters abi = cuda::abi::abi_counters(counters);
    EXPECT_EQ(abi.abi_version, static_cast<uint32_t>(RH_CUDA_ABI_VERSION));
    EXPECT_EQ(abi.struct_size, sizeof(rh_cuda_state_counters));
    const core::StateCounters back = cuda::abi::state_counters(abi);
    EXPECT_EQ(back.n_features_in, 4);
    EXPECT_FALSE(back.fit_intercept);
    EXPECT_EQ(back.n_samples_seen, 1234);
    EXPECT_EQ(back.batch_count, 7);
    EXPECT_EQ(back.previous_lambda, 0.25);
    EXPECT_EQ(back.weight_sum, 987.5);

    double coefficients[4] = {}, information[16] = {}, meat[16] = {};
    auto state = make<rh_cuda_host_state>();
    state.coefficients = coefficients;
    state.information = information;
    state.meat = meat;
    state.n_parameters = 4;
    state.counters = abi;
    cuda::HostState host = cuda::abi::host_state(state);
    EXPECT_EQ(host.coefficients, coefficients);
    EXPECT_EQ(host.information, information);
    EXPECT_EQ(host.meat, meat);
    EXPECT_EQ(host.n_parameters, 4);
    EXPECT_EQ(host.counters.n_samples_seen, 1234);
    state.struct_size = offsetof(rh_cuda_host_state, meat);  // an ABI 1.3 caller's struct: the field is not its
    EXPECT_EQ(cuda::abi::host_state(state).meat, nullptr);
}

TEST(CudaAbiConversions, AReportBecomesTheAbisDiagnosticsForEveryPath) {
    cuda::UpdateReport report;
    report.diagnostics.objective = 1.25;
    report.diagnostics.lambda_value = 0.5;
    report.diagnostics.bandwidth = 0.75;
    report.diagnostics.iterations = 9;
    report.diagnostics.converged = true;
    report.diagnostics.stop_reason = core::StopReason::line_search_exhausted;
    report.diagnostics.record(core::SolveRoute::cholesky);
    report.diagnostics.record(core::SolveRoute::lu);
    report.diagnostics.record(core::SolveRoute::least_squares);
    report.diagnostics.record(core::SolveRoute::least_squares);
    report.host_syncs = 3;
    const std::pair<cuda::SolverPath, int> paths[] = {{cuda::SolverPath::pipeline, RH_CUDA_PATH_PIPELINE},
                                                      {cuda::SolverPath::block, RH_CUDA_PATH_BLOCK},
                                                      {cuda::SolverPath::block_then_pipeline,
                                                       RH_CUDA_PATH_BLOCK_THEN_PIPELINE}};
    for (const auto& [path, code] : paths) {
        report.solver_path = path;
        const rh_cuda_diagnostics out = cuda::abi::abi_diagnostics(report);
        EXPECT_EQ(out.abi_version, static_cast<uint32_t>(RH_CUDA_ABI_VERSION));
        EXPECT_EQ(out.struct_size, sizeof(rh_cuda_diagnostics));
        EXPECT_EQ(out.solver_path, code);
        EXPECT_EQ(out.objective, 1.25);
        EXPECT_EQ(out.lambda_value, 0.5);
        EXPECT_EQ(out.bandwidth, 0.75);
        EXPECT_EQ(out.iterations, 9);
        EXPECT_EQ(out.converged, 1);
        EXPECT_EQ(out.stop_reason, RH_CUDA_STOP_LINE_SEARCH_EXHAUSTED);
        EXPECT_EQ(out.solve_route, RH_CUDA_ROUTE_LEAST_SQUARES);
        EXPECT_EQ(out.cholesky_solves, 1);
        EXPECT_EQ(out.lu_solves, 1);
        EXPECT_EQ(out.least_squares_solves, 2);
        EXPECT_EQ(out.host_syncs, 3);
    }
}

TEST(CudaAbiConversions, FeaturesCarryEveryCounter) {
    cuda::EngineFeatures f;
    f.device = 1;
    f.dtype = cuda::ElementType::float32;
    f.n_parameters = 33;
    f.updates = 5;
    f.host_syncs = 11;
    f.workspace_allocations = 2;
    f.workspace_bytes = 4096;
    f.graph_captures = 1;
    f.graph_replays = 4;
    f.graph_fallbacks = 0;
    f.cuda_graphs = true;
    f.fast_math = true;
    f.owns_stream = false;
    f.stream = 77;
    const rh_cuda_features out = cuda::abi::abi_features(f);
    EXPECT_EQ(out.struct_size, sizeof(rh_cuda_features));
    EXPECT_EQ(out.device, 1);
    EXPECT_EQ(out.dtype, RH_CUDA_FLOAT32);
    EXPECT_EQ(out.n_parameters, 33);
    EXPECT_EQ(out.updates, 5);
    EXPECT_EQ(out.host_syncs, 11);
    EXPECT_EQ(out.workspace_allocations, 2);
    EXPECT_EQ(out.workspace_bytes, 4096);
    EXPECT_EQ(out.graph_captures, 1);
    EXPECT_EQ(out.graph_replays, 4);
    EXPECT_EQ(out.graph_fallbacks, 0);
    EXPECT_EQ(out.cuda_graphs, 1);
    EXPECT_EQ(out.fast_math, 1);
    EXPECT_EQ(out.owns_stream, 0);
    EXPECT_EQ(out.stream, 77u);
    f.dtype = cuda::ElementType::float64;
    EXPECT_EQ(cuda::abi::abi_features(f).dtype, RH_CUDA_FLOAT64);
}

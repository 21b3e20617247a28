// _renewable_huber_native_cpu: the thin nanobind binding of the CPU engine.
//
// Only C-contiguous CPU float32/float64 arrays are accepted, without any
// implicit conversion (.noconvert()); the Python adapter makes the single
// explicit copy the contract allows for other layouts. Outputs are arrays the
// caller allocated, so no Python object is created while the GIL is released
// for the update and for prediction. EngineError crosses into Python exactly
// here, as EngineError(message, status_name).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "core_bindings.hpp"
#include "test_hooks.hpp"
#include "cpu/batch_slices.hpp"
#include "cpu/cpu_diagnostics.hpp"
#include "cpu/engine.hpp"
#include "cpu/platform/blas_provider.hpp"
#include "cpu/platform/finite_scan.hpp"
#include "cpu/platform/isa_dispatch.hpp"
#include "cpu/platform/thread_policy.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

template <class T>
using Vector = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using Matrix = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <class T>
using OutVector = nb::ndarray<T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using OutMatrix = nb::ndarray<T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

void fail(const std::string& message) {
    throw rh::core::EngineError(rh::core::Status::invalid_argument, message);
}

rh::cpu::KernelChoice parse_kernel(const std::string& kernel) {
    if (kernel == "auto") return rh::cpu::KernelChoice::automatic;
    if (kernel == "reference_order") return rh::cpu::KernelChoice::reference_order;
    if (kernel == "fast") return rh::cpu::KernelChoice::fast;
    fail("kernel must be 'auto', 'reference_order' or 'fast'");
    return rh::cpu::KernelChoice::automatic;
}

const char* kernel_choice_name(rh::cpu::KernelChoice kernel) {
    switch (kernel) {
        case rh::cpu::KernelChoice::automatic: return "auto";
        case rh::cpu::KernelChoice::reference_order: return "reference_order";
        case rh::cpu::KernelChoice::fast: return "fast";
    }
    return "unknown";
}

// The state, batch and next state's views of update()'s arguments, their shapes checked.
template <class T>
struct UpdateViews {
    rh::core::StateView<T> state;
    rh::core::BatchView<T> batch;
    rh::core::StateOutput<T> next;
};

template <class T>
UpdateViews<T> update_views(Vector<T> coefficients, Matrix<T> information, const rh::core::StateCounters& counters,
                            Matrix<T> X, Vector<T> y, std::optional<Vector<T>> sample_weight,
                            OutVector<T> out_coefficients, OutMatrix<T> out_information,
                            std::optional<Matrix<T>> meat, std::optional<OutMatrix<T>> out_meat) {
    const std::int64_t d = counters.n_parameters();
    if (static_cast<std::int64_t>(coefficients.shape(0)) != d || static_cast<std::int64_t>(out_coefficients.shape(0)) != d)
        fail("state coefficient shape does not match feature metadata");
    if (static_cast<std::int64_t>(information.shape(0)) != d || static_cast<std::int64_t>(information.shape(1)) != d ||
        static_cast<std::int64_t>(out_information.shape(0)) != d || static_cast<std::int64_t>(out_information.shape(1)) != d)
        fail("state information shape does not match feature metadata");
    const auto square = [d](const auto& matrix) {
        return matrix->shape(0) == static_cast<std::size_t>(d) && matrix->shape(1) == static_cast<std::size_t>(d);
    };
    if ((meat && !square(meat)) || (out_meat && !square(out_meat)))
        fail("state meat shape does not match feature metadata");
    if (y.shape(0) != X.shape(0)) fail("y must have as many rows as X");
    if (sample_weight && sample_weight->shape(0) != X.shape(0)) fail("sample_weight must have as many rows as X");
    return {{coefficients.data(), information.data(), counters, meat ? meat->data() : nullptr},
            {X.data(), y.data(), sample_weight ? sample_weight->data() : nullptr, static_cast<std::int64_t>(X.shape(0)),
             static_cast<std::int64_t>(X.shape(1))},
            {out_coefficients.data(), out_information.data(), counters, out_meat ? out_meat->data() : nullptr}};
}

template <class T>
std::pair<rh::cpu::CpuUpdateDiagnostics, rh::core::StateCounters> update(
    rh::cpu::Engine<T>& engine, Vector<T> coefficients, Matrix<T> information, const rh::core::StateCounters& counters,
    Matrix<T> X, Vector<T> y, std::optional<Vector<T>> sample_weight, const rh::core::SolverConfig& config,
    OutVector<T> out_coefficients, OutMatrix<T> out_information, std::optional<Matrix<T>> meat,
    std::optional<OutMatrix<T>> out_meat) {
    UpdateViews<T> views = update_views(coefficients, information, counters, X, y, sample_weight, out_coefficients,
                                        out_information, meat, out_meat);
    rh::cpu::CpuUpdateDiagnostics diagnostics;
    {
        nb::gil_scoped_release released;
        diagnostics = engine.update(views.state, views.batch, config, views.next);
    }
    return {diagnostics, views.next.counters};
}

// update() over consecutive slices of batch_size rows (cpu/batch_slices.hpp):
// each slice's diagnostics, and the counters after the last.
template <class T>
std::pair<std::vector<rh::cpu::CpuUpdateDiagnostics>, rh::core::StateCounters> update_batches(
    rh::cpu::Engine<T>& engine, Vector<T> coefficients, Matrix<T> information, const rh::core::StateCounters& counters,
    Matrix<T> X, Vector<T> y, std::optional<Vector<T>> sample_weight, const rh::core::SolverConfig& config,
    std::int64_t batch_size, OutVector<T> out_coefficients, OutMatrix<T> out_information,
    std::optional<Matrix<T>> meat, std::optional<OutMatrix<T>> out_meat) {
    UpdateViews<T> views = update_views(coefficients, information, counters, X, y, sample_weight, out_coefficients,
                                        out_information, meat, out_meat);
    std::vector<rh::cpu::CpuUpdateDiagnostics> diagnostics;
    {
        nb::gil_scoped_release released;
        diagnostics = rh::cpu::update_slices(engine, views.state, views.batch, batch_size, config, views.next);
    }
    return {std::move(diagnostics), views.next.counters};
}

template <class T>
void predict(const rh::cpu::Engine<T>& engine, Vector<T> coefficients, std::int64_t n_features, bool fit_intercept,
             Matrix<T> X, OutVector<T> out) {
    if (static_cast<std::int64_t>(coefficients.shape(0)) != n_features + (fit_intercept ? 1 : 0))
        fail("coefficients do not match n_features and fit_intercept");
    if (static_cast<std::int64_t>(X.shape(1)) != n_features) fail("X has the wrong number of features");
    if (out.shape(0) != X.shape(0)) fail("out must have one entry per row of X");
    nb::gil_scoped_release released;
    engine.predict(coefficients.data(), n_features, fit_intercept, X.data(), static_cast<std::int64_t>(X.shape(0)),
                   out.data());
}

// A partition's data terms at theta (cpu/partition_sums.hpp): a term is
// formed when its output array is given (the loss when `loss`); returns
// (loss_sum, weight_sum).
template <class T>
std::pair<double, double> partition_sums(rh::cpu::Engine<T>& engine, Matrix<T> design, Vector<T> y,
                                         std::optional<Vector<T>> sample_weight, Vector<T> theta, double tau,
                                         double bandwidth, bool loss, std::optional<OutVector<T>> score_product,
                                         std::optional<OutMatrix<T>> curvature_gram,
                                         std::optional<OutMatrix<T>> unit_gram,
                                         std::optional<OutMatrix<T>> score_gram) {
    const auto d = static_cast<std::size_t>(design.shape(1));
    if (y.shape(0) != design.shape(0)) fail("y must have as many rows as the design");
    if (sample_weight && sample_weight->shape(0) != design.shape(0))
        fail("sample_weight must have as many rows as the design");
    if (theta.shape(0) != d) fail("theta must have one entry per design column");
    if (score_product && score_product->shape(0) != d) fail("score_product must have one entry per design column");
    for (const auto* gram : {&curvature_gram, &unit_gram, &score_gram})
        if (*gram && ((*gram)->shape(0) != d || (*gram)->shape(1) != d))
            fail("the Gram outputs must be d x d, d the design's columns");
    const rh::core::BatchView<T> batch{design.data(), y.data(), sample_weight ? sample_weight->data() : nullptr,
                                       static_cast<std::int64_t>(design.shape(0)), static_cast<std::int64_t>(d)};
    const rh::cpu::PartitionSumsPoint<T> point{theta.data(), tau, bandwidth};
    const rh::cpu::PartitionSumsRequest request{loss, score_product.has_value(), curvature_gram.has_value(),
                                                unit_gram.has_value(), score_gram.has_value()};
    rh::cpu::PartitionSumsOutput<T> out;
    out.score_product = score_product ? score_product->data() : nullptr;
    out.curvature_gram = curvature_gram ? curvature_gram->data() : nullptr;
    out.unit_gram = unit_gram ? unit_gram->data() : nullptr;
    out.score_gram = score_gram ? score_gram->data() : nullptr;
    {
        nb::gil_scoped_release released;
        engine.partition_sums(batch, point, request, out);
    }
    return {out.loss_sum, out.weight_sum};
}

template <class T>
void bind_engine(nb::module_& m, const char* name, const char* dtype) {
    using Engine = rh::cpu::Engine<T>;
    nb::class_<Engine>(m, name)
        .def(
            "__init__",
            [](Engine* self, int n_jobs, const std::string& kernel) { new (self) Engine(n_jobs, parse_kernel(kernel)); },
            "n_jobs"_a = rh::cpu::kLibraryDefaultThreads, "kernel"_a = "auto",
            "n_jobs: 0 = library default, -1 = all cores, k > 0 = exactly k threads; kernel: 'auto' (fast when "
            "rows * d * d > FAST_KERNEL_THRESHOLD), 'reference_order' or 'fast'")
        .def("update", &update<T>, "coefficients"_a.noconvert(), "information"_a.noconvert(), "counters"_a,
             "X"_a.noconvert(), "y"_a.noconvert(), "sample_weight"_a.noconvert().none(), "config"_a,
             "out_coefficients"_a.noconvert(), "out_information"_a.noconvert(), "meat"_a.noconvert().none() = nb::none(),
             "out_meat"_a.noconvert().none() = nb::none(),
             "Absorb one batch; writes the next state into the out arrays (the meat when both meat arrays are "
             "given) and returns (diagnostics, counters).")
        .def("update_batches", &update_batches<T>, "coefficients"_a.noconvert(), "information"_a.noconvert(),
             "counters"_a, "X"_a.noconvert(), "y"_a.noconvert(), "sample_weight"_a.noconvert().none(), "config"_a,
             "batch_size"_a, "out_coefficients"_a.noconvert(), "out_information"_a.noconvert(),
             "meat"_a.noconvert().none() = nb::none(), "out_meat"_a.noconvert().none() = nb::none(),
             "Absorb consecutive slices of batch_size rows, each as update() absorbs a batch (bit for bit the "
             "loop of update() over them), in one call; writes the state after the last into the out arrays and "
             "returns ([diagnostics of each slice], counters). The input state is never written.")
        .def("partition_sums", &partition_sums<T>, "design"_a.noconvert(), "y"_a.noconvert(),
             "sample_weight"_a.noconvert().none(), "theta"_a.noconvert(), "tau"_a, "bandwidth"_a, "loss"_a,
             "score_product"_a.noconvert().none(), "curvature_gram"_a.noconvert().none(),
             "unit_gram"_a.noconvert().none(), "score_gram"_a.noconvert().none() = nb::none(),
             "A partition's share of a batch's data terms at theta (design = Z, intercept column included): "
             "writes Z'(w score(r)), Z' diag(w kappa(r)) Z, Z' diag(w) Z and Z' diag(w score(r)^2) Z into the "
             "arrays given; returns (sum w loss(r) when loss else 0, sum w)")
        .def("predict", &predict<T>, "coefficients"_a.noconvert(), "n_features"_a, "fit_intercept"_a,
             "X"_a.noconvert(), "out"_a.noconvert())
        .def(
            "rows_finite",
            [](Engine& engine, Matrix<T> X) {
                nb::gil_scoped_release released;
                return engine.rows_finite(X.data(), static_cast<std::int64_t>(X.shape(0)),
                                          static_cast<std::int64_t>(X.shape(1)));
            },
            "X"_a.noconvert(),
            "True when no element of the C-contiguous 2-D array is NaN or infinite: update()'s own test of X, "
            "split over the engine's threads by rows like its passes")
        // Test hooks (cpu/test_hooks.hpp, python/test_hooks.hpp).
        .def(
            "_set_update_gate",
            [](Engine& engine, rh::python::UpdateGate* gate) {
                if (gate == nullptr) engine.test_hooks().inside_update = nullptr;
                else engine.test_hooks().inside_update = [gate] { gate->arrive(); };
            },
            "gate"_a.none(), nb::keep_alive<1, 2>(),
            "Test hook: hold every update at its inside_update point until the gate opens (None removes it)")
        .def("_fail_nth_allocation", &Engine::fail_nth_allocation, "n"_a,
             "Test hook: the n-th workspace allocation from now fails (MemoryError); 0 disarms")
        .def("_hold_workers", &Engine::hold_workers, "held"_a,
             "Test hook: the pool's workers take no part while held (the caller runs them, reported late)")
        .def_prop_ro("threads", &Engine::threads)
        .def_prop_ro("kernel", [](const Engine& e) { return std::string(kernel_choice_name(e.kernel())); })
        .def_prop_ro("workspace_allocations", &Engine::workspace_allocations)
        .def_prop_ro_static("dtype", [dtype](nb::handle) { return std::string(dtype); });
}

template <class T>
void bind_all_finite(nb::module_& m, const char* doc) {
    m.def(
        "all_finite",
        [](nb::ndarray<const T, nb::c_contig, nb::device::cpu> a) {
            nb::gil_scoped_release release;
            return rh::cpu::all_finite(a.data(), static_cast<std::int64_t>(a.size()));
        },
        "a"_a.noconvert(), doc);
}

}  // namespace

NB_MODULE(_renewable_huber_native_cpu, m) {
    m.doc() = "renewable-huber C++ CPU engine";
    m.attr("__version__") = RH_VERSION_STRING;
    m.attr("ABI_VERSION") = RH_NATIVE_ABI_VERSION;
    // rows * d * d above which kernel="auto" takes the fast path.
    m.attr("FAST_KERNEL_THRESHOLD") = rh::cpu::kFastKernelThreshold;

    rh::python::bind_engine_error(m, "_renewable_huber_native_cpu.EngineError");
    rh::python::bind_core_types(m);
    rh::python::bind_update_gate(m);

    // The CPU engine's own diagnostics: the contract's fields and its counters.
    using rh::cpu::CpuUpdateDiagnostics;
    nb::class_<CpuUpdateDiagnostics, rh::core::UpdateDiagnostics>(m, "CpuUpdateDiagnostics")
        .def_prop_ro("kernel_path",
                     [](const CpuUpdateDiagnostics& d) { return std::string(rh::cpu::kernel_path_name(d.kernel_path)); })
        .def_prop_ro("gram_full_updates", [](const CpuUpdateDiagnostics& d) { return d.gram.full_updates; })
        .def_prop_ro("gram_incremental_updates",
                     [](const CpuUpdateDiagnostics& d) { return d.gram.incremental_updates; })
        .def_prop_ro("gram_changed_rows", [](const CpuUpdateDiagnostics& d) { return d.gram.changed_rows; })
        .def_ro("parallel_dispatches", &CpuUpdateDiagnostics::parallel_dispatches)
        .def_ro("late_dispatches", &CpuUpdateDiagnostics::late_dispatches)
        .def_ro("threads_at_end", &CpuUpdateDiagnostics::threads_at_end);

    bind_engine<double>(m, "EngineFloat64", "float64");
    bind_engine<float>(m, "EngineFloat32", "float32");

    m.def("blas_provider", &rh::cpu::blas::provider_name, "BLAS/LAPACK provider the engine was built against");
    m.def("blas_config", &rh::cpu::blas::provider_config, "the provider's own build/config string");
    m.def("blas_threads", &rh::cpu::blas::get_num_threads, "current size of the provider's thread pool");
    m.def(
        "isa_level", [] { return std::string(rh::cpu::isa_level_name(rh::cpu::isa_level())); },
        "instruction-set level of the narrow kernels: baseline, x86-64-v3 or x86-64-v4 (RH_NATIVE_ISA_LEVEL caps it)");
    m.def("available_cores", &rh::cpu::available_cores, "cores this process may run on (its CPU affinity)");
    // The engine's vectorized finiteness test, for the estimator's input
    // validation (same answer as numpy.isfinite(a).all(), one read of a).
    bind_all_finite<double>(m, "True when no element of the C-contiguous float64 array is NaN or infinite");
    bind_all_finite<float>(m, "True when no element of the C-contiguous float32 array is NaN or infinite");
}

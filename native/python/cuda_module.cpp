// _renewable_huber_native_cuda: the thin nanobind binding of the CUDA engine,
// over its C ABI only (native/cuda/include/rh_cuda.hpp's RAII wrapper). Host
// arrays must be C-contiguous CPU arrays of the engine's dtype (no implicit
// conversion; the Python adapter makes the one explicit copy the contract
// allows); device arrays arrive as DLPack capsules the adapter exported on
// the engine's stream (dlpack_import.hpp consumes them). The GIL is released around every engine call that
// runs device work. Failures cross into Python as EngineError(message,
// status name), the core types' bindings shared with the CPU module.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.hpp"
#include "core/status.hpp"
#include "core_bindings.hpp"
#include "cuda_translations.hpp"
#include "dlpack_import.hpp"
#include "rh_cuda.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using rh::python::abi_config;
using rh::python::CudaUpdateDiagnostics;
using rh::python::diagnostics_of;
using rh::python::from_abi;
using rh::python::to_abi;

using HostArray = nb::ndarray<nb::c_contig, nb::device::cpu>;

[[noreturn]] void fail(const std::string& message) {
    throw rh::core::EngineError(rh::core::Status::invalid_argument, message);
}

int32_t parse_dtype(const std::string& dtype) {
    if (dtype == "float64") return RH_CUDA_FLOAT64;
    if (dtype == "float32") return RH_CUDA_FLOAT32;
    fail("dtype must be either 'float32' or 'float64'");
}

class Engine {
public:
    Engine(int device, const std::string& dtype, std::int64_t n_features, bool fit_intercept, bool cuda_graphs,
           bool fast_math, std::uint64_t stream, int solver_choice, int block_tiles)
        : dtype_(parse_dtype(dtype)),
          d_(n_features + (fit_intercept ? 1 : 0)),
          device_(device),
          engine_(options(device, dtype_, n_features, fit_intercept, cuda_graphs, fast_math, stream, solver_choice,
                          block_tiles)) {}

    void restore(HostArray coefficients, HostArray information, const rh::core::StateCounters& counters,
                 std::optional<HostArray> meat) {
        check_host(coefficients, d_, "coefficients");
        check_host(information, d_ * d_, "information");
        if (meat) check_host(*meat, d_ * d_, "meat");
        auto state = rh::cuda_abi::make<rh_cuda_host_state>();
        state.coefficients = coefficients.data();
        state.information = information.data();
        state.n_parameters = d_;
        state.counters = to_abi(counters);
        state.meat = meat ? meat->data() : nullptr;
        nb::gil_scoped_release released;
        engine_.restore_state(state);
    }

    rh::core::StateCounters copy_state(HostArray coefficients, HostArray information, std::optional<HostArray> meat) {
        check_host(coefficients, d_, "coefficients");
        check_host(information, d_ * d_, "information");
        if (meat) check_host(*meat, d_ * d_, "meat");
        auto state = rh::cuda_abi::make<rh_cuda_host_state>();
        state.coefficients = coefficients.data();
        state.information = information.data();
        state.n_parameters = d_;
        state.meat = meat ? meat->data() : nullptr;
        {
            nb::gil_scoped_release released;
            engine_.copy_state(state);
        }
        return from_abi(state.counters);
    }

    rh::core::StateCounters counters() { return from_abi(engine_.counters()); }
    void revert() { engine_.revert(); }

    std::pair<CudaUpdateDiagnostics, rh::core::StateCounters> update_host(
        HostArray X, HostArray y, std::optional<HostArray> sample_weight, const rh::core::SolverConfig& config,
        HostArray coefficients_out) {
        const rh_cuda_batch batch = host_batch(X, y, sample_weight);
        check_host(coefficients_out, d_, "out_coefficients");
        return run_update(batch, config, coefficients_out.data());
    }

    // Consecutive slices of batch_size rows of one host batch, in one native call.
    std::pair<std::vector<CudaUpdateDiagnostics>, rh::core::StateCounters> update_host_batches(
        HostArray X, HostArray y, std::optional<HostArray> sample_weight, const rh::core::SolverConfig& config,
        std::int64_t batch_size, HostArray coefficients_out) {
        const rh_cuda_batch batch = host_batch(X, y, sample_weight);
        check_host(coefficients_out, d_, "out_coefficients");
        return run_update_batches(batch, batch_size, config, coefficients_out.data());
    }

    // A device batch: the DLPack capsules of X, y and (optionally) the
    // weights, exported on this engine's stream (the producer's work is
    // ordered before it), read in place; the capsules' deleters run when
    // this returns, after the engine's last read of them (the engine waits
    // for its kernels that read a caller's device batch before returning).
    std::pair<CudaUpdateDiagnostics, rh::core::StateCounters> update_dlpack(
        nb::handle X, nb::handle y, nb::handle sample_weight, const rh::core::SolverConfig& config,
        HostArray coefficients_out) {
        check_host(coefficients_out, d_, "out_coefficients");
        const DeviceBatch device = device_batch(X, y, sample_weight);
        return run_update(device.batch, config, coefficients_out.data());
    }

    // Consecutive slices of batch_size rows of one device batch, in one native call.
    std::pair<std::vector<CudaUpdateDiagnostics>, rh::core::StateCounters> update_dlpack_batches(
        nb::handle X, nb::handle y, nb::handle sample_weight, const rh::core::SolverConfig& config,
        std::int64_t batch_size, HostArray coefficients_out) {
        check_host(coefficients_out, d_, "out_coefficients");
        const DeviceBatch device = device_batch(X, y, sample_weight);
        return run_update_batches(device.batch, batch_size, config, coefficients_out.data());
    }

    // Device-resident prediction: X's capsule and out's (a writable vector of
    // X's rows, the engine's dtype), both exported on the engine's stream;
    // the engine's stream is synchronized before the capsules are released,
    // so out is ready when this returns.
    void predict_dlpack(nb::handle X, nb::handle out) {
        rh::python::ImportedTensor x = rh::python::ImportedTensor::consume(X.ptr(), "X");
        rh::python::ImportedTensor result = rh::python::ImportedTensor::consume(out.ptr(), "out");
        x.require("X", 2, bits(), device_);
        result.require("out", 1, bits(), device_);
        result.require_writable("out");
        const std::int64_t rows = x.extent(0);
        if (result.extent(0) != rows)
            fail("out has " + std::to_string(result.extent(0)) + " rows, X has " + std::to_string(rows));
        if (rows == 0) return;
        auto batch = rh::cuda_abi::make<rh_cuda_batch>();
        batch.memory = RH_CUDA_MEMORY_DEVICE;
        batch.dtype = dtype_;
        batch.rows = rows;
        batch.features = x.extent(1);
        batch.X = x.data();
        batch.stream = 0;
        last_device_pointers_ = {reinterpret_cast<std::uintptr_t>(batch.X), 0,
                                 reinterpret_cast<std::uintptr_t>(result.data())};
        nb::gil_scoped_release released;
        engine_.predict(batch, result.data());
        engine_.synchronize();
    }

    void predict_host(HostArray X, HostArray out) {
        if (X.ndim() != 2) fail("X must be two-dimensional");
        check_host(out, static_cast<std::int64_t>(X.shape(0)), "out");
        auto batch = rh::cuda_abi::make<rh_cuda_batch>();
        batch.memory = RH_CUDA_MEMORY_HOST;
        batch.dtype = dtype_of(X, "X");
        batch.rows = static_cast<std::int64_t>(X.shape(0));
        batch.features = static_cast<std::int64_t>(X.shape(1));
        batch.X = X.data();
        if (batch.rows == 0) return;
        nb::gil_scoped_release released;
        engine_.predict(batch, out.data());
    }

    void predict_device(std::uintptr_t X, std::int64_t rows, std::int64_t features, std::uintptr_t out,
                        std::uint64_t stream) {
        auto batch = rh::cuda_abi::make<rh_cuda_batch>();
        batch.memory = RH_CUDA_MEMORY_DEVICE;
        batch.dtype = dtype_;
        batch.rows = rows;
        batch.features = features;
        batch.X = reinterpret_cast<const void*>(X);
        batch.stream = stream;
        if (rows == 0) return;
        nb::gil_scoped_release released;
        engine_.predict(batch, reinterpret_cast<void*>(out));
    }

    void synchronize() {
        nb::gil_scoped_release released;
        engine_.synchronize();
    }

    nb::dict features() {
        const rh_cuda_features f = engine_.features();
        nb::dict out;
        out["device"] = f.device;
        out["dtype"] = f.dtype == RH_CUDA_FLOAT64 ? "float64" : "float32";
        out["n_parameters"] = f.n_parameters;
        out["updates"] = f.updates;
        out["host_syncs"] = f.host_syncs;
        out["workspace_allocations"] = f.workspace_allocations;
        out["workspace_bytes"] = f.workspace_bytes;
        out["graph_captures"] = f.graph_captures;
        out["graph_replays"] = f.graph_replays;
        out["graph_fallbacks"] = f.graph_fallbacks;
        out["cuda_graphs"] = f.cuda_graphs != 0;
        out["fast_math"] = f.fast_math != 0;
        out["owns_stream"] = f.owns_stream != 0;
        out["stream"] = f.stream;
        return out;
    }

    std::int64_t n_parameters() const { return d_; }
    // The device addresses the engine read (X, y, weights) in its last device
    // update, or (X, 0, out) in its last device prediction: the tests compare
    // them with the caller's arrays (no copy was made).
    std::tuple<std::uintptr_t, std::uintptr_t, std::uintptr_t> last_device_pointers() const {
        return {last_device_pointers_[0], last_device_pointers_[1], last_device_pointers_[2]};
    }
    std::uint64_t stream() { return engine_.features().stream; }

private:
    static rh_cuda_engine_options options(int device, int32_t dtype, std::int64_t n_features, bool fit_intercept,
                                          bool cuda_graphs, bool fast_math, std::uint64_t stream,
                                          int solver_choice, int block_tiles) {
        // The ABI's field holds 0-65535; the engine says which of those it takes.
        if (block_tiles < 0 || block_tiles > 65535)
            throw nb::value_error(("block_tiles must be from 1 to 4096 (0: the default), got " +
                                   std::to_string(block_tiles)).c_str());
        auto options = rh::cuda_abi::make<rh_cuda_engine_options>();
        options.device = device;
        options.dtype = dtype;
        options.n_features = n_features;
        options.fit_intercept = fit_intercept ? 1 : 0;
        options.cuda_graphs = cuda_graphs ? 1 : 0;
        options.fast_math = fast_math ? 1 : 0;
        options.solver_choice = static_cast<uint8_t>(solver_choice);
        options.block_tiles = static_cast<uint16_t>(block_tiles);
        options.stream = stream;
        return options;
    }

    // A host batch's description (its arrays checked against each other).
    rh_cuda_batch host_batch(HostArray& X, HostArray& y, std::optional<HostArray>& sample_weight) {
        if (X.ndim() != 2) fail("X must be two-dimensional");
        const std::int64_t rows = static_cast<std::int64_t>(X.shape(0));
        check_host(y, rows, "y");
        if (sample_weight) check_host(*sample_weight, rows, "sample_weight");
        auto batch = rh::cuda_abi::make<rh_cuda_batch>();
        batch.memory = RH_CUDA_MEMORY_HOST;
        batch.dtype = dtype_of(X, "X");
        batch.rows = rows;
        batch.features = static_cast<std::int64_t>(X.shape(1));
        batch.X = X.data();
        batch.y = y.data();
        batch.sample_weight = sample_weight ? sample_weight->data() : nullptr;
        return batch;
    }

    // A device batch's tensors (consumed from their capsules; released with
    // it) and its description.
    struct DeviceBatch {
        rh::python::ImportedTensor x, targets, weights;
        rh_cuda_batch batch;
    };
    DeviceBatch device_batch(nb::handle X, nb::handle y, nb::handle sample_weight) {
        DeviceBatch device;
        device.x = rh::python::ImportedTensor::consume(X.ptr(), "X");
        device.targets = rh::python::ImportedTensor::consume(y.ptr(), "y");
        if (!sample_weight.is_none())
            device.weights = rh::python::ImportedTensor::consume(sample_weight.ptr(), "sample_weight");
        device.x.require("X", 2, bits(), device_);
        const std::int64_t rows = device.x.extent(0);
        device.targets.require("y", 1, bits(), device_);
        if (device.targets.extent(0) != rows)
            fail("y has " + std::to_string(device.targets.extent(0)) + " rows, X has " + std::to_string(rows));
        if (!sample_weight.is_none()) {
            device.weights.require("sample_weight", 1, bits(), device_);
            if (device.weights.extent(0) != rows)
                fail("sample_weight has " + std::to_string(device.weights.extent(0)) + " rows, X has " +
                     std::to_string(rows));
        }
        auto& batch = device.batch;
        batch = rh::cuda_abi::make<rh_cuda_batch>();
        batch.memory = RH_CUDA_MEMORY_DEVICE;
        batch.dtype = dtype_;
        batch.rows = rows;
        batch.features = device.x.extent(1);
        batch.X = device.x.data();
        batch.y = device.targets.data();
        batch.sample_weight = sample_weight.is_none() ? nullptr : device.weights.data();
        batch.stream = 0;  // ordered by the export on the engine's stream
        last_device_pointers_ = {reinterpret_cast<std::uintptr_t>(batch.X), reinterpret_cast<std::uintptr_t>(batch.y),
                                 reinterpret_cast<std::uintptr_t>(batch.sample_weight)};
        return device;
    }

    std::pair<CudaUpdateDiagnostics, rh::core::StateCounters> run_update(const rh_cuda_batch& batch,
                                                                          const rh::core::SolverConfig& config,
                                                                          void* out) {
        const rh_cuda_solver_config abi = abi_config(config);
        rh_cuda_diagnostics result;
        {
            nb::gil_scoped_release released;
            result = engine_.update(batch, abi, out);
        }
        return {diagnostics_of(result), counters()};
    }

    // update_batches: one native call over the batch's slices, a diagnostics per slice.
    std::pair<std::vector<CudaUpdateDiagnostics>, rh::core::StateCounters> run_update_batches(
        const rh_cuda_batch& batch, std::int64_t batch_size, const rh::core::SolverConfig& config, void* out) {
        if (batch_size < 1) fail("batch_size must be a positive integer");
        const rh_cuda_solver_config abi = abi_config(config);
        std::vector<rh_cuda_diagnostics> results;
        {
            nb::gil_scoped_release released;
            results = engine_.update_batches(batch, batch_size, abi, out);
        }
        std::vector<CudaUpdateDiagnostics> diagnostics;
        diagnostics.reserve(results.size());
        for (const rh_cuda_diagnostics& result : results) diagnostics.push_back(diagnostics_of(result));
        return {diagnostics, counters()};
    }

    void check_host(const HostArray& array, std::int64_t size, const char* name) const {
        if (static_cast<std::int64_t>(array.size()) != size)
            fail(std::string(name) + " must have " + std::to_string(size) + " values");
        dtype_of(array, name);
    }

    int32_t dtype_of(const HostArray& array, const char* name) const {
        const bool f64 = array.dtype() == nb::dtype<double>(), f32 = array.dtype() == nb::dtype<float>();
        if ((dtype_ == RH_CUDA_FLOAT64 && !f64) || (dtype_ == RH_CUDA_FLOAT32 && !f32))
            fail(std::string(name) + " must be of the engine's dtype");
        return dtype_;
    }

    uint8_t bits() const { return dtype_ == RH_CUDA_FLOAT64 ? 64 : 32; }

    int32_t dtype_;
    std::int64_t d_;
    int device_;
    std::array<std::uintptr_t, 3> last_device_pointers_{};
    rh::cuda_abi::Engine engine_;
};

}  // namespace

NB_MODULE(_renewable_huber_native_cuda, m) {
    m.doc() = "renewable-huber CUDA engine (over its C ABI)";
    m.attr("__version__") = RH_VERSION_STRING;
    m.attr("ABI_VERSION") = RH_NATIVE_ABI_VERSION;
    m.attr("CUDA_ABI_VERSION") = RH_CUDA_ABI_VERSION;
    PyObject* engine_error = rh::python::bind_engine_error(m, "_renewable_huber_native_cuda.EngineError");
    nb::register_exception_translator(
        [](const std::exception_ptr& p, void* type) {
            try {
                std::rethrow_exception(p);
            } catch (const rh::cuda_abi::CudaEngineError& error) {
                const char* status = error.status() == RH_CUDA_ABI_MISMATCH
                                         ? "abi_mismatch"
                                         : rh::core::status_name(static_cast<rh::core::Status>(error.status()));
                rh::python::raise_engine_error(static_cast<PyObject*>(type), error.what(), status);
            }
        },
        engine_error);
    rh::python::bind_core_types(m);
    nb::exception<rh::python::DlpackContractError>(m, "DlpackContractError", PyExc_TypeError);

    nb::class_<CudaUpdateDiagnostics, rh::core::UpdateDiagnostics>(m, "CudaUpdateDiagnostics")
        .def_ro("host_syncs", &CudaUpdateDiagnostics::host_syncs)
        .def_ro("solver_path", &CudaUpdateDiagnostics::solver_path);

    // The capsule rules of dlpack_import.hpp on any device type, for the
    // host-side tests (NumPy's capsules): consumes the capsule, checks it,
    // releases it; returns what was read.
    m.def(
        "_check_dlpack_capsule",
        [](nb::handle capsule, const std::string& what, int ndim, int bits, int device_type, int device_id,
           bool writable) {
            rh::python::ImportedTensor tensor = rh::python::ImportedTensor::consume(capsule.ptr(), what);
            tensor.require(what, ndim, static_cast<uint8_t>(bits), device_id, device_type);
            if (writable) tensor.require_writable(what);
            nb::list shape;
            for (int axis = 0; axis < ndim; ++axis) shape.append(tensor.extent(axis));
            nb::dict out;
            out["shape"] = nb::tuple(shape);
            out["data"] = reinterpret_cast<std::uintptr_t>(tensor.data());
            out["versioned"] = tensor.versioned();
            out["read_only"] = tensor.read_only();
            return out;
        },
        "capsule"_a, "what"_a, "ndim"_a, "bits"_a, "device_type"_a, "device_id"_a, "writable"_a = false);
    m.def("library_abi_version", &rh_cuda_abi_version, "the engine library's ABI version (major << 16 | minor)");
    m.def("runtime_info", &rh::python::runtime_info_dict);
    m.def("device_info", &rh::python::device_info_dict, "device"_a);

    nb::class_<Engine>(m, "Engine")
        .def(
            "__init__",
            [](Engine* self, int device, const std::string& dtype, std::int64_t n_features, bool fit_intercept,
               bool cuda_graphs, bool fast_math, std::uint64_t stream, int solver_choice, int block_tiles) {
                new (self) Engine(device, dtype, n_features, fit_intercept, cuda_graphs, fast_math, stream,
                                  solver_choice, block_tiles);
            },
            "device"_a, "dtype"_a, "n_features"_a, "fit_intercept"_a, "cuda_graphs"_a = false, "fast_math"_a = false,
            "stream"_a = 0, "solver_choice"_a = 0, "block_tiles"_a = 0)
        .def("restore", &Engine::restore, "coefficients"_a.noconvert(), "information"_a.noconvert(), "counters"_a,
             "meat"_a.noconvert().none() = nb::none(),
             "the engine's state from host arrays; with a meat the engine accumulates it (amendment 0003)")
        .def("copy_state", &Engine::copy_state, "coefficients"_a.noconvert(), "information"_a.noconvert(),
             "meat"_a.noconvert().none() = nb::none())
        .def("counters", &Engine::counters)
        .def("revert", &Engine::revert, "puts back the state the last successful update replaced (once)")
        .def("update_host", &Engine::update_host, "X"_a.noconvert(), "y"_a.noconvert(),
             "sample_weight"_a.noconvert().none(), "config"_a, "out_coefficients"_a.noconvert())
        .def("update_dlpack", &Engine::update_dlpack, "X"_a, "y"_a, "sample_weight"_a.none(), "config"_a,
             "out_coefficients"_a.noconvert())
        .def("update_host_batches", &Engine::update_host_batches, "X"_a.noconvert(), "y"_a.noconvert(),
             "sample_weight"_a.noconvert().none(), "config"_a, "batch_size"_a, "out_coefficients"_a.noconvert(),
             "consecutive slices of batch_size rows in one call: a diagnostics per slice, all slices or none")
        .def("update_dlpack_batches", &Engine::update_dlpack_batches, "X"_a, "y"_a, "sample_weight"_a.none(),
             "config"_a, "batch_size"_a, "out_coefficients"_a.noconvert(),
             "consecutive slices of batch_size rows of a device batch in one call")
        .def("predict_host", &Engine::predict_host, "X"_a.noconvert(), "out"_a.noconvert())
        .def("predict_dlpack", &Engine::predict_dlpack, "X"_a, "out"_a)
        .def_prop_ro("stream", &Engine::stream, "the engine's cudaStream_t (device batches are exported on it)")
        .def("synchronize", &Engine::synchronize)
        .def_prop_ro("last_device_pointers", &Engine::last_device_pointers)
        .def("features", &Engine::features)
        .def_prop_ro("n_parameters", &Engine::n_parameters);
}

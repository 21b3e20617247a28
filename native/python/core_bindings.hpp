// nanobind bindings of the core types that every engine module shares
// (the CPU module now, the CUDA module too): the error translation, the
// solver configuration, the state counters and the contract's diagnostics.
// Each module calls bind_core_types once, in its own nanobind domain
// (NB_DOMAIN in python/CMakeLists.txt): the types and exception translators
// of one module never stand for another's, with the same names and fields
// in every module.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "core/diagnostics.hpp"
#include "core/solver_config.hpp"
#include "core/state_view.hpp"
#include "core/status.hpp"

namespace rh::python {

namespace nb = nanobind;

inline core::Penalty parse_penalty(const std::string& penalty) {
    if (penalty == "none") return core::Penalty::none;
    if (penalty == "l1") return core::Penalty::l1;
    throw core::EngineError(core::Status::invalid_argument, "penalty must be either 'none' or 'l1'");
}

// Raises `type` (an EngineError) with args (message, status name).
inline void raise_engine_error(PyObject* type, const char* message, const char* status) {
    PyObject* args = Py_BuildValue("(ss)", message, status);
    PyErr_SetObject(type, args);
    Py_XDECREF(args);
}

// EngineError(message, status name) in Python, derived from RuntimeError, as
// the module's attribute "EngineError"; core::EngineError is translated to
// it. Returns the type (for the module's own translators).
inline PyObject* bind_engine_error(nb::module_& m, const char* qualified_name) {
    PyObject* engine_error = PyErr_NewExceptionWithDoc(
        qualified_name, "An engine failure: args = (message, status name).", PyExc_RuntimeError, nullptr);
    m.attr("EngineError") = nb::handle(engine_error);
    nb::register_exception_translator(
        [](const std::exception_ptr& p, void* type) {
            try {
                std::rethrow_exception(p);
            } catch (const core::EngineError& error) {
                raise_engine_error(static_cast<PyObject*>(type), error.what(), core::status_name(error.status()));
            }
        },
        engine_error);
    return engine_error;
}

inline void bind_core_types(nb::module_& m) {
    using namespace nb::literals;
    nb::class_<core::SolverConfig>(m, "SolverConfig")
        .def(
            "__init__",
            [](core::SolverConfig* self, double tau, const std::string& penalty, double lambda_scale,
               double bandwidth_scale, bool fit_intercept, int max_iter, double tol, double ridge) {
                new (self) core::SolverConfig{tau, parse_penalty(penalty), lambda_scale, bandwidth_scale,
                                              fit_intercept, max_iter, tol, ridge};
            },
            "tau"_a, "penalty"_a, "lambda_scale"_a, "bandwidth_scale"_a, "fit_intercept"_a, "max_iter"_a, "tol"_a,
            "ridge"_a);

    nb::class_<core::StateCounters>(m, "StateCounters")
        .def(
            "__init__",
            [](core::StateCounters* self, std::int64_t n_features_in, bool fit_intercept, std::int64_t n_samples_seen,
               std::int64_t batch_count, double previous_lambda, double weight_sum) {
                new (self) core::StateCounters{n_features_in, fit_intercept, n_samples_seen, batch_count,
                                               previous_lambda, weight_sum};
            },
            "n_features_in"_a, "fit_intercept"_a, "n_samples_seen"_a, "batch_count"_a, "previous_lambda"_a,
            "weight_sum"_a)
        .def_ro("n_features_in", &core::StateCounters::n_features_in)
        .def_ro("fit_intercept", &core::StateCounters::fit_intercept)
        .def_ro("n_samples_seen", &core::StateCounters::n_samples_seen)
        .def_ro("batch_count", &core::StateCounters::batch_count)
        .def_ro("previous_lambda", &core::StateCounters::previous_lambda)
        .def_ro("weight_sum", &core::StateCounters::weight_sum);

    nb::class_<core::UpdateDiagnostics>(m, "UpdateDiagnostics")
        .def_ro("iterations", &core::UpdateDiagnostics::iterations)
        .def_ro("converged", &core::UpdateDiagnostics::converged)
        .def_ro("objective", &core::UpdateDiagnostics::objective)
        .def_ro("lambda_value", &core::UpdateDiagnostics::lambda_value)
        .def_ro("bandwidth", &core::UpdateDiagnostics::bandwidth)
        .def_ro("cholesky_solves", &core::UpdateDiagnostics::cholesky_solves)
        .def_ro("lu_solves", &core::UpdateDiagnostics::lu_solves)
        .def_ro("least_squares_solves", &core::UpdateDiagnostics::least_squares_solves)
        .def_prop_ro("solve_route",
                     [](const core::UpdateDiagnostics& d) { return std::string(core::solve_route_name(d.solve_route)); })
        .def_prop_ro("used_least_squares_fallback", &core::UpdateDiagnostics::used_least_squares_fallback)
        .def_prop_ro("stop_reason",
                     [](const core::UpdateDiagnostics& d) { return std::string(core::stop_reason_name(d.stop_reason)); })
        .def_ro("majorizer_steps", &core::UpdateDiagnostics::majorizer_steps);
}

}  // namespace rh::python

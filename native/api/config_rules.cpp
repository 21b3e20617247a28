#include "config_rules.hpp"

#include <cmath>
#include <limits>

#include "renewable_huber/errors.hpp"

namespace renewable_huber::detail {

namespace {

// config.py's MAX_INT32: max_iter, n_jobs and a CUDA device index fit a C int.
constexpr std::int64_t kMaxInt32 = 2147483647;

const Json* get(const JsonObject& config, const char* key) {
    for (const auto& [name, value] : config)
        if (name == key) return &value;
    return nullptr;
}

// A real that is a finite double (not a bool: JSON's bools are not numbers).
bool finite_real(const Json* v, double& out) {
    const JsonNumber* n = v != nullptr ? v->as_number() : nullptr;
    const auto d = n != nullptr ? json_double(*n) : std::nullopt;
    if (!d || !std::isfinite(*d)) return false;
    out = *d;
    return true;
}

// An integral number: its value, clamped to the int64 range (the ranges below refuse it).
bool integral(const Json* v, std::int64_t& out) {
    const JsonNumber* n = v != nullptr ? v->as_number() : nullptr;
    if (n == nullptr || !n->integral) return false;
    const auto i = json_int64(*n);
    out = i ? *i : (n->text[0] == '-' ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max());
    return true;
}

bool valid_device(const std::string& device) {
    if (device == "auto" || device == "cpu" || device == "cuda") return true;
    if (device.rfind("cuda:", 0) != 0) return false;
    const std::string index = device.substr(5);
    if (index.empty() || index.size() > 10 || (index.size() > 1 && index[0] == '0')) return false;
    for (const char c : index)
        if (c < '0' || c > '9') return false;
    return std::stoll(index) <= kMaxInt32;
}

}  // namespace

Json config_json(const Parameters& p, const std::string& dtype) {
    return Json::object({{"tau", Json::real(p.tau)},
                         {"penalty", Json::string(p.penalty)},
                         {"lambda_scale", Json::real(p.lambda_scale)},
                         {"bandwidth_scale", Json::real(p.bandwidth_scale)},
                         {"fit_intercept", Json::boolean(p.fit_intercept)},
                         {"max_iter", Json::integer(p.max_iter)},
                         {"tol", Json::real(p.tol)},
                         {"ridge", Json::real(p.ridge)},
                         {"backend", Json::string(p.backend)},
                         {"device", Json::string(p.device)},
                         {"dtype", Json::string(dtype)},
                         {"n_jobs", p.n_jobs ? Json::integer(*p.n_jobs) : Json::null()},
                         {"cuda_graphs", Json::boolean(p.cuda_graphs)},
                         {"cuda_fast_math", Json::boolean(p.cuda_fast_math)},
                         {"inference", Json::boolean(p.inference)}});
}

void validate_config(const JsonObject& config) {
    auto fail = [](const std::string& message) { throw ValidationError(message); };
    auto real_rule = [&](const char* key, bool strict, const char* message) {
        double value = 0;
        if (const Json* v = get(config, key); v != nullptr && !(finite_real(v, value) && (strict ? value > 0 : value >= 0)))
            fail(message);
    };
    auto string_of = [&](const char* key, const char* fallback) -> std::string {
        const Json* v = get(config, key);
        if (v == nullptr) return fallback;
        return v->as_string() != nullptr ? *v->as_string() : std::string("\x01");  // not a string: fails its rule
    };
    auto bool_rule = [&](const char* key, const char* message) {
        if (const Json* v = get(config, key); v != nullptr && v->as_bool() == nullptr) fail(message);
    };
    real_rule("tau", true, "tau must be greater than zero");
    const std::string penalty = string_of("penalty", "none");
    if (penalty != "none" && penalty != "l1") fail("penalty must be either 'none' or 'l1'");
    real_rule("lambda_scale", false, "lambda_scale must be non-negative");
    real_rule("bandwidth_scale", true, "bandwidth_scale must be greater than zero");
    if (const Json* v = get(config, "max_iter")) {
        std::int64_t value = 0;
        if (!(integral(v, value) && value >= 1)) fail("max_iter must be at least one");
        if (value > kMaxInt32) fail("max_iter must be at most " + std::to_string(kMaxInt32));
    }
    bool_rule("fit_intercept", "fit_intercept must be a boolean");
    real_rule("tol", true, "tol must be greater than zero");
    real_rule("ridge", false, "ridge must be non-negative");
    const std::string backend = string_of("backend", "auto");
    bool known = false;
    for (const char* name : {"auto", "numpy", "native_cpu", "cupy", "native_cuda", "torch", "tensorflow"})
        known = known || backend == name;
    if (!known) fail("unsupported backend");
    if (!valid_device(string_of("device", "auto"))) fail("device must be 'auto', 'cpu', or 'cuda'");
    const std::string dtype = string_of("dtype", "float64");
    if (dtype != "float32" && dtype != "float64") fail("dtype must be either 'float32' or 'float64'");
    if (const Json* v = get(config, "n_jobs"); v != nullptr && !v->is_null()) {
        std::int64_t value = 0;
        if (!(integral(v, value) && (value == -1 || value >= 1))) fail("n_jobs must be None, -1, or a positive integer");
        if (value > kMaxInt32)
            fail("n_jobs must be None, -1, or a positive integer of at most " + std::to_string(kMaxInt32));
    }
    bool_rule("cuda_graphs", "cuda_graphs must be a boolean");
    bool_rule("cuda_fast_math", "cuda_fast_math must be a boolean");
    const Json* fast = get(config, "cuda_fast_math");
    if (backend == "native_cuda" && fast != nullptr && *fast->as_bool() && dtype != "float32")
        fail("cuda_fast_math requires dtype='float32'");
    bool_rule("inference", "inference must be a boolean");
}

Parameters parameters_from_config(const JsonObject& config) {
    Parameters p;
    double real = 0;
    std::int64_t whole = 0;
    if (finite_real(get(config, "tau"), real)) p.tau = real;
    if (const Json* v = get(config, "penalty")) p.penalty = *v->as_string();
    if (finite_real(get(config, "lambda_scale"), real)) p.lambda_scale = real;
    if (finite_real(get(config, "bandwidth_scale"), real)) p.bandwidth_scale = real;
    if (const Json* v = get(config, "fit_intercept")) p.fit_intercept = *v->as_bool();
    if (integral(get(config, "max_iter"), whole)) p.max_iter = whole;
    if (finite_real(get(config, "tol"), real)) p.tol = real;
    if (finite_real(get(config, "ridge"), real)) p.ridge = real;
    if (const Json* v = get(config, "backend")) p.backend = *v->as_string();
    if (const Json* v = get(config, "device")) p.device = *v->as_string();
    if (integral(get(config, "n_jobs"), whole)) p.n_jobs = whole;
    if (const Json* v = get(config, "cuda_graphs")) p.cuda_graphs = *v->as_bool();
    if (const Json* v = get(config, "cuda_fast_math")) p.cuda_fast_math = *v->as_bool();
    if (const Json* v = get(config, "inference")) p.inference = *v->as_bool();
    return p;
}

}  // namespace renewable_huber::detail

#include "checkpoint.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <system_error>
#include <type_traits>

#include "config_rules.hpp"
#include "core/invariants.hpp"
#include "json.hpp"
#include "npz.hpp"
#include "renewable_huber/errors.hpp"

namespace renewable_huber::detail {

namespace {

constexpr std::int64_t kCounterMax = std::numeric_limits<std::int64_t>::max();

// A counter as the file holds it: an int64, or beyond the int64 range (a
// hostile file's 2**70), which the state's checks refuse by name.
struct Counter {
    std::int64_t value = 0;
    int beyond = 0;  // +1 above, -1 below the int64 range
};

bool negative(const Counter& c) { return c.beyond < 0 || (c.beyond == 0 && c.value < 0); }

// The checks of state.py's validate(), in its order, over a state whose
// counters may lie beyond int64 and whose arrays' shapes are given: the
// shapes and the int64 range here, then core's checks of the counters and
// values (the engines' own, with the same messages).
struct StateShape {
    std::vector<std::int64_t> coefficients, information;
    std::optional<std::vector<std::int64_t>> meat;
};

void validate(const Counter& n_features_in, bool fit_intercept, const Counter& n_samples_seen,
              const Counter& batch_count, double previous_lambda, std::optional<double> weight_sum,
              const StateShape& shape, const std::vector<double>& coefficients, const std::vector<double>& information,
              const std::optional<std::vector<double>>& meat) {
    auto fail = [](const std::string& message) { throw ValidationError(message); };
    // d as Python computes it (a counter beyond int64 never matches an array's shape).
    const bool huge = n_features_in.beyond != 0;
    const std::int64_t d = huge ? -1 : n_features_in.value + (fit_intercept ? 1 : 0);
    if (huge || shape.coefficients != std::vector<std::int64_t>{d})
        fail("state coefficient shape does not match feature metadata");
    if (shape.information != std::vector<std::int64_t>{d, d})
        fail("state information shape does not match feature metadata");
    if (shape.meat && *shape.meat != std::vector<std::int64_t>{d, d})
        fail("state meat shape does not match feature metadata");
    if (negative(n_samples_seen) || negative(batch_count) || negative(n_features_in))
        fail("state counters must be non-negative");
    for (const auto& [name, counter] : {std::pair<const char*, const Counter&>{"n_samples_seen", n_samples_seen},
                                        {"batch_count", batch_count}, {"n_features_in", n_features_in}})
        if (counter.beyond > 0)
            fail(std::string("state ") + name + " must be at most " + std::to_string(kCounterMax) +
                 " (a signed 64-bit counter)");
    // Format 1 has no weight sum: the row count stands for it (and passes its checks).
    const rh::core::StateCounters counters{n_features_in.value, fit_intercept, n_samples_seen.value, batch_count.value,
                                           previous_lambda,
                                           weight_sum.value_or(static_cast<double>(n_samples_seen.value))};
    try {
        rh::core::check_counters(counters);
        rh::core::check_state_values(rh::core::StateView<double>{coefficients.data(), information.data(), counters,
                                                                 meat ? meat->data() : nullptr});
    } catch (const rh::core::EngineError& error) {
        fail(error.what());
    }
}

// Values decoded once as float64 (for the checks) in the loading dtype, as Python's load casts them.
template <class T>
std::vector<T> in_dtype(std::vector<double>&& values) {
    if constexpr (std::is_same_v<T, double>) {
        return std::move(values);
    } else {
        return std::vector<T>(values.begin(), values.end());
    }
}

// ---------------------------------------------------------------- JSON fields
const Json& member(const Json& object, const char* key) {
    const Json* value = object.find(key);
    if (value == nullptr) throw ValidationError(kCorrupted);
    return *value;
}

Counter counter(const Json& value) {
    const JsonNumber* n = value.as_number();
    if (n == nullptr || !n->integral) throw ValidationError(kCorrupted);
    if (const auto v = json_int64(*n)) return {*v, 0};
    return {0, n->text[0] == '-' ? -1 : +1};
}

double real(const Json& value) {
    const JsonNumber* n = value.as_number();
    if (n == nullptr) throw ValidationError(kCorrupted);
    const auto v = json_double(*n);
    if (!v) throw ValidationError(kCorrupted);
    return *v;
}

std::string write_reason(const std::system_error& error, const std::string& path) {
    std::error_code ec;
    const bool kept = std::filesystem::exists(path, ec);
    return "cannot write the checkpoint '" + path + "': " + error.code().message() + "; " +
           (kept ? "the previous file there is unchanged" : "nothing was written");
}

template <class T>
const char* dtype_name() {
    return sizeof(T) == sizeof(double) ? "float64" : "float32";
}

}  // namespace

template <class T>
Checkpoint<T> read_checkpoint(const std::string& path, const std::string* backend) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw CheckpointFileError("No such checkpoint: '" + path + "'");
    // Decoding (serialization.read_checkpoint): any failure is one message.
    std::map<std::string, NpyArray> arrays;
    Json metadata;
    try {
        arrays = read_npz(path);
    } catch (const std::exception&) {
        throw ValidationError(kCorrupted);
    }
    for (const auto& [name, array] : arrays)
        if (name != "coefficients" && name != "information" && name != "meat" && name != "metadata")
            throw ValidationError(kCorrupted);
    if (arrays.count("coefficients") == 0 || arrays.count("information") == 0 || arrays.count("metadata") == 0)
        throw ValidationError(kCorrupted);
    try {
        metadata = parse_json(npy_unicode_text(arrays.at("metadata")));
    } catch (const std::exception&) {
        throw ValidationError(kCorrupted);
    }
    if (metadata.as_object() == nullptr) throw ValidationError(kCorrupted);
    for (const char* name : {"coefficients", "information", "meat"})
        if (arrays.count(name) != 0 && !npy_is_float(arrays.at(name))) throw ValidationError(kCorrupted);
    const Json* version_json = metadata.find("format_version");
    const JsonNumber* version_number = version_json != nullptr ? version_json->as_number() : nullptr;
    const std::int64_t version =
        version_number != nullptr ? json_int64(*version_number).value_or(0) : std::int64_t{0};
    if (arrays.count("meat") != 0 && (version == 1 || version == 2)) throw ValidationError(kCorrupted);
    if (version < 1 || version > kFormatVersion) throw ValidationError(kUnsupported);
    const Json* config = metadata.find("config");
    static const char* known[] = {"tau", "penalty", "lambda_scale", "bandwidth_scale", "fit_intercept",
                                  "max_iter", "tol", "ridge", "backend", "device", "dtype", "n_jobs",
                                  "cuda_graphs", "cuda_fast_math", "inference"};
    if (config == nullptr || config->as_object() == nullptr) throw ValidationError(kBadConfig);
    for (const auto& [key, value] : *config->as_object()) {
        bool ok = false;
        for (const char* name : known) ok = ok || key == name;
        if (!ok) throw ValidationError(kBadConfig);
    }
    // The metadata's fields (serialization._payload_from_metadata).
    const Json& intercept = member(metadata, "fit_intercept");
    if (intercept.as_bool() == nullptr) throw ValidationError(kCorrupted);
    const bool fit_intercept = *intercept.as_bool();
    const Counter n_samples_seen = counter(member(metadata, "n_samples_seen"));
    std::optional<double> weight_sum;
    std::optional<std::int64_t> converged;
    const Json* names = nullptr;
    const Counter batch_count = counter(member(metadata, "batch_count"));
    if (version >= 3) {
        const Json* c = metadata.find("converged_batches");
        if (c != nullptr && !c->is_null()) {
            const Counter value = counter(*c);
            if (negative(value) || value.beyond > 0 ||
                (!negative(batch_count) && batch_count.beyond == 0 && value.value > batch_count.value))
                throw ValidationError(kCorrupted);
            converged = value.value;
        }
    }
    if (version >= 2) {
        const Json* w = metadata.find("weight_sum");
        if (w != nullptr && !w->is_null()) weight_sum = real(*w);
        names = metadata.find("feature_names_in");
        if (names != nullptr && !names->is_null() && names->as_array() == nullptr) throw ValidationError(kCorrupted);
    }
    const double previous_lambda = real(member(metadata, "previous_lambda"));
    const Counter n_features_in = counter(member(metadata, "n_features_in"));

    // The state's checks (state.validate), then the parameters', in Python's order.
    const NpyArray& c_array = arrays.at("coefficients");
    const NpyArray& i_array = arrays.at("information");
    StateShape shape{c_array.shape, i_array.shape, std::nullopt};
    std::optional<std::vector<double>> meat;
    if (arrays.count("meat") != 0) {
        shape.meat = arrays.at("meat").shape;
        meat = npy_values<double>(arrays.at("meat"));
    }
    std::vector<double> coefficients = npy_values<double>(c_array), information = npy_values<double>(i_array);
    validate(n_features_in, fit_intercept, n_samples_seen, batch_count, previous_lambda, weight_sum, shape,
             coefficients, information, meat);
    // Overrides first, as Python's load applies them: a backend without a device moves to device="auto".
    JsonObject stored = *config->as_object();
    if (backend != nullptr) {
        std::erase_if(stored, [](const auto& member) { return member.first == "backend" || member.first == "device"; });
        stored.emplace_back("backend", Json::string(*backend));
        stored.emplace_back("device", Json::string("auto"));
    }
    std::erase_if(stored, [](const auto& member) { return member.first == "dtype"; });
    stored.emplace_back("dtype", Json::string(dtype_name<T>()));  // the loading dtype (Python: load(dtype=...))
    validate_config(stored);
    const Parameters parameters = parameters_from_config(stored);
    if (parameters.fit_intercept != fit_intercept) throw ValidationError("checkpoint fit_intercept does not match configuration");

    Checkpoint<T> out{parameters, {}};
    State<T>& s = out.state;
    s.coefficients = in_dtype<T>(std::move(coefficients));
    s.information = in_dtype<T>(std::move(information));
    if (meat) s.meat = in_dtype<T>(std::move(*meat));
    s.n_features_in = n_features_in.value;
    s.fit_intercept = fit_intercept;
    s.n_samples_seen = n_samples_seen.value;
    s.batch_count = batch_count.value;
    s.previous_lambda = previous_lambda;
    s.weight_sum = weight_sum ? *weight_sum : static_cast<double>(n_samples_seen.value);  // format 1: the row count
    s.converged_batches = converged;
    if (names != nullptr && !names->is_null()) {
        const JsonArray& list = *names->as_array();
        if (static_cast<std::int64_t>(list.size()) != s.n_features_in)
            throw ValidationError("checkpoint feature names do not match feature metadata");
        for (const Json& name : list) {
            if (name.as_string() == nullptr) throw ValidationError("checkpoint feature names do not match feature metadata");
            s.feature_names.push_back(*name.as_string());
        }
    }
    return out;
}

template <class T>
void write_checkpoint(const std::string& path, const Parameters& parameters, const State<T>& s) {
    const std::int64_t d = s.n_parameters();
    JsonArray names;
    for (const std::string& name : s.feature_names) names.push_back(Json::string(name));
    const Json metadata = Json::object({
        {"format_version", Json::integer(kFormatVersion)},
        {"config", config_json(parameters, dtype_name<T>())},
        {"n_samples_seen", Json::integer(s.n_samples_seen)},
        {"batch_count", Json::integer(s.batch_count)},
        {"previous_lambda", Json::real(s.previous_lambda)},
        {"n_features_in", Json::integer(s.n_features_in)},
        {"fit_intercept", Json::boolean(s.fit_intercept)},
        {"weight_sum", Json::real(s.weight_sum)},
        {"feature_names_in", s.feature_names.empty() ? Json::null() : Json::array(std::move(names))},
        {"converged_batches", s.converged_batches ? Json::integer(*s.converged_batches) : Json::null()},
    });
    std::vector<std::pair<std::string, NpyArray>> arrays{{"coefficients", npy_array(s.coefficients, {d})},
                                                         {"information", npy_array(s.information, {d, d})}};
    if (s.meat) arrays.emplace_back("meat", npy_array(*s.meat, {d, d}));
    arrays.emplace_back("metadata", npy_unicode_scalar(write_json(metadata)));
    try {
        write_npz(path, arrays);
    } catch (const std::system_error& error) {  // std::filesystem's errors too
        throw CheckpointFileError(write_reason(error, path));
    }
}

template Checkpoint<float> read_checkpoint<float>(const std::string&, const std::string*);
template Checkpoint<double> read_checkpoint<double>(const std::string&, const std::string*);
template void write_checkpoint<float>(const std::string&, const Parameters&, const State<float>&);
template void write_checkpoint<double>(const std::string&, const Parameters&, const State<double>&);

}  // namespace renewable_huber::detail

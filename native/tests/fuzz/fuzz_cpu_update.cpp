// libFuzzer target: the CPU engine's update entry point with every input it
// takes from outside (issue 18 item 5): the solver configuration, the state
// counters, the state's coefficients and information matrix, and the batch
// (X, y, optional weights), all from the fuzzer's bytes, NaN, infinities,
// negative and huge values included. A call must either succeed with a
// finite next state or throw core::EngineError (the documented failures:
// invalid argument, non-finite input, invalid weights, invalid state, ...);
// any other exception, a crash, a sanitizer report or a hang is a finding.
//
// Built with clang (-fsanitize=fuzzer,address,undefined) by
// `make fuzz-native` (native/CMakeLists.txt RH_FUZZ); the seed corpus is
// tests/fuzz/corpus/native_cpu_update/.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <vector>

#include "core/status.hpp"
#include "cpu/engine.hpp"

namespace {

// Reads typed values from the fuzzer's bytes; zeros once they run out.
class Bytes {
public:
    Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    template <class T>
    T take() {
        T value{};
        const std::size_t n = sizeof(T) <= size_ - used_ ? sizeof(T) : size_ - used_;
        std::memcpy(&value, data_ + used_, n);
        used_ += n;
        return value;
    }
    std::size_t left() const { return size_ - used_; }

private:
    const std::uint8_t* data_;
    std::size_t size_, used_ = 0;
};

template <class T>
void run(Bytes& in, std::uint8_t flags) {
    const std::int64_t features = 1 + in.take<std::uint8_t>() % 6;
    const std::int64_t rows = in.take<std::uint8_t>() % 48;  // 0 rows is a documented refusal
    const bool intercept = flags & 4, weighted = flags & 8;
    rh::core::SolverConfig config;
    config.tau = in.take<double>();
    config.penalty = (flags & 2) ? rh::core::Penalty::l1 : rh::core::Penalty::none;
    config.lambda_scale = in.take<double>();
    config.bandwidth_scale = in.take<double>();
    config.fit_intercept = intercept;
    config.max_iter = static_cast<int>(in.take<std::int16_t>() % 64);  // bounded: every run ends quickly
    config.tol = in.take<double>();
    config.ridge = in.take<double>();
    if (flags & 16) {  // half the time a plausible configuration, so the solvers are reached
        config.tau = 0.5 + std::fabs(std::fmod(config.tau, 3.0));
        config.lambda_scale = config.bandwidth_scale = 1.0;
        config.tol = 1e-6;
        config.ridge = 1e-8;
        if (config.max_iter < 1) config.max_iter = 30;
    }
    rh::core::StateCounters counters;
    counters.n_features_in = (flags & 32) ? in.take<std::int64_t>() : features;
    counters.fit_intercept = (flags & 64) ? !intercept : intercept;
    counters.n_samples_seen = in.take<std::int64_t>();
    counters.batch_count = in.take<std::int64_t>();
    counters.previous_lambda = in.take<double>();
    counters.weight_sum = in.take<double>();
    if (flags & 128) {  // a plausible fresh or running state
        counters.n_samples_seen = counters.batch_count = 0;
        counters.previous_lambda = counters.weight_sum = 0.0;
    }
    const std::int64_t d = features + (intercept ? 1 : 0);
    std::vector<T> theta(d), information(d * d), X(rows * features), y(rows), w(rows);
    for (auto* values : {&theta, &information, &X, &y, &w})
        for (T& v : *values) v = static_cast<T>(in.take<double>());
    if (flags & 128) std::fill(information.begin(), information.end(), T(0));
    rh::core::StateView<T> state{theta.data(), information.data(), counters};
    rh::core::BatchView<T> batch{X.data(), y.data(), weighted ? w.data() : nullptr, rows, features};
    std::vector<T> next_theta(d), next_information(d * d);
    rh::core::StateOutput<T> next{next_theta.data(), next_information.data(), {}};
    rh::cpu::Engine<T> engine(1);
    try {
        engine.update(state, batch, config, next);
    } catch (const rh::core::EngineError&) {
        return;  // a documented refusal
    }
    for (T v : next_theta)
        if (!std::isfinite(static_cast<double>(v))) std::terminate();  // a success must be finite
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Bytes in(data, size);
    const std::uint8_t flags = in.take<std::uint8_t>();
    if (flags & 1)
        run<float>(in, flags);
    else
        run<double>(in, flags);
    return 0;
}

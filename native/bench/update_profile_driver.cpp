// A profiling driver: replays one batch, read from raw files, through
// Engine<T>::update in a loop, with no Python in the process, so that `perf`
// sees only the engine. Writes the mean time per update and the diagnostics.
//
//   rh_update_profile_driver X.bin y.bin rows features float64|float32 none|l1 threads seconds [gap_us]
//
// X.bin is rows x features row-major, y.bin rows values, both in the named
// dtype (scripts/profiling/profile_native_cpu_update.sh writes them with the
// benchmark's data generator). threads 0 is n_jobs=None; gap_us spins the
// caller between updates (like the estimator's own work between calls).
// RH_PRINT_STATE=1 also prints the final coefficients (hex floats) and the
// information matrix's sum, to compare two builds bit for bit.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cpu/engine.hpp"

namespace {

template <class T>
std::vector<T> read_values(const char* path, std::int64_t count) {
    std::vector<T> values(static_cast<std::size_t>(count));
    std::ifstream in(path, std::ios::binary);
    in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(count * sizeof(T)));
    if (!in) {
        std::fprintf(stderr, "cannot read %lld values from %s\n", static_cast<long long>(count), path);
        std::exit(2);
    }
    return values;
}

template <class T>
int replay(char** argv) {
    const std::int64_t rows = std::atoll(argv[3]), features = std::atoll(argv[4]);
    const bool l1 = std::string(argv[6]) == "l1";
    const int threads = std::atoi(argv[7]);
    const double seconds = std::atof(argv[8]);
    const double gap_us = argv[9] != nullptr ? std::atof(argv[9]) : 0.0;
    const auto X = read_values<T>(argv[1], rows * features);
    const auto y = read_values<T>(argv[2], rows);
    const std::int64_t d = features + 1;

    rh::cpu::Engine<T> engine(threads);
    rh::core::SolverConfig config;
    config.penalty = l1 ? rh::core::Penalty::l1 : rh::core::Penalty::none;
    std::vector<T> coef(d, T(0)), info(d * d, T(0)), coef_out(d), info_out(d * d);
    const rh::core::StateView<T> empty{coef.data(), info.data(), {features, true, 0, 0, 0.0, 0.0}};
    const rh::core::BatchView<T> batch{X.data(), y.data(), nullptr, rows, features};
    rh::core::StateOutput<T> next{coef_out.data(), info_out.data(), {}};

    auto diagnostics = engine.update(empty, batch, config, next);
    std::int64_t updates = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0.0;
    double in_updates = 0.0;
    while (elapsed < seconds) {
        const auto before = std::chrono::steady_clock::now();
        diagnostics = engine.update(empty, batch, config, next);
        const auto after = std::chrono::steady_clock::now();
        in_updates += std::chrono::duration<double>(after - before).count();
        while (std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - after).count() < gap_us) {
        }
        ++updates;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    std::printf("%s %s threads=%d: %.1f us/update over %lld updates, iterations %lld, converged %d, "
                "dispatches %lld (late %lld), threads at end %d\n",
                argv[5], argv[6], engine.threads(), in_updates / static_cast<double>(updates) * 1e6,
                static_cast<long long>(updates), static_cast<long long>(diagnostics.iterations),
                static_cast<int>(diagnostics.converged), static_cast<long long>(diagnostics.parallel_dispatches),
                static_cast<long long>(diagnostics.late_dispatches), static_cast<int>(diagnostics.threads_at_end));
    if (std::getenv("RH_PRINT_STATE")) {
        for (std::int64_t j = 0; j < d; ++j) std::printf("%a ", static_cast<double>(coef_out[j]));
        double info_sum = 0.0;
        for (auto v : info_out) info_sum += static_cast<double>(v);
        std::printf("| %a\n", info_sum);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 9 && argc != 10) {
        std::fprintf(stderr,
                     "usage: %s X.bin y.bin rows features float64|float32 none|l1 threads seconds [gap_us]\n", argv[0]);
        return 2;
    }
    return std::string(argv[5]) == "float32" ? replay<float>(argv) : replay<double>(argv);
}

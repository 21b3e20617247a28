// Streams a CSV file from standard input through renewable_huber::Regressor
// in batches, then prints the coefficients and the last batch's diagnostics
// and writes a checkpoint the Python package reads (docs/cpp.md).
//
//   stream_csv --target y [--batch-size 1000] [--checkpoint-in in.npz] [--checkpoint-out out.npz] < data.csv
//
// The CSV has a header; every column but the target is a feature, in order.
// With --checkpoint-in the stream resumes from a checkpoint (written here or
// by Python) and the CSV holds the rows that follow.
#include <renewable_huber/renewable_huber.hpp>

#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> fields;
    std::stringstream stream(line);
    std::string field;
    while (std::getline(stream, field, ',')) fields.push_back(field);
    return fields;
}

int usage() {
    std::cerr << "usage: stream_csv --target COLUMN [--batch-size N] [--checkpoint-in PATH] [--checkpoint-out PATH]"
                 " < data.csv\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string target, checkpoint_in, checkpoint_out;
    std::int64_t batch_size = 1000;
    for (int k = 1; k < argc; ++k) {
        const std::string arg = argv[k];
        if (k + 1 >= argc) return usage();
        if (arg == "--target") target = argv[++k];
        else if (arg == "--batch-size") batch_size = std::atoll(argv[++k]);
        else if (arg == "--checkpoint-in") checkpoint_in = argv[++k];
        else if (arg == "--checkpoint-out") checkpoint_out = argv[++k];
        else return usage();
    }
    if (target.empty() || batch_size < 1) return usage();

    std::string line;
    if (!std::getline(std::cin, line)) {
        std::cerr << "stream_csv: no header line\n";
        return 1;
    }
    const std::vector<std::string> header = split(line);
    std::vector<std::string> features;
    std::optional<std::size_t> target_column;
    for (std::size_t j = 0; j < header.size(); ++j) {
        if (header[j] == target) target_column = j;
        else features.push_back(header[j]);
    }
    if (!target_column) {
        std::cerr << "stream_csv: no column named " << target << "\n";
        return 1;
    }
    const auto p = static_cast<std::int64_t>(features.size());

    try {
        auto model = checkpoint_in.empty() ? renewable_huber::Regressor<double>()
                                           : renewable_huber::Regressor<double>::load(checkpoint_in);
        std::vector<double> X, y;
        std::int64_t rows = 0, batches = 0;
        auto absorb = [&] {
            model.partial_fit(renewable_huber::matrix(X, rows, p), renewable_huber::vector(y), {}, features);
            ++batches;
            X.clear();
            y.clear();
            rows = 0;
        };
        while (std::getline(std::cin, line)) {
            if (line.empty()) continue;
            const std::vector<std::string> fields = split(line);
            if (fields.size() != header.size()) {
                std::cerr << "stream_csv: a row with " << fields.size() << " fields, the header has " << header.size()
                          << "\n";
                return 1;
            }
            for (std::size_t j = 0; j < fields.size(); ++j) {
                const double value = std::strtod(fields[j].c_str(), nullptr);
                if (j == *target_column) y.push_back(value);
                else X.push_back(value);
            }
            if (++rows == batch_size) absorb();
        }
        if (rows > 0) absorb();
        if (!model.is_fitted()) {
            std::cerr << "stream_csv: no rows\n";
            return 1;
        }
        const auto& state = model.state();
        std::cout << state.n_samples_seen << " rows in " << state.batch_count << " batches (" << batches
                  << " here), renewable-huber " << renewable_huber::version() << "\n";
        std::cout << std::setprecision(17);
        const std::vector<double> coef = model.coef();
        for (std::int64_t j = 0; j < p; ++j) std::cout << features[j] << " " << coef[j] << "\n";
        std::cout << "(intercept) " << model.intercept() << "\n";
        if (batches > 0) {
            const auto& d = model.diagnostics();
            std::cout << "last batch: iterations " << d.iterations << ", converged " << (d.converged ? "yes" : "no")
                      << ", stop " << d.stop_reason << ", route " << d.solve_route << ", objective " << d.objective
                      << "\n";
        }
        if (!checkpoint_out.empty()) {
            model.save(checkpoint_out);
            std::cout << "checkpoint written to " << checkpoint_out << "\n";
        }
    } catch (const renewable_huber::Error& error) {
        std::cerr << "stream_csv: " << error.what() << "\n";
        return 1;
    }
    return 0;
}

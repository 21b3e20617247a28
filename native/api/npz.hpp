// NumPy's .npz container as the checkpoint format uses it (docs/checkpoints.md):
// a zip archive (stored or DEFLATE entries, zip64 fields as numpy writes them)
// of .npy arrays (format 1.0-3.0 headers; little- or big-endian float32/64,
// and the 0-d unicode array that holds the metadata's JSON). Reading checks
// every size, offset and CRC it relies on and throws std::runtime_error on
// anything it cannot read; writing is atomic (a temporary file in the same
// folder, flushed, renamed over the target).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace renewable_huber::detail {

struct NpyArray {
    std::string descr;               // '<f8', '<f4', '<U17', ...
    std::vector<std::int64_t> shape;  // () for a 0-d array
    std::string bytes;               // C order
};

// name (without ".npy") -> array, every entry of the archive.
std::map<std::string, NpyArray> read_npz(const std::string& path);

// Writes `arrays` (name without ".npy") as a DEFLATE-compressed archive to
// exactly `path`, atomically; throws std::system_error with the OS's code.
void write_npz(const std::string& path, const std::vector<std::pair<std::string, NpyArray>>& arrays);

// Float arrays of either width, either byte order, read as T (C order).
template <class T>
std::vector<T> npy_values(const NpyArray& array);
template <class T>
NpyArray npy_array(const std::vector<T>& values, std::vector<std::int64_t> shape);

// The 0-d unicode array (UTF-32) and its text (UTF-8).
NpyArray npy_unicode_scalar(const std::string& utf8);
std::string npy_unicode_text(const NpyArray& array);

// Whether the descr is a floating-point one (what a checkpoint's arrays must be).
bool npy_is_float(const NpyArray& array);

}  // namespace renewable_huber::detail

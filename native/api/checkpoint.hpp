// The checkpoint format of the Python package (docs/checkpoints.md, format 3;
// formats 1 and 2 read), with its checks and messages in its order
// (serialization.py, state.py, config.py): what Regressor::save and
// Regressor::load use.
#pragma once

#include <string>

#include "renewable_huber/parameters.hpp"
#include "renewable_huber/state.hpp"

namespace renewable_huber::detail {

inline constexpr const char* kCorrupted = "Invalid or corrupted renewable-huber checkpoint";
inline constexpr const char* kUnsupported = "Unsupported renewable-huber checkpoint format";
inline constexpr const char* kBadConfig = "Invalid renewable-huber checkpoint configuration";
inline constexpr int kFormatVersion = 3;

// The parameters and state a checkpoint holds, every check of Python's load
// applied up to the engine's choice (state, parameters, fit_intercept,
// feature names), the arrays cast to T. `backend`: replaces the stored one
// (and the device with "auto"), as load(path, backend=...) does in Python.
template <class T>
struct Checkpoint {
    Parameters parameters;
    State<T> state;
};

template <class T>
Checkpoint<T> read_checkpoint(const std::string& path, const std::string* backend);

template <class T>
void write_checkpoint(const std::string& path, const Parameters& parameters, const State<T>& state);

}  // namespace renewable_huber::detail

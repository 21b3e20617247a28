// The C++ library's errors: one hierarchy with the Python package's names and
// messages (renewable_huber.exceptions, spec/API.md). A call that throws
// leaves its Regressor exactly as it was.
#pragma once

#include <stdexcept>
#include <string>

namespace renewable_huber {

// Base of every error the library throws.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Bad input data, parameters, state or checkpoint.
class ValidationError : public Error {
public:
    using Error::Error;
};

// The regressor was used before a batch was absorbed or a checkpoint loaded.
class NotFittedError : public Error {
public:
    using Error::Error;
};

// An engine is not built into this library, or cannot run here (no CUDA device).
class BackendUnavailableError : public Error {
public:
    using Error::Error;
};

// An engine could not complete an update.
class EngineError : public Error {
public:
    using Error::Error;
};

// Finite but huge values overflowed the Newton system: scale X and y.
class NumericalOverflowError : public EngineError {
public:
    using EngineError::EngineError;
};

// The engine's memory (host or device) could not grow for the batch.
class OutOfMemoryError : public EngineError {
public:
    using EngineError::EngineError;
};

// A checkpoint could not be read from (absent) or written to (a read-only or
// full location) its path; the message names the path, and a failed write
// leaves any previous file there intact.
class CheckpointFileError : public Error {
public:
    using Error::Error;
};

}  // namespace renewable_huber

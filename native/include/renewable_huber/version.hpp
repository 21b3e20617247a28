#pragma once

namespace renewable_huber {

// The library's version: the Python package's (they are released together).
const char* version() noexcept;

}  // namespace renewable_huber

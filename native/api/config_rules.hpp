// The parameters' rules (config.py's validate_params: the checks, their
// messages, their order) written once over JSON values, so the same rules
// judge a Parameters struct and a checkpoint's stored configuration, whose
// values may have any JSON type.
#pragma once

#include <string>

#include "json.hpp"
#include "renewable_huber/parameters.hpp"

namespace renewable_huber::detail {

// The 15 parameters as a checkpoint stores them (the dtype's name included).
Json config_json(const Parameters& parameters, const std::string& dtype);

// Throws ValidationError for the first value that breaks a rule (a missing
// key takes its default).
void validate_config(const JsonObject& config);

// The parameters of a configuration validate_config accepted (the dtype is the loader's).
Parameters parameters_from_config(const JsonObject& config);

}  // namespace renewable_huber::detail

#include "renewable_huber/parameters.hpp"

#include "config_rules.hpp"
#include "renewable_huber/version.hpp"

namespace renewable_huber {

const char* version() noexcept { return RH_VERSION_STRING; }

void Parameters::validate(const std::string& dtype) const {
    detail::validate_config(*detail::config_json(*this, dtype).as_object());
}

}  // namespace renewable_huber

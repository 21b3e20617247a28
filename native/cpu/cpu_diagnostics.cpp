#include "cpu/cpu_diagnostics.hpp"

namespace rh::cpu {

const char* kernel_path_name(KernelPath path) noexcept {
    switch (path) {
        case KernelPath::reference_order: return "reference_order";
        case KernelPath::fast: return "fast";
    }
    return "unknown";
}

}  // namespace rh::cpu

// Consuming DLPack capsules in the binding: a device batch arrives as the
// capsules its producer exported (Python asked for them on the engine's
// stream, so the producer's pending work is ordered before ours), and the
// engine reads the memory in place. The rules, from the DLPack Python
// specification:
//
// * a capsule named "dltensor_versioned" (DLPack >= 1.0, major version 1
//   understood here) or "dltensor" (legacy) is consumed exactly once: it is
//   renamed "used_dltensor[_versioned]" so its own destructor leaves the
//   tensor alone, and the ImportedTensor that took it calls the producer's
//   deleter exactly once, when it is destroyed (after the native work that
//   reads the memory has completed: the caller keeps it alive until then);
// * a capsule of an unknown major version is refused without being
//   consumed (its destructor still frees it).
//
// The batch's contract (CUDA memory on the engine's device, the engine's
// dtype, C-contiguous, the expected dimensions, writable where written) is
// checked here from the tensor itself, framework-agnostic; violations raise
// DlpackContractError, whose message names the argument.
#pragma once

#include <Python.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace rh::python {

// The DLPack C ABI (dlpack.h, version 1.x): only what is read here.
namespace dlpack {
enum DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kCUDAManaged = 13 };
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4 };
struct Device {
    int32_t device_type;
    int32_t device_id;
};
struct DataType {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
};
struct Tensor {
    void* data;
    Device device;
    int32_t ndim;
    DataType dtype;
    int64_t* shape;
    int64_t* strides;  // in elements; NULL: C-contiguous
    uint64_t byte_offset;
};
struct ManagedTensor {
    Tensor dl_tensor;
    void* manager_ctx;
    void (*deleter)(ManagedTensor*);
};
struct PackVersion {
    uint32_t major;
    uint32_t minor;
};
struct ManagedTensorVersioned {
    PackVersion version;
    void* manager_ctx;
    void (*deleter)(ManagedTensorVersioned*);
    uint64_t flags;
    Tensor dl_tensor;
};
constexpr uint64_t kFlagReadOnly = 1ULL << 0;
constexpr uint32_t kMajorVersion = 1;
}  // namespace dlpack

// A violation of the device-batch contract (wrong device, dtype, layout,
// shape, or a capsule that is not a fresh DLPack capsule).
class DlpackContractError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

inline std::string dtype_name(const dlpack::DataType& t) {
    const char* kind = t.code == dlpack::kFloat ? "float" : t.code == dlpack::kInt ? "int"
                     : t.code == dlpack::kUInt ? "uint" : t.code == dlpack::kBfloat ? "bfloat" : "type";
    std::string name = std::string(kind) + std::to_string(t.bits);
    if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
    return name;
}

inline std::string device_name(const dlpack::Device& d) {
    switch (d.device_type) {
        case dlpack::kCPU: return "the host (cpu)";
        case dlpack::kCUDA: return "cuda:" + std::to_string(d.device_id);
        case dlpack::kCUDAHost: return "pinned host memory (cuda_host)";
        case dlpack::kCUDAManaged: return "managed memory (cuda_managed:" + std::to_string(d.device_id) + ")";
        default: return "a device of DLPack type " + std::to_string(d.device_type);
    }
}

// One consumed capsule; move-only; the producer's deleter runs once, here.
class ImportedTensor {
public:
    ImportedTensor() = default;
    ImportedTensor(const ImportedTensor&) = delete;
    ImportedTensor& operator=(const ImportedTensor&) = delete;
    ImportedTensor(ImportedTensor&& other) noexcept { *this = std::move(other); }
    ImportedTensor& operator=(ImportedTensor&& other) noexcept {
        if (this != &other) {
            release();
            versioned_ = std::exchange(other.versioned_, nullptr);
            legacy_ = std::exchange(other.legacy_, nullptr);
        }
        return *this;
    }
    ~ImportedTensor() { release(); }

    // Takes ownership of the capsule's tensor (renaming the capsule), or
    // raises DlpackContractError without touching it.
    static ImportedTensor consume(PyObject* capsule, const std::string& what) {
        ImportedTensor out;
        if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
            auto* managed = static_cast<dlpack::ManagedTensorVersioned*>(
                PyCapsule_GetPointer(capsule, "dltensor_versioned"));
            if (managed == nullptr) throw DlpackContractError(what + ": unreadable DLPack capsule");
            if (managed->version.major != dlpack::kMajorVersion)
                throw DlpackContractError(what + ": DLPack version " + std::to_string(managed->version.major) + "." +
                                          std::to_string(managed->version.minor) +
                                          " is not supported (major version 1 is)");
            PyCapsule_SetName(capsule, "used_dltensor_versioned");
            out.versioned_ = managed;
            return out;
        }
        if (PyCapsule_IsValid(capsule, "dltensor")) {
            auto* managed = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
            if (managed == nullptr) throw DlpackContractError(what + ": unreadable DLPack capsule");
            PyCapsule_SetName(capsule, "used_dltensor");
            out.legacy_ = managed;
            return out;
        }
        if (PyCapsule_IsValid(capsule, "used_dltensor_versioned") || PyCapsule_IsValid(capsule, "used_dltensor"))
            throw DlpackContractError(what + ": this DLPack capsule was already consumed");
        throw DlpackContractError(what + ": not a DLPack capsule");
    }

    const dlpack::Tensor& tensor() const { return versioned_ ? versioned_->dl_tensor : legacy_->dl_tensor; }
    bool versioned() const { return versioned_ != nullptr; }
    bool read_only() const { return versioned_ != nullptr && (versioned_->flags & dlpack::kFlagReadOnly) != 0; }
    void* data() const {
        return static_cast<char*>(tensor().data) + tensor().byte_offset;
    }
    std::int64_t extent(int axis) const { return tensor().shape[axis]; }

    // The device-batch contract; `what` names the argument in every message.
    // `device_type` is kCUDA for the engine (managed memory of that device is
    // accepted too); the host-side tests check capsules of kCPU arrays.
    void require(const std::string& what, int ndim, uint8_t bits, int device,
                 int32_t device_type = dlpack::kCUDA) const {
        const dlpack::Tensor& t = tensor();
        const bool cuda = device_type == dlpack::kCUDA;
        if (t.device.device_type != device_type && !(cuda && t.device.device_type == dlpack::kCUDAManaged))
            throw DlpackContractError(what + " must be in " + (cuda ? "CUDA device" : "host") +
                                      " memory, not on " + device_name(t.device));
        if (t.device.device_id != device)
            throw DlpackContractError(what + " is on " + device_name(t.device) + ", the engine on cuda:" +
                                      std::to_string(device) + " (move the data or the model: model.to_device)");
        if (t.dtype.code != dlpack::kFloat || t.dtype.bits != bits || t.dtype.lanes != 1)
            throw DlpackContractError(what + " must be float" + std::to_string(bits) + " like the model, not " +
                                      dtype_name(t.dtype) + " (device arrays are not converted)");
        if (t.ndim != ndim)
            throw DlpackContractError(what + " must be " + (ndim == 2 ? "two" : "one") + "-dimensional, not " +
                                      std::to_string(t.ndim) + "-dimensional");
        if (!c_contiguous(t))
            throw DlpackContractError(what + " must be C-contiguous (device arrays are not copied; make a "
                                             "contiguous copy first)");
    }

    void require_writable(const std::string& what) const {
        if (read_only()) throw DlpackContractError(what + " must be writable (the producer exported it read-only)");
    }

private:
    static bool c_contiguous(const dlpack::Tensor& t) {
        if (t.strides == nullptr) return true;
        for (int axis = 0; axis < t.ndim; ++axis)
            if (t.shape[axis] == 0) return true;  // no element: any strides will do
        std::int64_t expected = 1;
        for (int axis = t.ndim - 1; axis >= 0; --axis) {
            if (t.shape[axis] != 1 && t.strides[axis] != expected) return false;
            expected *= t.shape[axis];
        }
        return true;
    }

    void release() noexcept {
        if (versioned_ != nullptr && versioned_->deleter != nullptr) versioned_->deleter(versioned_);
        if (legacy_ != nullptr && legacy_->deleter != nullptr) legacy_->deleter(legacy_);
        versioned_ = nullptr;
        legacy_ = nullptr;
    }

    dlpack::ManagedTensorVersioned* versioned_ = nullptr;
    dlpack::ManagedTensor* legacy_ = nullptr;
};

}  // namespace rh::python

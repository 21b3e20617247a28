#include "device_arena.cuh"

#include <nvtx3/nvToolsExtMem.h>

#include <utility>

namespace rh::cuda {

namespace {

// The library's NVTX domain (the memory API's calls name one); created on
// first use, after the CUDA runtime is up (compute-sanitizer's requirement:
// the arena's cudaMalloc comes first).
nvtxDomainHandle_t arena_domain() {
    static const nvtxDomainHandle_t domain = nvtxDomainCreateA("renewable-huber");
    return domain;
}

// `storage` as a sub-allocator heap whose regions are the views: memcheck
// then reports an access to a byte of the heap outside every region.
// Without a tool attached the calls return at once.
void* register_heap(unsigned char* storage, std::size_t bytes, const ArenaLayout::View* views, std::size_t count) {
    nvtxMemVirtualRangeDesc_t whole{};
    whole.ptr = storage;
    whole.size = bytes;
    nvtxMemHeapDesc_t heap_desc{};
    heap_desc.extCompatID = NVTX_EXT_COMPATID_MEM;
    heap_desc.structSize = sizeof(heap_desc);
    heap_desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    heap_desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    heap_desc.typeSpecificDescSize = sizeof(whole);
    heap_desc.typeSpecificDesc = &whole;
    const nvtxMemHeapHandle_t heap = nvtxMemHeapRegister(arena_domain(), &heap_desc);

    std::vector<nvtxMemVirtualRangeDesc_t> regions(count);
    for (std::size_t i = 0; i < count; ++i) {
        regions[i].ptr = storage + views[i].offset;
        regions[i].size = views[i].extent;
    }
    nvtxMemRegionsRegisterBatch_t batch{};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.heap = heap;
    batch.regionCount = count;
    batch.regionDescElementSize = sizeof(nvtxMemVirtualRangeDesc_t);
    batch.regionDescElements = regions.data();
    nvtxMemRegionsRegister(arena_domain(), &batch);
    return heap;
}

}  // namespace

bool DeviceArena::place(int device, const ArenaLayout& layout) {
    if (placed()) throw Failure(core::Status::invalid_state, "an arena's arrays are placed once");
    if (layout.views_.empty()) return false;
    std::vector<ArenaLayout::View> views = layout.views_;  // (before the allocation: may throw)
    const bool allocated = storage_.reserve(device, static_cast<std::int64_t>(layout.bytes()));
    for (const auto& view : views) view.adopt(view.array, device, storage_.data() + view.offset, view.count);
    views_ = std::move(views);
    heap_ = register_heap(storage_.data(), layout.bytes(), layout.views_.data(), layout.views_.size());
    return allocated;
}

void DeviceArena::release() noexcept {
    const unsigned char* begin = storage_.data();
    const unsigned char* end = begin + storage_.size();
    for (const auto& view : views_) view.forget(view.array, begin, end);
    free_storage();
}

void DeviceArena::free_storage() noexcept {
    // Before the storage is freed: the tool forgets the heap and its regions.
    if (heap_ != nullptr) nvtxMemHeapUnregister(arena_domain(), static_cast<nvtxMemHeapHandle_t>(heap_));
    heap_ = nullptr;
    views_.clear();
    storage_.reset();
}

DeviceArena::~DeviceArena() { free_storage(); }

}  // namespace rh::cuda

// The order of update_batches' staged slices (host_staging.cu), apart from
// the device API it runs on: slice k + 1 is staged through the pinned ring
// (chunk_stager.hpp) into device buffer 1 - b while slice k, in buffer b, is
// solved. Three kinds of event keep the reuses apart:
// - released[b] (engine stream, after the update that read buffer b): the
//   copy stream waits for it before the first chunk into b;
// - chunk_read[s] (copy stream, after slot s's transfer): the stager waits
//   for it on the host before refilling slot s;
// - arrived[b] (copy stream, after a slice's last chunk): the engine stream
//   waits for it before the update that reads b.
// `Device` supplies them: Stream, Event, record(event, stream),
// wait(stream, event) (for the event's latest record, as
// cudaStreamWaitEvent), copy(destination, source, bytes, stream),
// synchronize(event), synchronize(stream), synchronize_quietly(stream) (on
// the way out; no throw), select() (on the stager's thread). Plain C++:
// the CPU tests run it on a simulated device whose streams are threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "chunk_stager.hpp"

namespace rh::cuda {

template <class Device>
struct StagingResources {
    typename Device::Stream engine_stream, copy_stream;
    typename Device::Event arrived[2], released[2];
    std::vector<typename Device::Event> chunk_read;  // one per slot
    std::vector<unsigned char*> slots;               // the pinned ring
    std::size_t chunk_bytes = 0;
    unsigned char* buffers[2] = {nullptr, nullptr};  // on the device, each room for the largest slice
};

// update(k, b) for slices k = 0 .. slices - 1 in order, slice k's bytes
// (the concatenation of sources_of(k)) in device buffer b = k % 2 and the
// engine stream ordered after their arrival. On the way out, however it
// ends, the stager stops and the copy stream is drained.
template <class Device>
void stage_slices(Device& device, const StagingResources<Device>& r, std::int64_t slices, int copy_threads,
                  const std::function<std::vector<CopySpan>(std::int64_t)>& sources_of,
                  const std::function<void(std::int64_t, int)>& update) {
    auto job = [&](std::int64_t k, int b) {
        StagingJob out;
        out.sources = sources_of(k);
        out.begin = [&device, &r, b] { device.wait(r.copy_stream, r.released[b]); };
        out.transfer = [&device, &r, b](int slot, std::size_t offset, std::size_t bytes) {
            const auto s = static_cast<std::size_t>(slot);
            device.copy(r.buffers[b] + offset, r.slots[s], bytes, r.copy_stream);
            device.record(r.chunk_read[s], r.copy_stream);
        };
        out.end = [&device, &r, b] { device.record(r.arrived[b], r.copy_stream); };
        return out;
    };
    for (int b = 0; b < 2; ++b) device.record(r.released[b], r.engine_stream);
    struct Drain {  // declared before the stager: runs after it stopped
        Device& device;
        const StagingResources<Device>& r;
        ~Drain() { device.synchronize_quietly(r.copy_stream); }
    } drain{device, r};
    ChunkedSliceStager stager(
        r.slots, r.chunk_bytes, copy_threads,
        [&device, &r](int slot) { device.synchronize(r.chunk_read[static_cast<std::size_t>(slot)]); },
        [&device] { device.select(); });
    stager.start(job(0, 0));
    for (std::int64_t k = 0; k < slices; ++k) {
        const int b = static_cast<int>(k % 2);
        stager.wait();  // slice k's transfers and arrival are on the copy stream
        if (k + 1 < slices) stager.start(job(k + 1, 1 - b));  // copied while slice k is solved
        device.wait(r.engine_stream, r.arrived[b]);
        update(k, b);
        device.record(r.released[b], r.engine_stream);
    }
    stager.wait();
    device.synchronize(r.copy_stream);  // (done by now: the last slice arrived)
}

}  // namespace rh::cuda

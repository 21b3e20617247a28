// Compiled with -fmad=false (CMakeLists.txt): the driver's arithmetic on
// the device (the candidates, their changes' norm, the objective's parts)
// rounds as the host's does, so the replay decides as the host-driven
// route decides.
#include "newton_replay.cuh"

#include "block_barrier.cuh"
#include "engine_internal.cuh"
#include "gram_kernels.cuh"
#include "launch.cuh"

namespace rh::cuda {

namespace {

// The replay runs in one thread, whose every access is on the dependent
// chain of the driver's loops: what it reads and writes is in shared memory
// (about 30 cycles an access, against hundreds in global memory: run 2's
// version, all in global memory and replaying from the batch's start, took
// 31.6 us for one direction on an H100). The block copies it there first.
constexpr int kReplayThreads = 64;
constexpr int kReplayParameters = static_cast<int>(kNarrowGram);  // the largest d of the narrow route

template <class T>
struct ReplayShared {
    PassRecord record;
    T step[kReplayParameters];
    T point[kReplayParameters];
    T vectors[6 * kReplayParameters];  // the driver's buffers
};

template <class T>
__global__ void __launch_bounds__(kReplayThreads) newton_replay_kernel(NewtonReplayArgs<T> a,
                                                                       LoopCondition handle) {
    __shared__ ReplayShared<T> shared;
    const std::int64_t d = a.d;
    constexpr int kWords = sizeof(PassRecord) / sizeof(double);
    static_assert(sizeof(PassRecord) % sizeof(double) == 0, "a record copies as doubles");
    const double* live = reinterpret_cast<const double*>(a.live);
    double* kept = reinterpret_cast<double*>(&shared.record);
    for (int w = threadIdx.x; w < kWords; w += blockDim.x) kept[w] = live[w];
    for (std::int64_t j = threadIdx.x; j < d && j < kReplayParameters; j += blockDim.x) {
        shared.step[j] = a.live_step[j];
        shared.point[j] = a.point_out[j];  // the point the direction was formed at
    }
    block_barrier();
    if (threadIdx.x != 0) return;
    shared.record.system = *a.system;
    DeviceNewtonLoop& loop = *a.loop;
    bool more = false;
    if (d > kReplayParameters) {  // unreachable: the loop serves the narrow route only
        loop.status = LoopStatus::needs_host;
    } else {
        more = replay_direction<T>(loop, shared.record, shared.step, shared.point, d, a.terms->weight_sum,
                                   shared.vectors, a.point_out, a.inputs);
    }
#if CUDART_VERSION >= 12030
    if (handle != 0) cudaGraphSetConditional(handle, more ? 1u : 0u);
#else
    (void)handle;
    (void)more;
#endif
}

}  // namespace

template <class T>
void launch_newton_replay(cudaStream_t stream, const NewtonReplayArgs<T>& args, LoopCondition handle) {
    newton_replay_kernel<T><<<1, kReplayThreads, 0, stream>>>(args, handle);
    RH_CUDA_LAUNCHED();
}

template void launch_newton_replay<float>(cudaStream_t, const NewtonReplayArgs<float>&, LoopCondition);
template void launch_newton_replay<double>(cudaStream_t, const NewtonReplayArgs<double>&, LoopCondition);

}  // namespace rh::cuda

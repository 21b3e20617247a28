// The device-driven Newton solve's replay (newton_replay.cuh) against
// core::damped_newton run straight through over the same values: a loop
// that forms each direction the replay asks for (as the device's passes
// would: the step, the losses at every halving, the memory terms) and runs
// the driver on from where it stopped over it must end where the straight
// run ends, bit for bit (the point, f, the iterations, the stop, the
// routes), having asked for exactly the directions the straight run
// formed, each with the move it accepted before it. On the host (no device
// needed), and with the replay kernel on the device (skips without one):
// the kernel is compiled without FMA contraction, so it must decide as the
// host does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/driver_buffers.hpp"
#include "core/newton_driver.hpp"
#include "device_buffer.cuh"
#include "newton_replay.cuh"

namespace rh::cuda {
namespace {

using testing::device_count;
using testing::DeviceBuffer;

constexpr double kWeightSum = 1024.0;  // N: a power of two, so losses / N undoes N f exactly

// f's data part: sum_j log cosh(theta_j - c_j) + 0.01 theta_j^2 (Newton from
// far away overshoots it: the halving search has work to do), and a memory
// part along each step that is not zero (its rounding is the replay's too).
template <class T>
struct Problem {
    std::int64_t d;
    std::vector<T> centre;

    double data(const T* theta) const {
        double f = 0.0;
        for (std::int64_t j = 0; j < d; ++j) {
            const double u = static_cast<double>(theta[j]) - static_cast<double>(centre[j]);
            f += std::log(std::cosh(u)) + 0.01 * static_cast<double>(theta[j]) * static_cast<double>(theta[j]);
        }
        return f;
    }
    void newton_step(const T* theta, T* step) const {
        for (std::int64_t j = 0; j < d; ++j) {
            const double u = static_cast<double>(theta[j]) - static_cast<double>(centre[j]);
            const double g = std::tanh(u) + 0.02 * static_cast<double>(theta[j]);
            const double h = 1.0 / (std::cosh(u) * std::cosh(u)) + 0.02;
            step[j] = static_cast<T>(g / h);
        }
    }
    core::MemoryAlongStep along(const T* step) const {
        core::MemoryAlongStep m;
        m.a = 0.3;
        for (std::int64_t j = 0; j < d; ++j) {
            m.b1 += 0.001 * static_cast<double>(step[j]);
            m.c += 0.0007 * static_cast<double>(step[j]) * static_cast<double>(step[j]);
        }
        m.b2 = -m.b1;  // no slope along the step: the memory part stays a function of the point
        m.inverse_n = 1.0 / kWeightSum;
        return m;
    }
    // The memory at the point of step t, as an engine records it: off the
    // quadratic's value by a little (an engine's is at the rounded point),
    // so a trial's value and an accepted point's differ.
    static double memory_at(const core::MemoryAlongStep& m, double t) { return m.at(t) + 0x1p-40; }
};

// The driver's evaluator over the problem itself; it keeps what the replay must reproduce.
template <class T>
struct DirectEvaluator {
    const Problem<T>& problem;
    core::MemoryAlongStep along_now;
    double pending_t = 0.0;
    std::vector<std::vector<T>> points;  // where each direction was formed
    std::vector<double> moves;           // the accepted move pending when it was

    double start(const T* theta) { return problem.data(theta); }
    core::SolveRoute direction(const T* theta, T* step) {
        points.emplace_back(theta, theta + problem.d);
        moves.push_back(pending_t);
        pending_t = 0.0;
        problem.newton_step(theta, step);
        along_now = problem.along(step);
        return core::SolveRoute::cholesky;
    }
    core::SolveRoute majorizer_direction(const T*, T*) {
        ADD_FAILURE() << "the problem never needs the majorizer";
        return core::SolveRoute::cholesky;
    }
    double trial(double t, const T* candidate, double, const core::SearchSteps<T>&) {
        return problem.data(candidate) + along_now.at(t);
    }
    double accept(double t, const T* candidate, double) {
        pending_t = t;
        return problem.data(candidate) + Problem<T>::memory_at(along_now, t);
    }
    double norm(const T* x) const { return core::index_order_norm(problem.d, x); }
};

// What the device's passes leave for a direction at `point`.
template <class T>
PassRecord direction_record(const Problem<T>& problem, const std::vector<T>& point, std::vector<T>& step,
                            double point_loss) {
    const std::int64_t d = problem.d;
    problem.newton_step(point.data(), step.data());
    PassRecord record{};
    record.along = problem.along(step.data());
    std::vector<T> candidate(d);
    for (int k = 0; k < kLineSearchSteps; ++k) {
        const double t = std::ldexp(1.0, -k);
        core::SearchSteps<T>::halving(d, point.data(), step.data()).form(t, candidate.data());
        record.losses[k] = kWeightSum * problem.data(candidate.data());
        record.memory[k] = Problem<T>::memory_at(record.along, t);
    }
    record.system.step_ok = 1;
    record.point_loss = point_loss;
    record.point_memory = 0.0;
    return record;
}

// One replay, on the host or with the kernel on the device: the loop's state after it, the point it
// wrote and the move.
template <class T>
struct Replay {
    DeviceNewtonLoop loop;
    std::vector<T> point;
    PassInputs inputs;
};

template <class T>
Replay<T> replay_on_host(const DeviceNewtonLoop& before, const PassRecord& record, const std::vector<T>& step,
                         const std::vector<T>& point) {
    const std::int64_t d = static_cast<std::int64_t>(point.size());
    Replay<T> out{before, std::vector<T>(d), PassInputs{}};
    std::vector<T> vectors(6 * d);
    replay_direction<T>(out.loop, record, step.data(), point.data(), d, kWeightSum, vectors.data(), out.point.data(),
                        &out.inputs);
    return out;
}

template <class T>
Replay<T> replay_on_device(const DeviceNewtonLoop& before, const PassRecord& record, const std::vector<T>& step,
                           const std::vector<T>& point) {
    const std::int64_t d = static_cast<std::int64_t>(point.size());
    SurrogateTerms<T> terms;
    terms.weight_sum = kWeightSum;
    DeviceBuffer<DeviceNewtonLoop> loop(1);
    DeviceBuffer<PassRecord> live(1);
    DeviceBuffer<SystemFlags> system(1);
    DeviceBuffer<T> live_step(d), point_out(d);
    DeviceBuffer<SurrogateTerms<T>> terms_on_device(1);
    DeviceBuffer<PassInputs> inputs(1);
    loop.upload({before});
    live.upload({record});
    system.upload({record.system});
    live_step.upload(step);
    point_out.upload(point);  // in: the point the direction was formed at
    terms_on_device.upload({terms});
    inputs.upload({PassInputs{}});
    NewtonReplayArgs<T> args;
    args.loop = loop.data;
    args.live = live.data;
    args.system = system.data;
    args.live_step = live_step.data;
    args.terms = terms_on_device.data;
    args.point_out = point_out.data;
    args.inputs = inputs.data;
    args.d = d;
    launch_newton_replay<T>(nullptr, args, 0);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return Replay<T>{loop.download(1)[0], point_out.download(d), inputs.download(1)[0]};
}

// The loop as the device runs it: form what the replay asks for, replay on, until it stops.
template <class T, class ReplayFn>
void expect_the_straight_run(std::int64_t d, int max_iter, ReplayFn replay) {
    Problem<T> problem{d, {}};
    std::vector<T> start(d);
    for (std::int64_t j = 0; j < d; ++j) {
        problem.centre.push_back(static_cast<T>(std::sin(1.7 * static_cast<double>(j)) * 4.0));
        start[j] = static_cast<T>(std::cos(0.9 * static_cast<double>(j)) * 3.0);
    }
    const double tol = 1e-7;
    DirectEvaluator<T> direct{problem, {}, 0.0, {}, {}};
    std::vector<T> v(6 * d);
    const core::DriverBuffers<T> buffers{v.data(), v.data() + d, v.data() + 2 * d, v.data() + 3 * d,
                                         v.data() + 4 * d, v.data() + 5 * d};
    core::UpdateDiagnostics direct_diagnostics;
    const core::SolverResult<T> expected =
        core::damped_newton(direct, d, start.data(), max_iter, tol, buffers, direct_diagnostics);
    ASSERT_GE(direct.points.size(), max_iter > 1 ? 2u : 1u);

    DeviceNewtonLoop loop;
    loop.max_iter = max_iter;
    loop.tol = tol;
    std::vector<T> step(d), point = start;
    const double point_loss = kWeightSum * problem.data(start.data());  // the start's pass, in every record
    double move = 0.0;
    for (std::size_t n = 0; n <= static_cast<std::size_t>(max_iter); ++n) {
        ASSERT_LT(n, direct.points.size()) << "the replay asked for more directions than the driver";
        EXPECT_EQ(point, direct.points[n]) << "direction " << n << "'s point";
        EXPECT_EQ(move, direct.moves[n]) << "direction " << n << "'s pending move";
        const PassRecord record = direction_record(problem, point, step, point_loss);
        const Replay<T> r = replay(loop, record, step, point);
        ASSERT_NE(r.loop.status, LoopStatus::needs_host);
        loop = r.loop;
        if (r.loop.status == LoopStatus::running) {
            EXPECT_EQ(r.loop.consumed, static_cast<int>(n + 1));
            point = r.point;
            move = r.inputs.t;
            EXPECT_EQ(r.inputs.trial, -1);
            continue;
        }
        EXPECT_EQ(n + 1, direct.points.size());
        EXPECT_EQ(r.point, std::vector<T>(expected.theta, expected.theta + d));
        EXPECT_EQ(r.inputs.t, direct.pending_t);
        EXPECT_EQ(r.loop.iterations, expected.iterations);
        EXPECT_EQ(r.loop.converged != 0, expected.converged);
        EXPECT_EQ(r.loop.reason, expected.reason);
        EXPECT_EQ(r.loop.objective, expected.objective);
        EXPECT_EQ(r.loop.diagnostics.cholesky_solves, direct_diagnostics.cholesky_solves);
        EXPECT_EQ(r.loop.diagnostics.solve_route, direct_diagnostics.solve_route);
        return;
    }
    FAIL() << "the replay never finished";
}

template <class T>
class NewtonReplay : public ::testing::Test {};
using Types = ::testing::Types<double, float>;
TYPED_TEST_SUITE(NewtonReplay, Types);

TYPED_TEST(NewtonReplay, OnTheHostEndsWhereTheDriverEnds) {
    for (std::int64_t d : {1, 7, 33, 48}) {
        SCOPED_TRACE(d);
        expect_the_straight_run<TypeParam>(d, 100, replay_on_host<TypeParam>);
        expect_the_straight_run<TypeParam>(d, 2, replay_on_host<TypeParam>);  // stopped by max_iter
        expect_the_straight_run<TypeParam>(d, 1, replay_on_host<TypeParam>);
    }
}

TYPED_TEST(NewtonReplay, OnTheDeviceEndsWhereTheDriverEnds) {
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
    for (std::int64_t d : {1, 7, 33, 48}) {
        SCOPED_TRACE(d);
        expect_the_straight_run<TypeParam>(d, 100, replay_on_device<TypeParam>);
        expect_the_straight_run<TypeParam>(d, 2, replay_on_device<TypeParam>);
        expect_the_straight_run<TypeParam>(d, 1, replay_on_device<TypeParam>);
    }
}

TEST(NewtonReplay, ARefusedSystemGoesToTheHost) {
    Problem<double> problem{3, {1.0, -2.0, 0.5}};
    const std::vector<double> start{4.0, 4.0, 4.0};
    std::vector<double> step(3);
    PassRecord record = direction_record(problem, start, step, kWeightSum * problem.data(start.data()));
    record.system.step_ok = 0;
    DeviceNewtonLoop loop;
    loop.max_iter = 100;
    loop.tol = 1e-7;
    EXPECT_EQ(replay_on_host(loop, record, step, start).loop.status, LoopStatus::needs_host);
}

TEST(NewtonReplay, ASystemRefusedAfterADirectionGoesToTheHostWithNothingFinished) {
    Problem<double> problem{3, {1.0, -2.0, 0.5}};
    const std::vector<double> start{4.0, 4.0, 4.0};
    std::vector<double> step(3);
    const double point_loss = kWeightSum * problem.data(start.data());
    DeviceNewtonLoop loop;
    loop.max_iter = 100;
    loop.tol = 1e-7;
    const Replay<double> first = replay_on_host(loop, direction_record(problem, start, step, point_loss), step, start);
    ASSERT_EQ(first.loop.status, LoopStatus::running);
    PassRecord refused = direction_record(problem, first.point, step, point_loss);
    refused.system.step_ok = 0;
    const Replay<double> second = replay_on_host(first.loop, refused, step, first.point);
    EXPECT_EQ(second.loop.status, LoopStatus::needs_host);
    EXPECT_EQ(second.loop.iterations, 0);  // no outcome written
}

}  // namespace
}  // namespace rh::cuda

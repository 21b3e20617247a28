// The evaluators core's drivers (core::damped_newton, core::lamm) run over
// on the host when the CUDA engine's block solver does not serve a batch:
// the driver decides everything (its vectors, on the host, are the truth);
// the evaluator answers from passes on the device (device_passes.cuh), one
// read-back per pass:
//
// * Newton: direction() forms the system, its Cholesky step and, in the
//   same launches, the losses and memory at every halving of the line search
//   that follows (one read-back: the step and the record); the halving
//   trials are answered from it, the majorizer's doublings from one more
//   pass. A system the Cholesky rung refuses goes down the ladder (LU, SVD)
//   and its search is formed again.
// * LAMM: gradient() forms the gradient and, in the same launches, the
//   kLammTrialsPerPass trials the driver is expected to try next, proposed
//   on the device (lamm_proposals.cuh, the driver's own proposal function,
//   the same bits): one read-back per iteration while the driver's trials
//   are those. A trial not among them is one more pass with the K - 1 the
//   driver would try after it (formed on the host by core::LammProposal).
//
// The residual follows the driver's accepted points: a taken step or trial
// is applied by the next scoring pass (PassInputs); a point the driver
// jumps to is evaluated from scratch.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/lamm_driver.hpp"
#include "core/search_steps.hpp"
#include "core/solve_rule.hpp"
#include "core/vector_sums.hpp"
#include "device_passes.cuh"
#include "graph_replay.cuh"
#include "huber_kernels.cuh"
#include "small_newton_step.cuh"

namespace rh::cuda {

// Launches through `graph` when it is given (cuda_graphs), else directly.
template <class Launches>
inline void launch_through(GraphReplay* graph, cudaStream_t stream, Launches&& launches) {
    if (graph != nullptr)
        graph->run(stream, launches);
    else
        launches();
}

template <class T>
class DeviceNewtonEvaluator {
public:
    // `launched_at`: d entries the evaluator keeps the point of a direction
    // launched ahead in.
    DeviceNewtonEvaluator(DevicePasses<T>& passes, GraphReplay* graph, T* launched_at)
        : P(passes), graph_(graph), launched_at_(launched_at) {}

    // f at the starting point and, in the same launches, the direction there
    // (the driver's next call): one read-back for both.
    double start(const T* theta) {
        P.send(theta, PassInputs{0.0, -1});
        P.point_pass();
        direction_launches();
        P.wait();
        std::memcpy(launched_at_, theta, sizeof(T) * P.d());
        ahead_ = true;
        const PassRecord& record = *P.host.record();
        return record.point_loss / P.terms.weight_sum + record.point_memory;
    }

    core::SolveRoute direction(const T* theta, T* step) {
        const bool launched = ahead_ && std::memcmp(launched_at_, theta, sizeof(T) * P.d()) == 0;
        ahead_ = false;
        if (!launched) {
            P.send(theta, PassInputs{pending_t_, -1});
            direction_launches();
            P.wait();
        }
        pending_t_ = 0.0;
        return finish_direction(step);
    }

    // step = M^-1 g with the gradient direction() formed (amendment 0002);
    // M's Gram Z' diag(w) Z formed once per batch.
    core::SolveRoute majorizer_direction(const T*, T* step) {
        if (!majorizer_gram_) {
            P.weighted_gram(P.batch.w, P.ws.G_majorizer.data());
            majorizer_gram_ = true;
        }
        launch_majorizer_matrix<T>(P.stream, P.terms, P.ws.G_majorizer.data(), P.ws.H.data(), P.system(),
                                   P.ws.grid_scratch());
        search_launches();
        P.wait();
        return finish_direction(step);
    }

    double trial(double t, const T*, double, const core::SearchSteps<T>& steps) {
        if (steps.kind == core::SearchSteps<T>::Kind::doubling && !doubling_ready_) {
            P.doubling_pass();
            P.wait();
            keep(doubling_, kDoublingSteps);
            doubling_ready_ = true;
        }
        return data_term(t) + along_.at(t);
    }

    // The accepted point's f: its data term and the memory part at the
    // rounded point (as the next iteration's trials compare against it).
    double accept(double t, const T*, double) {
        pending_t_ = t;
        return data_term(t) + slots_of(t).memory[slot(t)];
    }

    double norm(const T* x) const { return core::index_order_norm(P.d(), x); }

    // After the driver: theta_hat on the device and the residual's last
    // move pending for the closing pass.
    void finish(const T* theta_hat) { P.send(theta_hat, PassInputs{pending_t_, -1}); }

private:
    struct Slots {
        double losses[kPassPoints] = {};
        double memory[kPassPoints] = {};
    };

    // The residual moved and scored, the Gram, the gradient and the system,
    // then search_launches(): one graph when cuda_graphs is on. Where the
    // Cholesky rung is the one-block kernel, the system and the rung are one
    // launch.
    void direction_launches() {
        launch_through(graph_, P.stream, [&] {
            const ScoreSums sums = P.direction_scores();
            if (LinearSolver<T>::small_rung(P.d())) {
                launch_small_newton_step<T>(P.stream, P.terms, P.ws.theta.data(), P.ws.product.data(), sums.partials,
                                            sums.count, P.ws.G.data(), P.ws.gradient.data(), P.ws.H.data(),
                                            P.ws.step.data(), P.system(), terms_in(P.batch_constants()));
                halving_launches();
                return;
            }
            launch_newton_system<T>(P.stream, P.terms, P.ws.theta.data(), P.ws.product.data(), sums.partials,
                                    sums.count, P.ws.G.data(), P.ws.gradient.data(), P.ws.H.data(), P.system(),
                                    P.ws.grid_scratch(), terms_in(P.batch_constants()));
            search_launches();
        });
    }

    // The Cholesky rung's step from ws.H and ws.gradient, then
    // halving_launches(): launches only.
    void search_launches() {
        P.solver.cholesky_step(P.stream, P.solver_handle, P.d(), P.ws.H.data(), P.ws.gradient.data(),
                               P.ws.step.data(), P.system(), P.ws.grid_scratch());
        halving_launches();
    }

    // The halving pass along ws.step, the record and the step to the host.
    void halving_launches() {
        P.halving_pass();
        P.publish(true, P.ws.step.data());
    }

    // After the search launches and their wait: the ladder's next rungs when
    // the Cholesky rung refused the system, and the search again; the step.
    core::SolveRoute finish_direction(T* step) {
        core::SolveRoute route = core::SolveRoute::cholesky;
        if (!P.host.record()->system.step_ok) {
            route = P.solver.fallback_step(P.stream, P.solver_handle, P.d(), P.ws.H.data(), P.ws.gradient.data(),
                                           P.ws.step.data(), P.system(), &P.host.record()->system, &P.syncs,
                                           P.ws.grid_scratch());
            P.halving_pass();
            P.publish(false, P.ws.step.data());
            P.wait();
        }
        std::memcpy(step, P.host.vector(), sizeof(T) * P.d());
        keep(halving_, kLineSearchSteps);
        along_ = P.host.record()->along;
        doubling_ready_ = false;
        return route;
    }

    void keep(Slots& slots, int count) {
        const PassRecord& record = *P.host.record();
        for (int k = 0; k < count; ++k) {
            slots.losses[k] = record.losses[k];
            slots.memory[k] = record.memory[k];
        }
    }

    static int slot(double t) { return pass_slot(t); }

    // The pass that holds t: the halvings' or the doublings'.
    const Slots& slots_of(double t) const { return t <= 1.0 ? halving_ : doubling_; }

    double data_term(double t) const { return slots_of(t).losses[slot(t)] / P.terms.weight_sum; }

    DevicePasses<T>& P;
    GraphReplay* graph_;
    T* launched_at_;
    bool ahead_ = false;  // a direction was launched at launched_at_ with the starting point
    Slots halving_, doubling_;
    core::MemoryAlongStep along_;
    bool doubling_ready_ = false;
    bool majorizer_gram_ = false;
    double pending_t_ = 0.0;  // the accepted step's t, applied by the next scoring pass
};

template <class T>
class DeviceLammEvaluator {
public:
    DeviceLammEvaluator(DevicePasses<T>& passes, double lambda_value, GraphReplay* gradient_graph,
                        GraphReplay* trial_graph, T* current)
        : P(passes),
          lambda_value_(lambda_value),
          gradient_graph_(gradient_graph),
          trial_graph_(trial_graph),
          current_(current) {}

    // f at the starting point, or at a point the driver jumps to, and, in
    // the same launches, the gradient there with its trials (the driver's
    // next call): one read-back for both.
    double start(const T* theta) { return evaluate(theta, true); }
    double move_to(const T* point, const T*) { return evaluate(point, true); }

    // The gradient at the current point and, in the same launches, the
    // trials the driver is expected to try from it (at the phi it will
    // start from: after an accepted trial, core::LammProposal's
    // next_iteration_phi of its phi; else the last trial's phi), their
    // points read back to be matched against the driver's.
    void gradient(const T* point, T* g) {
        const bool launched = ahead_ && std::memcmp(current_, point, sizeof(T) * P.d()) == 0;
        ahead_ = false;
        if (!launched) {
            P.send(point, PassInputs{0.0, pending_trial_, expected_phi_});
            gradient_launches();
            P.wait();
        }
        pending_trial_ = -1;
        std::memcpy(g, P.host.vector(), sizeof(T) * P.d());
        keep_trials(P.host.candidates(), launched_phi_);
    }

    double dot(const T* a, const T* b) const { return core::index_order_dot(P.d(), a, b); }
    double norm(const T* x) const { return core::index_order_norm(P.d(), x); }

    double trial(const T* candidate, const T* change, double phi, const core::LammProposal<T>& propose) {
        int k = cached_slot(phi, candidate);
        if (k < 0) {
            evaluate_trials(candidate, change, phi, propose);
            k = 0;
        }
        last_trial_ = k;
        expected_phi_ = phis_[k];  // a restart keeps the phi of the trial it refused
        return losses_[k] / P.terms.weight_sum + memory_[k];
    }

    void accept() {
        pending_trial_ = last_trial_;
        expected_phi_ = core::LammProposal<T>::next_iteration_phi(phis_[last_trial_]);
        std::memcpy(current_, candidates_ + last_trial_ * P.d(), sizeof(T) * P.d());
        cached_ = 0;
    }

    // After the driver: the residual at theta_hat (evaluated again when the
    // last point the driver visited was another: an extrapolated point),
    // theta_hat on the device and the residual's last move pending for the
    // closing pass.
    void finish(const T* theta_hat) {
        if (std::memcmp(current_, theta_hat, sizeof(T) * P.d()) != 0) evaluate(theta_hat, false);
        P.send(theta_hat, PassInputs{0.0, pending_trial_});
    }

private:
    static constexpr int K = kLammTrialsPerPass;

    // f at a point from its residual formed anew (with `ahead`, the
    // gradient there too); the point becomes current.
    double evaluate(const T* point, bool ahead) {
        P.send(point, PassInputs{0.0, -1, expected_phi_});
        P.point_pass();
        if (ahead) gradient_launches();
        P.wait();
        ahead_ = ahead;
        pending_trial_ = -1;
        cached_ = 0;
        std::memcpy(current_, point, sizeof(T) * P.d());
        const PassRecord& record = *P.host.record();
        return record.point_loss / P.terms.weight_sum + record.point_memory;
    }

    // The residual moved and scored, the gradient, the trials at
    // expected_phi_, 2 expected_phi_, ... proposed on the device, their pass,
    // and what the host reads: one graph when cuda_graphs is on.
    void gradient_launches() {
        launched_phi_ = expected_phi_;
        launch_through(gradient_graph_, P.stream, [&] {
            P.score(false);
            P.score_products();
            launch_gradient<T>(P.stream, P.terms, P.ws.theta.data(), P.ws.product.data(), P.ws.partials.data(),
                               P.blocks(), P.ws.gradient.data());
            P.propose_trials(P.ws.mask.data(), lambda_value_);
            P.lamm_trial_pass();
            P.publish(false, P.ws.gradient.data(), P.ws.trial_candidates(), P.d() * K);
        });
    }

    // The pass's slot of the trial at phi when this candidate was evaluated, else -1.
    int cached_slot(double phi, const T* candidate) const {
        for (int k = 0; k < cached_; ++k)
            if (phis_[k] == phi && std::memcmp(candidates_ + k * P.d(), candidate, sizeof(T) * P.d()) == 0) return k;
        return -1;
    }

    // The last pass's trials (points, phi from `phi` on), losses and memory.
    void keep_trials(const T* candidates, double phi) {
        const PassRecord& record = *P.host.record();
        candidates_ = candidates;
        for (int k = 0; k < K; ++k) {
            phis_[k] = phi;
            phi = core::LammProposal<T>::next_phi(phi);
            losses_[k] = record.losses[k];
            memory_[k] = record.memory[k];
        }
        cached_ = K;
    }

    // One pass over this trial and the K - 1 the driver would try after it
    // if each were rejected, formed on the host as the driver forms them.
    void evaluate_trials(const T* candidate, const T* change, double phi, const core::LammProposal<T>& propose) {
        const std::int64_t d = P.d(), p = P.p();
        T* inputs = P.host.upload();
        T* feature_changes = inputs + d * K;
        T* intercept_changes = feature_changes + p * K;
        double trial_phi = phi;
        for (int k = 0; k < K; ++k) {
            T* column = inputs + k * d;
            const T* column_change = change;
            if (k == 0) {
                std::memcpy(column, candidate, sizeof(T) * d);
            } else {
                trial_phi = propose.next_phi(trial_phi);
                propose(trial_phi, column, scratch_change());
                column_change = scratch_change();
            }
            std::memcpy(feature_changes + k * p, column_change, sizeof(T) * p);
            intercept_changes[k] = P.terms.intercept ? column_change[p] : T(0);
        }
        launch_through(trial_graph_, P.stream, [&] {
            P.send_trials();
            P.lamm_trial_pass();
        });
        P.wait();
        keep_trials(inputs, phi);  // the pinned upload holds the points until the next pass
    }

    // A change the evaluator forms for a trial ahead (d entries): the
    // pinned vector read-back's buffer, free while no gradient is read.
    T* scratch_change() const { return P.host.vector(); }

    DevicePasses<T>& P;
    double lambda_value_;
    GraphReplay* gradient_graph_;
    GraphReplay* trial_graph_;
    T* current_;                      // the point the device's residual is at (host, d)
    const T* candidates_ = nullptr;   // the last pass's trial points (d x K, pinned)
    double phis_[K] = {};
    double losses_[K] = {};
    double memory_[K] = {};
    int cached_ = 0;          // trials of the last pass still answerable
    int last_trial_ = -1;     // the slot of the last trial answered
    int pending_trial_ = -1;  // the accepted trial's column, applied by the next scoring pass
    double expected_phi_ = core::kInitialPhi;  // the phi the driver's next trials start from
    double launched_phi_ = core::kInitialPhi;  // the phi the last gradient pass's trials started from
    bool ahead_ = false;  // the gradient at current_ was launched with its point's pass
};

}  // namespace rh::cuda

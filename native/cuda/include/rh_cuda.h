/* rh_cuda.h: the C ABI of the renewable-huber CUDA engine.
 *
 * The only public header of native/cuda. Plain C, fixed-width integers, no
 * CUDA or C++ types: streams are integers (a cudaStream_t's value), devices
 * int32_t. Every struct starts with abi_version and struct_size; the callee
 * checks both. Every function returns an int32_t status (RH_CUDA_OK = 0);
 * the message of the last failure is kept by the engine (or, before an
 * engine exists, by the process) and copied out by the caller into its own
 * buffer. No exception crosses this boundary, and every entry point restores
 * the caller's current CUDA device. "Did not converge" is an outcome in the
 * diagnostics, not an error status.
 *
 * The layout is pinned by native/contracts/rh_cuda_contract.json (offsets and
 * sizes of every field, the constants, the function list); abi_contract.cpp
 * checks this header against it at compile time.
 */
#ifndef RH_CUDA_H
#define RH_CUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define RH_CUDA_API __declspec(dllexport)
#else
#define RH_CUDA_API __attribute__((visibility("default")))
#endif

/* ABI version: major << 16 | minor. A binding refuses another major. */
#define RH_CUDA_ABI_VERSION_MAJOR 1
#define RH_CUDA_ABI_VERSION_MINOR 6
#define RH_CUDA_ABI_VERSION ((RH_CUDA_ABI_VERSION_MAJOR << 16) | RH_CUDA_ABI_VERSION_MINOR)

/* Status codes. 1-6 are the engines' common statuses (native/core/status.hpp). */
#define RH_CUDA_OK 0
#define RH_CUDA_INVALID_ARGUMENT 1
#define RH_CUDA_NON_FINITE_INPUT 2
#define RH_CUDA_INVALID_WEIGHTS 3
#define RH_CUDA_INVALID_STATE 4
#define RH_CUDA_NUMERICAL_FAILURE 5
#define RH_CUDA_INTERNAL_ERROR 6
#define RH_CUDA_OUT_OF_MEMORY 7
#define RH_CUDA_DEVICE_ERROR 8
#define RH_CUDA_UNAVAILABLE 9
#define RH_CUDA_ABI_MISMATCH 10

/* dtypes, penalties, solve routes (the routes of native/core/diagnostics.hpp) */
#define RH_CUDA_FLOAT32 1
#define RH_CUDA_FLOAT64 2
#define RH_CUDA_PENALTY_NONE 0
#define RH_CUDA_PENALTY_L1 1
#define RH_CUDA_ROUTE_NONE 0
#define RH_CUDA_ROUTE_CHOLESKY 1
#define RH_CUDA_ROUTE_LU 2
#define RH_CUDA_ROUTE_LEAST_SQUARES 3
/* why a solver stopped (the stop reasons of native/core/diagnostics.hpp; ABI 1.1) */
#define RH_CUDA_STOP_CONVERGED 0
#define RH_CUDA_STOP_MAX_ITER 1
#define RH_CUDA_STOP_LINE_SEARCH_EXHAUSTED 2
#define RH_CUDA_STOP_MAJORIZATION_EXHAUSTED 3

/* Where a batch's arrays live. */
#define RH_CUDA_MEMORY_HOST 0
#define RH_CUDA_MEMORY_DEVICE 1

/* How an update was solved (ABI 1.2): the multi-kernel pipeline; the block
 * solver (a small batch's whole solve in one launch); the block solver, whose
 * Cholesky rung refused a system, then the pipeline. */
#define RH_CUDA_PATH_PIPELINE 0
#define RH_CUDA_PATH_BLOCK 1
#define RH_CUDA_PATH_BLOCK_THEN_PIPELINE 2
/* Which path an engine may take (engine option, ABI 1.2): the block solver for
 * the batches it serves well, else the pipeline (AUTO); the pipeline always;
 * the block solver whenever its shared arrays hold the parameters (BLOCK: for
 * measuring where it stops paying). */
#define RH_CUDA_SOLVER_AUTO 0
#define RH_CUDA_SOLVER_PIPELINE 1
#define RH_CUDA_SOLVER_BLOCK 2

typedef struct rh_cuda_engine_s* rh_cuda_engine_t;

typedef struct rh_cuda_runtime_info {
    uint32_t abi_version;
    uint32_t struct_size;
    int32_t device_count;      /* 0 when no device (or no driver) is usable */
    int32_t runtime_version;   /* cudaRuntimeGetVersion */
    int32_t driver_version;    /* cudaDriverGetVersion, 0 without a driver */
    int32_t reserved;
} rh_cuda_runtime_info;

typedef struct rh_cuda_device_info {
    uint32_t abi_version;
    uint32_t struct_size;
    int32_t device;
    int32_t compute_capability_major;
    int32_t compute_capability_minor;
    int32_t multiprocessors;
    uint64_t total_memory_bytes;
    char name[256];
} rh_cuda_device_info;

typedef struct rh_cuda_engine_options {
    uint32_t abi_version;
    uint32_t struct_size;
    int32_t device;            /* CUDA device ordinal */
    int32_t dtype;             /* RH_CUDA_FLOAT32 | RH_CUDA_FLOAT64 */
    int64_t n_features;        /* p; the engine serves d = p + fit_intercept parameters */
    uint8_t fit_intercept;
    uint8_t cuda_graphs;       /* capture the repeated launch sequences (falls back when impossible) */
    uint8_t fast_math;         /* float32 only: TF32 tensor-core math in cuBLAS */
    uint8_t solver_choice;     /* RH_CUDA_SOLVER_*: which path solves an update (ABI 1.2) */
    uint8_t reserved[2];
    uint16_t block_tiles;      /* the block solver's tiles of rows per block at least, 1-4096; 0: the engine's default (ABI 1.5) */
    uint64_t stream;           /* 0: the engine creates its own non-blocking stream; else a borrowed cudaStream_t */
} rh_cuda_engine_options;

typedef struct rh_cuda_solver_config {
    uint32_t abi_version;
    uint32_t struct_size;
    double tau;
    double lambda_scale;
    double bandwidth_scale;
    double tol;
    double ridge;
    int32_t penalty;           /* RH_CUDA_PENALTY_NONE | RH_CUDA_PENALTY_L1 */
    int32_t max_iter;
    uint8_t fit_intercept;
    uint8_t reserved[7];
} rh_cuda_solver_config;

typedef struct rh_cuda_state_counters {
    uint32_t abi_version;
    uint32_t struct_size;
    int64_t n_features_in;
    int64_t n_samples_seen;
    int64_t batch_count;
    double previous_lambda;
    double weight_sum;
    uint8_t fit_intercept;
    uint8_t reserved[7];
} rh_cuda_state_counters;

/* A state in host memory, in the engine's dtype: coefficients (d) and the
 * information matrix (d x d, row-major). Read by restore, written by copy.
 * meat (ABI 1.4; d x d, row-major): restore with a meat makes the engine
 * accumulate S = sum Z' diag(w score(r)^2) Z from it (amendment 0003),
 * restore without one (NULL, or a struct of ABI 1.3's size) stops it; copy
 * writes it when given (RH_CUDA_INVALID_STATE when the engine keeps none). */
typedef struct rh_cuda_host_state {
    uint32_t abi_version;
    uint32_t struct_size;
    void* coefficients;
    void* information;
    int64_t n_parameters;      /* d */
    rh_cuda_state_counters counters;
    void* meat;
} rh_cuda_host_state;

/* One batch: X (rows x features, row-major, C-contiguous), y (rows) and
 * optional frequency weights (rows; NULL: all ones), all in host memory or
 * all in device memory of the engine's device, in the engine's dtype. */
typedef struct rh_cuda_batch {
    uint32_t abi_version;
    uint32_t struct_size;
    int32_t memory;            /* RH_CUDA_MEMORY_HOST | RH_CUDA_MEMORY_DEVICE */
    int32_t dtype;
    int64_t rows;
    int64_t features;
    const void* X;
    const void* y;
    const void* sample_weight;
    uint64_t stream;           /* device batches: the producer's stream the engine waits on (0: none) */
} rh_cuda_batch;

typedef struct rh_cuda_diagnostics {
    uint32_t abi_version;
    uint32_t struct_size;
    double objective;
    double lambda_value;
    double bandwidth;
    int32_t iterations;
    int32_t solve_route;       /* the most robust route any Newton system needed */
    int32_t cholesky_solves;
    int32_t lu_solves;
    int32_t least_squares_solves;
    int32_t host_syncs;        /* host synchronizations of this update */
    uint8_t converged;
    uint8_t stop_reason;       /* RH_CUDA_STOP_* (ABI 1.1) */
    uint8_t solver_path;       /* RH_CUDA_PATH_*: how the update was solved (ABI 1.2) */
    uint8_t reserved[5];
} rh_cuda_diagnostics;

typedef struct rh_cuda_features {
    uint32_t abi_version;
    uint32_t struct_size;
    int32_t device;
    int32_t dtype;
    int64_t n_parameters;
    int64_t updates;
    int64_t host_syncs;             /* over the engine's life */
    int64_t workspace_allocations;  /* device allocations (constant in steady state) */
    int64_t workspace_bytes;
    int64_t graph_captures;
    int64_t graph_replays;
    int64_t graph_fallbacks;
    uint8_t cuda_graphs;
    uint8_t fast_math;
    uint8_t owns_stream;
    uint8_t reserved[5];
    uint64_t stream;
} rh_cuda_features;

/* ---------------------------------------------------------------- process */

RH_CUDA_API uint32_t rh_cuda_abi_version(void);
/* Fills info; RH_CUDA_OK also when no device exists (device_count 0). */
RH_CUDA_API int32_t rh_cuda_get_runtime_info(rh_cuda_runtime_info* info);
RH_CUDA_API int32_t rh_cuda_get_device_info(int32_t device, rh_cuda_device_info* info);
/* The last failure, on the calling thread, of a call that had no engine
 * (create, info): copies at most size bytes (NUL-terminated) into buffer;
 * *needed = full length + 1. Each thread keeps its own message. */
RH_CUDA_API int32_t rh_cuda_process_last_error(char* buffer, uint64_t size, uint64_t* needed);

/* ----------------------------------------------------------------- engine */

RH_CUDA_API int32_t rh_cuda_engine_create(const rh_cuda_engine_options* options, rh_cuda_engine_t* engine);
/* Destroying NULL is a no-op. */
RH_CUDA_API int32_t rh_cuda_engine_destroy(rh_cuda_engine_t engine);
RH_CUDA_API int32_t rh_cuda_engine_last_error(rh_cuda_engine_t engine, char* buffer, uint64_t size,
                                              uint64_t* needed);

/* The engine's state: set from host arrays (the empty state: zeros), copied
 * to host arrays, or its counters alone. */
RH_CUDA_API int32_t rh_cuda_engine_restore_state(rh_cuda_engine_t engine, const rh_cuda_host_state* state);
RH_CUDA_API int32_t rh_cuda_engine_copy_state(rh_cuda_engine_t engine, rh_cuda_host_state* state);
RH_CUDA_API int32_t rh_cuda_engine_counters(rh_cuda_engine_t engine, rh_cuda_state_counters* counters);

/* One renewable update: the batch (host or device memory), the solver
 * configuration; on success the engine's state is the next state, its
 * coefficients are copied into coefficients_out (host, d values; may be
 * NULL) and the diagnostics are filled. On failure the state is unchanged. */
RH_CUDA_API int32_t rh_cuda_engine_update(rh_cuda_engine_t engine, const rh_cuda_batch* batch,
                                          const rh_cuda_solver_config* config, void* coefficients_out,
                                          rh_cuda_diagnostics* diagnostics);

/* Consecutive slices of batch_size rows of one batch (the last may be
 * shorter), each absorbed as rh_cuda_engine_update absorbs a batch: the
 * state after the call is the state after that loop of updates, bit for
 * bit. All slices or none: on failure the state is the one before the call
 * and the error is the first failing slice's. diagnostics: count structs,
 * one per slice (count = ceil(rows / batch_size) exactly), each with
 * abi_version and struct_size set; coefficients_out: the last slice's
 * coefficients (host, d values; may be NULL). After it, rh_cuda_engine_revert
 * puts back the state before the call. (ABI 1.6) */
RH_CUDA_API int32_t rh_cuda_engine_update_batches(rh_cuda_engine_t engine, const rh_cuda_batch* batch,
                                                  int64_t batch_size, const rh_cuda_solver_config* config,
                                                  void* coefficients_out, rh_cuda_diagnostics* diagnostics,
                                                  int64_t count);

/* Puts back the state that the engine's last successful update (or
 * update_batches: the state before the call) replaced, so
 * a caller that could not record that update (interrupted before its own
 * commit) keeps its previous state. Valid once, and only until another
 * update or restore is attempted: RH_CUDA_INVALID_STATE otherwise. (ABI 1.3) */
RH_CUDA_API int32_t rh_cuda_engine_revert(rh_cuda_engine_t engine);

/* Predictions X coef + intercept for a batch's X (y and weights unused):
 * host X into host out, or device X into device out (ordered after
 * batch->stream; the engine's stream is joined back to it). */
RH_CUDA_API int32_t rh_cuda_engine_predict(rh_cuda_engine_t engine, const rh_cuda_batch* batch, void* out);

RH_CUDA_API int32_t rh_cuda_engine_synchronize(rh_cuda_engine_t engine);
RH_CUDA_API int32_t rh_cuda_engine_features(rh_cuda_engine_t engine, rh_cuda_features* features);

#ifdef __cplusplus
}
#endif

#endif /* RH_CUDA_H */

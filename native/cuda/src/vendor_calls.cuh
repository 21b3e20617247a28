// cuBLAS and cuSOLVER calls by dtype: one overload set, so the engine's
// templates call `gemv(...)` for float and double alike. Matrices the
// engine keeps row-major (X: n x p) are column-major p x n to the vendor
// libraries; each wrapper says which product it forms.
#pragma once

#include <cublas_v2.h>
#include <cusolverDn.h>

#include <cstdint>

#include "engine_internal.cuh"

namespace rh::cuda::vendor {

// out (n) = X v for row-major X (n x p).
inline void rows_times(cublasHandle_t h, int n, int p, const double* X, const double* v, double* out) {
    const double one = 1.0, zero = 0.0;
    RH_CUBLAS_CHECK(cublasDgemv(h, CUBLAS_OP_T, p, n, &one, X, p, v, 1, &zero, out, 1));
}
inline void rows_times(cublasHandle_t h, int n, int p, const float* X, const float* v, float* out) {
    const float one = 1.0f, zero = 0.0f;
    RH_CUBLAS_CHECK(cublasSgemv(h, CUBLAS_OP_T, p, n, &one, X, p, v, 1, &zero, out, 1));
}

// out (p) = X' s for row-major X (n x p).
inline void transposed_times(cublasHandle_t h, int n, int p, const double* X, const double* s, double* out) {
    const double one = 1.0, zero = 0.0;
    RH_CUBLAS_CHECK(cublasDgemv(h, CUBLAS_OP_N, p, n, &one, X, p, s, 1, &zero, out, 1));
}
inline void transposed_times(cublasHandle_t h, int n, int p, const float* X, const float* s, float* out) {
    const float one = 1.0f, zero = 0.0f;
    RH_CUBLAS_CHECK(cublasSgemv(h, CUBLAS_OP_N, p, n, &one, X, p, s, 1, &zero, out, 1));
}

// C (n x k, column-major) = X B for row-major X (n x p), B column-major p x k.
inline void rows_times_matrix(cublasHandle_t h, int n, int p, int k, const double* X, const double* B, double* C) {
    const double one = 1.0, zero = 0.0;
    RH_CUBLAS_CHECK(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, k, p, &one, X, p, B, p, &zero, C, n));
}
inline void rows_times_matrix(cublasHandle_t h, int n, int p, int k, const float* X, const float* B, float* C) {
    const float one = 1.0f, zero = 0.0f;
    RH_CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, k, p, &one, X, p, B, p, &zero, C, n));
}

// G (d x d, column-major, full) = W' W for row-major W (n x d), by GEMM
// (cuBLAS's SYRK left most of the GPU idle on tall, narrow W).
inline void gram(cublasHandle_t h, int n, int d, const double* W, double* G) {
    const double one = 1.0, zero = 0.0;
    RH_CUBLAS_CHECK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, d, d, n, &one, W, d, W, d, &zero, G, d));
}
inline void gram(cublasHandle_t h, int n, int d, const float* W, float* G) {
    const float one = 1.0f, zero = 0.0f;
    RH_CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, d, d, n, &one, W, d, W, d, &zero, G, d));
}

// Cholesky (upper), LU with partial pivoting, SVD: the dense solves' rungs.
inline int cholesky_workspace(cusolverDnHandle_t h, int d, double* A) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_UPPER, d, A, d, &lwork));
    return lwork;
}
inline int cholesky_workspace(cusolverDnHandle_t h, int d, float* A) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_UPPER, d, A, d, &lwork));
    return lwork;
}
inline void cholesky(cusolverDnHandle_t h, int d, double* A, double* work, int lwork, int* info) {
    RH_CUSOLVER_CHECK(cusolverDnDpotrf(h, CUBLAS_FILL_MODE_UPPER, d, A, d, work, lwork, info));
}
inline void cholesky(cusolverDnHandle_t h, int d, float* A, float* work, int lwork, int* info) {
    RH_CUSOLVER_CHECK(cusolverDnSpotrf(h, CUBLAS_FILL_MODE_UPPER, d, A, d, work, lwork, info));
}
// H^-1 from the upper Cholesky factor in place (its upper triangle).
inline int cholesky_inverse_workspace(cusolverDnHandle_t h, int d, double* A) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(cusolverDnDpotri_bufferSize(h, CUBLAS_FILL_MODE_UPPER, d, A, d, &lwork));
    return lwork;
}
inline int cholesky_inverse_workspace(cusolverDnHandle_t h, int d, float* A) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(cusolverDnSpotri_bufferSize(h, CUBLAS_FILL_MODE_UPPER, d, A, d, &lwork));
    return lwork;
}
inline void cholesky_inverse(cusolverDnHandle_t h, int d, double* A, double* work, int lwork, int* info) {
    RH_CUSOLVER_CHECK(cusolverDnDpotri(h, CUBLAS_FILL_MODE_UPPER, d, A, d, work, lwork, info));
}
inline void cholesky_inverse(cusolverDnHandle_t h, int d, float* A, float* work, int lwork, int* info) {
    RH_CUSOLVER_CHECK(cusolverDnSpotri(h, CUBLAS_FILL_MODE_UPPER, d, A, d, work, lwork, info));
}
inline int lu_workspace(cusolverDnHandle_t h, int d, double* A) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(cusolverDnDgetrf_bufferSize(h, d, d, A, d, &lwork));
    return lwork;
}
inline int lu_workspace(cusolverDnHandle_t h, int d, float* A) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(cusolverDnSgetrf_bufferSize(h, d, d, A, d, &lwork));
    return lwork;
}
inline void lu(cusolverDnHandle_t h, int d, double* A, double* work, int* pivots, int* info) {
    RH_CUSOLVER_CHECK(cusolverDnDgetrf(h, d, d, A, d, work, pivots, info));
}
inline void lu(cusolverDnHandle_t h, int d, float* A, float* work, int* pivots, int* info) {
    RH_CUSOLVER_CHECK(cusolverDnSgetrf(h, d, d, A, d, work, pivots, info));
}
inline void lu_solve(cusolverDnHandle_t h, int d, int nrhs, const double* A, const int* pivots, double* B, int* info) {
    RH_CUSOLVER_CHECK(cusolverDnDgetrs(h, CUBLAS_OP_N, d, nrhs, A, d, pivots, B, d, info));
}
inline void lu_solve(cusolverDnHandle_t h, int d, int nrhs, const float* A, const int* pivots, float* B, int* info) {
    RH_CUSOLVER_CHECK(cusolverDnSgetrs(h, CUBLAS_OP_N, d, nrhs, A, d, pivots, B, d, info));
}
inline int svd_workspace(cusolverDnHandle_t h, int d, double) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(cusolverDnDgesvd_bufferSize(h, d, d, &lwork));
    return lwork;
}
inline int svd_workspace(cusolverDnHandle_t h, int d, float) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(cusolverDnSgesvd_bufferSize(h, d, d, &lwork));
    return lwork;
}
inline void svd(cusolverDnHandle_t h, int d, double* A, double* S, double* U, double* VT, double* work, int lwork,
                double* rwork, int* info) {
    signed char all = 'A';
    RH_CUSOLVER_CHECK(cusolverDnDgesvd(h, all, all, d, d, A, d, S, U, d, VT, d, work, lwork, rwork, info));
}
inline void svd(cusolverDnHandle_t h, int d, float* A, float* S, float* U, float* VT, float* work, int lwork,
                float* rwork, int* info) {
    signed char all = 'A';
    RH_CUSOLVER_CHECK(cusolverDnSgesvd(h, all, all, d, d, A, d, S, U, d, VT, d, work, lwork, rwork, info));
}

// The eigendecomposition of a symmetric A (upper triangle read; A becomes
// the eigenvectors, W the eigenvalues in ascending order): the SVD of a
// symmetric matrix (singular values |lambda|), several times cheaper than
// gesvd at d in the hundreds.
inline int symmetric_eigen_workspace(cusolverDnHandle_t h, int d, const double* A, const double* W) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(
        cusolverDnDsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, d, A, d, W, &lwork));
    return lwork;
}
inline int symmetric_eigen_workspace(cusolverDnHandle_t h, int d, const float* A, const float* W) {
    int lwork = 0;
    RH_CUSOLVER_CHECK(
        cusolverDnSsyevd_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, d, A, d, W, &lwork));
    return lwork;
}
inline void symmetric_eigen(cusolverDnHandle_t h, int d, double* A, double* W, double* work, int lwork, int* info) {
    RH_CUSOLVER_CHECK(
        cusolverDnDsyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, d, A, d, W, work, lwork, info));
}
inline void symmetric_eigen(cusolverDnHandle_t h, int d, float* A, float* W, float* work, int lwork, int* info) {
    RH_CUSOLVER_CHECK(
        cusolverDnSsyevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, d, A, d, W, work, lwork, info));
}

}  // namespace rh::cuda::vendor

// Binds the provider interface to the BLAS/LAPACK library chosen at build
// time. RH_BLAS_PREFIX is the symbol prefix of the library ("scipy_" for the
// scipy-openblas32 wheel, empty for a system OpenBLAS/reference BLAS).
#include "cpu/platform/blas_provider.hpp"

#include <vector>

#include <cstddef>

#ifndef RH_BLAS_PREFIX
#define RH_BLAS_PREFIX
#endif
#ifndef RH_BLAS_PROVIDER_NAME
#define RH_BLAS_PROVIDER_NAME "unknown"
#endif
#define RH_PASTE_(a, b) a##b
#define RH_PASTE(a, b) RH_PASTE_(a, b)
#define RH_SYM(name) RH_PASTE(RH_BLAS_PREFIX, name)

namespace {
using rh::cpu::blas::index_t;
// CBLAS enumerations (values fixed by the CBLAS standard).
enum { kRowMajor = 101, kColMajor = 102 };
enum { kNoTrans = 111, kTrans = 112 };
enum { kUpper = 121, kLower = 122 };
}  // namespace

extern "C" {
void RH_SYM(cblas_dgemv)(int, int, index_t, index_t, double, const double*, index_t, const double*, index_t,
                         double, double*, index_t);
void RH_SYM(cblas_sgemv)(int, int, index_t, index_t, float, const float*, index_t, const float*, index_t, float,
                         float*, index_t);
double RH_SYM(cblas_ddot)(index_t, const double*, index_t, const double*, index_t);
float RH_SYM(cblas_sdot)(index_t, const float*, index_t, const float*, index_t);
void RH_SYM(cblas_dsyrk)(int, int, int, index_t, index_t, double, const double*, index_t, double, double*,
                         index_t);
void RH_SYM(cblas_ssyrk)(int, int, int, index_t, index_t, float, const float*, index_t, float, float*, index_t);
void RH_SYM(cblas_dgemm)(int, int, int, index_t, index_t, index_t, double, const double*, index_t, const double*,
                         index_t, double, double*, index_t);
void RH_SYM(cblas_sgemm)(int, int, int, index_t, index_t, index_t, float, const float*, index_t, const float*,
                         index_t, float, float*, index_t);
// Fortran LAPACK; the trailing size_t arguments are the hidden lengths of
// CHARACTER arguments that gfortran-built libraries expect.
void RH_SYM(dpotrf_)(const char*, const index_t*, double*, const index_t*, index_t*, std::size_t);
void RH_SYM(spotrf_)(const char*, const index_t*, float*, const index_t*, index_t*, std::size_t);
void RH_SYM(dpotrs_)(const char*, const index_t*, const index_t*, const double*, const index_t*, double*,
                     const index_t*, index_t*, std::size_t);
void RH_SYM(spotrs_)(const char*, const index_t*, const index_t*, const float*, const index_t*, float*,
                     const index_t*, index_t*, std::size_t);
void RH_SYM(dgetrf_)(const index_t*, const index_t*, double*, const index_t*, index_t*, index_t*);
void RH_SYM(sgetrf_)(const index_t*, const index_t*, float*, const index_t*, index_t*, index_t*);
void RH_SYM(dgetrs_)(const char*, const index_t*, const index_t*, const double*, const index_t*, const index_t*,
                     double*, const index_t*, index_t*, std::size_t);
void RH_SYM(sgetrs_)(const char*, const index_t*, const index_t*, const float*, const index_t*, const index_t*,
                     float*, const index_t*, index_t*, std::size_t);
void RH_SYM(dpocon_)(const char*, const index_t*, const double*, const index_t*, const double*, double*, double*,
                     index_t*, index_t*, std::size_t);
void RH_SYM(spocon_)(const char*, const index_t*, const float*, const index_t*, const float*, float*, float*,
                     index_t*, index_t*, std::size_t);
void RH_SYM(dgecon_)(const char*, const index_t*, const double*, const index_t*, const double*, double*, double*,
                     index_t*, index_t*, std::size_t);
void RH_SYM(sgecon_)(const char*, const index_t*, const float*, const index_t*, const float*, float*, float*,
                     index_t*, index_t*, std::size_t);
void RH_SYM(dgelsd_)(const index_t*, const index_t*, const index_t*, double*, const index_t*, double*,
                     const index_t*, double*, const double*, index_t*, double*, const index_t*, index_t*,
                     index_t*);
void RH_SYM(sgelsd_)(const index_t*, const index_t*, const index_t*, float*, const index_t*, float*,
                     const index_t*, float*, const float*, index_t*, float*, const index_t*, index_t*, index_t*);
void RH_SYM(dsyevd_)(const char*, const char*, const index_t*, double*, const index_t*, double*, double*,
                     const index_t*, index_t*, const index_t*, index_t*, std::size_t, std::size_t);
#if RH_BLAS_HAS_OPENBLAS_API
int RH_SYM(openblas_get_num_threads)(void);
void RH_SYM(openblas_set_num_threads)(int);
char* RH_SYM(openblas_get_config)(void);
#endif
}

namespace rh::cpu::blas {

// NumPy's matmul for a C-contiguous (rows x cols) matrix times a vector calls
// cblas_?gemv(ColMajor, Trans, cols, rows, ...): the same call here.
void matvec(index_t rows, index_t cols, const double* A, const double* x, double* out) {
    RH_SYM(cblas_dgemv)(kColMajor, kTrans, cols, rows, 1.0, A, cols, x, 1, 0.0, out, 1);
}
void matvec(index_t rows, index_t cols, const float* A, const float* x, float* out) {
    RH_SYM(cblas_sgemv)(kColMajor, kTrans, cols, rows, 1.0f, A, cols, x, 1, 0.0f, out, 1);
}

// NumPy's matmul for A.T (an F-contiguous view) calls gemv(RowMajor, Trans, rows, cols).
void matvec_transposed(index_t rows, index_t cols, const double* A, const double* v, double* out) {
    RH_SYM(cblas_dgemv)(kRowMajor, kTrans, rows, cols, 1.0, A, cols, v, 1, 0.0, out, 1);
}
void matvec_transposed(index_t rows, index_t cols, const float* A, const float* v, float* out) {
    RH_SYM(cblas_sgemv)(kRowMajor, kTrans, rows, cols, 1.0f, A, cols, v, 1, 0.0f, out, 1);
}

void matvec_transposed_accumulate(index_t rows, index_t cols, const double* A, const double* v, double* out) {
    RH_SYM(cblas_dgemv)(kRowMajor, kTrans, rows, cols, 1.0, A, cols, v, 1, 1.0, out, 1);
}
void matvec_transposed_accumulate(index_t rows, index_t cols, const float* A, const float* v, float* out) {
    RH_SYM(cblas_sgemv)(kRowMajor, kTrans, rows, cols, 1.0f, A, cols, v, 1, 1.0f, out, 1);
}

// np.dot(vector, C-contiguous matrix) calls gemv(RowMajor, Trans, n, n).
void vecmat(index_t size, const double* v, const double* A, double* out) {
    RH_SYM(cblas_dgemv)(kRowMajor, kTrans, size, size, 1.0, A, size, v, 1, 0.0, out, 1);
}
void vecmat(index_t size, const float* v, const float* A, float* out) {
    RH_SYM(cblas_sgemv)(kRowMajor, kTrans, size, size, 1.0f, A, size, v, 1, 0.0f, out, 1);
}

double dot(index_t size, const double* a, const double* b) { return RH_SYM(cblas_ddot)(size, a, 1, b, 1); }
float dot(index_t size, const float* a, const float* b) { return RH_SYM(cblas_sdot)(size, a, 1, b, 1); }

// Row-major A (rows x cols) is column-major A' (cols x rows, lda = cols), so
// A'A = (A')(A')' is SYRK NoTrans on that view; its column-major lower
// triangle is the row-major upper triangle.
void gram_upper(index_t rows, index_t cols, const double* A, double* C) {
    RH_SYM(cblas_dsyrk)(kColMajor, kLower, kNoTrans, cols, rows, 1.0, A, cols, 0.0, C, cols);
}
void gram_upper(index_t rows, index_t cols, const float* A, float* C) {
    RH_SYM(cblas_ssyrk)(kColMajor, kLower, kNoTrans, cols, rows, 1.0f, A, cols, 0.0f, C, cols);
}

void gram_upper_accumulate(index_t rows, index_t cols, const double* A, double alpha, double* C) {
    RH_SYM(cblas_dsyrk)(kColMajor, kLower, kNoTrans, cols, rows, alpha, A, cols, 1.0, C, cols);
}
void gram_upper_accumulate(index_t rows, index_t cols, const float* A, float alpha, float* C) {
    RH_SYM(cblas_ssyrk)(kColMajor, kLower, kNoTrans, cols, rows, alpha, A, cols, 1.0f, C, cols);
}

void gemm_transposed_left(index_t rows, index_t cols, const double* A, const double* B, double* C) {
    RH_SYM(cblas_dgemm)(kRowMajor, kTrans, kNoTrans, cols, cols, rows, 1.0, A, cols, B, cols, 0.0, C, cols);
}
void gemm_transposed_left(index_t rows, index_t cols, const float* A, const float* B, float* C) {
    RH_SYM(cblas_sgemm)(kRowMajor, kTrans, kNoTrans, cols, cols, rows, 1.0f, A, cols, B, cols, 0.0f, C, cols);
}

index_t cholesky_factor(index_t n, double* A) {
    index_t info = 0;
    RH_SYM(dpotrf_)("L", &n, A, &n, &info, 1);
    return info;
}
index_t cholesky_factor(index_t n, float* A) {
    index_t info = 0;
    RH_SYM(spotrf_)("L", &n, A, &n, &info, 1);
    return info;
}
void cholesky_solve(index_t n, const double* factor, double* b, index_t columns) {
    index_t info = 0;
    RH_SYM(dpotrs_)("L", &n, &columns, factor, &n, b, &n, &info, 1);
}
void cholesky_solve(index_t n, const float* factor, float* b, index_t columns) {
    index_t info = 0;
    RH_SYM(spotrs_)("L", &n, &columns, factor, &n, b, &n, &info, 1);
}

index_t lu_factor(index_t n, double* A, index_t* pivots) {
    index_t info = 0;
    RH_SYM(dgetrf_)(&n, &n, A, &n, pivots, &info);
    return info;
}
index_t lu_factor(index_t n, float* A, index_t* pivots) {
    index_t info = 0;
    RH_SYM(sgetrf_)(&n, &n, A, &n, pivots, &info);
    return info;
}
void lu_solve(index_t n, const double* factor, const index_t* pivots, double* b, index_t columns) {
    index_t info = 0;
    RH_SYM(dgetrs_)("N", &n, &columns, factor, &n, pivots, b, &n, &info, 1);
}
void lu_solve(index_t n, const float* factor, const index_t* pivots, float* b, index_t columns) {
    index_t info = 0;
    RH_SYM(sgetrs_)("N", &n, &columns, factor, &n, pivots, b, &n, &info, 1);
}

double cholesky_rcond(index_t n, const double* factor, double anorm, double* work, index_t* iwork) {
    index_t info = 0;
    double rcond = 0;
    RH_SYM(dpocon_)("L", &n, factor, &n, &anorm, &rcond, work, iwork, &info, 1);
    return info == 0 ? rcond : 0.0;
}
float cholesky_rcond(index_t n, const float* factor, float anorm, float* work, index_t* iwork) {
    index_t info = 0;
    float rcond = 0;
    RH_SYM(spocon_)("L", &n, factor, &n, &anorm, &rcond, work, iwork, &info, 1);
    return info == 0 ? rcond : 0.0f;
}
double lu_rcond(index_t n, const double* factor, double anorm, double* work, index_t* iwork) {
    index_t info = 0;
    double rcond = 0;
    RH_SYM(dgecon_)("1", &n, factor, &n, &anorm, &rcond, work, iwork, &info, 1);
    return info == 0 ? rcond : 0.0;
}
float lu_rcond(index_t n, const float* factor, float anorm, float* work, index_t* iwork) {
    index_t info = 0;
    float rcond = 0;
    RH_SYM(sgecon_)("1", &n, factor, &n, &anorm, &rcond, work, iwork, &info, 1);
    return info == 0 ? rcond : 0.0f;
}

LeastSquaresWorkspace least_squares_workspace(index_t n, double) {
    index_t one = 1, rank = 0, info = 0, query = -1, iwork = 0;
    double work = 0, rcond = -1, a = 0, b = 0, s = 0;
    RH_SYM(dgelsd_)(&n, &n, &one, &a, &n, &b, &n, &s, &rcond, &rank, &work, &query, &iwork, &info);
    return {static_cast<index_t>(work) + 1, iwork > 1 ? iwork : 1, n};
}
LeastSquaresWorkspace least_squares_workspace(index_t n, float) {
    index_t one = 1, rank = 0, info = 0, query = -1, iwork = 0;
    float work = 0, rcond = -1, a = 0, b = 0, s = 0;
    RH_SYM(sgelsd_)(&n, &n, &one, &a, &n, &b, &n, &s, &rcond, &rank, &work, &query, &iwork, &info);
    return {static_cast<index_t>(work) + 1, iwork > 1 ? iwork : 1, n};
}
index_t least_squares_solve(index_t n, double* A, double* b, double rcond, double* singular_values, double* work,
                            index_t work_size, index_t* iwork) {
    index_t one = 1, rank = 0, info = 0;
    RH_SYM(dgelsd_)(&n, &n, &one, A, &n, b, &n, singular_values, &rcond, &rank, work, &work_size, iwork, &info);
    return info;
}
index_t least_squares_solve(index_t n, float* A, float* b, float rcond, float* singular_values, float* work,
                            index_t work_size, index_t* iwork) {
    index_t one = 1, rank = 0, info = 0;
    RH_SYM(sgelsd_)(&n, &n, &one, A, &n, b, &n, singular_values, &rcond, &rank, work, &work_size, iwork, &info);
    return info;
}

index_t symmetric_eigen(index_t n, double* A, double* eigenvalues) {
    index_t info = 0, query = -1, iwork_size = 0;
    double work_size = 0;
    RH_SYM(dsyevd_)("V", "U", &n, A, &n, eigenvalues, &work_size, &query, &iwork_size, &query, &info, 1, 1);
    if (info != 0) return info;
    const index_t lwork = static_cast<index_t>(work_size) + 1, liwork = iwork_size > 1 ? iwork_size : 1;
    std::vector<double> work(static_cast<std::size_t>(lwork));
    std::vector<index_t> iwork(static_cast<std::size_t>(liwork));
    RH_SYM(dsyevd_)("V", "U", &n, A, &n, eigenvalues, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
    return info;
}

#if RH_BLAS_HAS_OPENBLAS_API
int get_num_threads() { return RH_SYM(openblas_get_num_threads)(); }
void set_num_threads(int threads) { RH_SYM(openblas_set_num_threads)(threads); }
std::string provider_config() { return RH_SYM(openblas_get_config)(); }
#else
int get_num_threads() { return 1; }
void set_num_threads(int) {}
std::string provider_config() { return "reference BLAS (single-threaded)"; }
#endif
std::string provider_name() { return RH_BLAS_PROVIDER_NAME; }

}  // namespace rh::cpu::blas

// The one small interface between the CPU engine and its BLAS/LAPACK
// provider. Everything the engine needs from the library goes through these
// overloads; blas_provider.cpp binds them to the provider chosen at build
// time (scipy-openblas32 with its `scipy_` symbol prefix, or a system BLAS).
//
// Matrices are row-major as NumPy hands them over. The level-2 calls are made
// with exactly the CBLAS arguments NumPy's matmul/dot use for the same
// expression, so with the same library they round identically (the line
// search compares objective values at noise level; see docs/native-cpu.md).
#pragma once

#include <cstdint>
#include <string>

namespace rh::cpu::blas {

using index_t = std::int32_t;  // LP64 provider: 32-bit integers

// out = A x, A rows x cols row-major (NumPy `A @ x`).
void matvec(index_t rows, index_t cols, const double* A, const double* x, double* out);
void matvec(index_t rows, index_t cols, const float* A, const float* x, float* out);

// out = A' v, A rows x cols row-major (NumPy `A.T @ v`).
void matvec_transposed(index_t rows, index_t cols, const double* A, const double* v, double* out);
void matvec_transposed(index_t rows, index_t cols, const float* A, const float* v, float* out);
// out += A' v.
void matvec_transposed_accumulate(index_t rows, index_t cols, const double* A, const double* v, double* out);
void matvec_transposed_accumulate(index_t rows, index_t cols, const float* A, const float* v, float* out);

// out = v' A for square A (NumPy `np.dot(v, A)`).
void vecmat(index_t size, const double* v, const double* A, double* out);
void vecmat(index_t size, const float* v, const float* A, float* out);

double dot(index_t size, const double* a, const double* b);
float dot(index_t size, const float* a, const float* b);

// Upper triangle (row-major) of C = A' A, A rows x cols row-major, C cols x cols.
void gram_upper(index_t rows, index_t cols, const double* A, double* C);
void gram_upper(index_t rows, index_t cols, const float* A, float* C);

// Upper triangle (row-major) of C += alpha A' A (SYRK with beta = 1).
void gram_upper_accumulate(index_t rows, index_t cols, const double* A, double alpha, double* C);
void gram_upper_accumulate(index_t rows, index_t cols, const float* A, float alpha, float* C);

// Full C = A' B by GEMM, for measuring the Gram against the library's GEMM.
void gemm_transposed_left(index_t rows, index_t cols, const double* A, const double* B, double* C);
void gemm_transposed_left(index_t rows, index_t cols, const float* A, const float* B, float* C);

// LAPACK. Cholesky of a symmetric matrix reads the upper triangle of the
// row-major matrix (the lower triangle of its column-major view); returns
// LAPACK info (0 = success, > 0 = not positive definite).
index_t cholesky_factor(index_t n, double* A);
index_t cholesky_factor(index_t n, float* A);
// b: n x columns, column-major (one right-hand side by default).
void cholesky_solve(index_t n, const double* factor, double* b, index_t columns = 1);
void cholesky_solve(index_t n, const float* factor, float* b, index_t columns = 1);

// LU with partial pivoting (getrf) of a matrix stored column-major, as
// NumPy's solve hands it to LAPACK; returns LAPACK info (> 0 = exactly
// singular). lu_solve applies the factors (getrs, no transpose) to the
// columns of b (n x columns, column-major).
index_t lu_factor(index_t n, double* A_colmajor, index_t* pivots);
index_t lu_factor(index_t n, float* A_colmajor, index_t* pivots);
void lu_solve(index_t n, const double* factor, const index_t* pivots, double* b, index_t columns = 1);
void lu_solve(index_t n, const float* factor, const index_t* pivots, float* b, index_t columns = 1);

// Reciprocal condition number (1-norm) estimates from the factors above:
// pocon of a cholesky_factor (work 3n, iwork n), gecon of an lu_factor
// (work 4n, iwork n). anorm is the 1-norm of the original matrix.
double cholesky_rcond(index_t n, const double* factor, double anorm, double* work, index_t* iwork);
float cholesky_rcond(index_t n, const float* factor, float anorm, float* work, index_t* iwork);
double lu_rcond(index_t n, const double* factor, double anorm, double* work, index_t* iwork);
float lu_rcond(index_t n, const float* factor, float anorm, float* work, index_t* iwork);

// Minimum-norm least squares by SVD (gelsd) of a square matrix stored
// column-major (destroyed); b is overwritten by the solution.
struct LeastSquaresWorkspace {
    index_t work = 0;   // elements of T
    index_t iwork = 0;  // elements of index_t
    index_t singular_values = 0;
};
LeastSquaresWorkspace least_squares_workspace(index_t n, double);
LeastSquaresWorkspace least_squares_workspace(index_t n, float);
index_t least_squares_solve(index_t n, double* A, double* b, double rcond, double* singular_values,
                            double* work, index_t work_size, index_t* iwork);
index_t least_squares_solve(index_t n, float* A, float* b, float rcond, float* singular_values,
                            float* work, index_t work_size, index_t* iwork);

// Eigenvalues (ascending) and eigenvectors of a symmetric n x n matrix
// (syevd): A (either triangle's layout: it is symmetric) is overwritten by
// the eigenvectors, column k of the column-major result (row k of a
// row-major reading) belonging to eigenvalues[k]. Returns LAPACK info.
// Double only: for the host-side statistics (inference), not the solver.
index_t symmetric_eigen(index_t n, double* A, double* eigenvalues);

// Threads of the provider's own pool (process-wide).
int get_num_threads();
void set_num_threads(int threads);

// "scipy-openblas32 0.3.34..." or "system-openblas ...": name and library config.
std::string provider_name();
std::string provider_config();

}  // namespace rh::cpu::blas

// The C ABI's layout, checked at compile time: rh_cuda.h against the
// contract native/contracts/rh_cuda_contract.json (the asserts are generated
// from it by native/contracts/generate_abi_asserts.py). Compiled on every
// build, GPU or not; a drift between header and contract fails the build.
#include "rh_cuda.h"

#include "rh_cuda_contract_asserts.inc"

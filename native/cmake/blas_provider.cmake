# Locates the BLAS/LAPACK provider and defines the imported target rh::blas
# plus RH_BLAS_DEFINITIONS (symbol prefix, provider name) for blas_provider.cpp.
#
#   scipy_openblas32 : the scipy-openblas32 wheel (what NumPy/SciPy ship),
#                      located through its Python helpers; symbols carry the
#                      `scipy_` prefix. RH_SCIPY_OPENBLAS_LIBDIR overrides.
#   system_openblas  : Debian libopenblas-dev (unprefixed symbols).
#   reference        : Debian reference BLAS + LAPACK (unprefixed, single-threaded).
#   auto             : scipy_openblas32 where the interpreter has the wheel,
#                      else a system OpenBLAS, else the reference BLAS/LAPACK
#                      (a clean `cmake -S native -B build` for the C++ library).
# RH_BLAS_LINK_LIBRARIES: the provider's libraries as absolute paths (what an
# installed static C++ library's consumers link).

if(RH_BLAS_PROVIDER STREQUAL "auto")
  set(RH_BLAS_PROVIDER reference)
  if(Python_EXECUTABLE)
    execute_process(COMMAND "${Python_EXECUTABLE}" -c "import scipy_openblas32" RESULT_VARIABLE _rh_has_wheel
                    OUTPUT_QUIET ERROR_QUIET)
    if(_rh_has_wheel EQUAL 0)
      set(RH_BLAS_PROVIDER scipy_openblas32)
    endif()
  endif()
  if(RH_BLAS_PROVIDER STREQUAL "reference")
    find_library(_rh_system_openblas NAMES openblas PATH_SUFFIXES openblas-pthread)
    if(_rh_system_openblas)
      set(RH_BLAS_PROVIDER system_openblas)
    endif()
  endif()
  message(STATUS "BLAS provider auto: ${RH_BLAS_PROVIDER}")
endif()

if(RH_BLAS_PROVIDER STREQUAL "scipy_openblas32")
  if(NOT RH_SCIPY_OPENBLAS_LIBDIR)
    if(NOT Python_EXECUTABLE)
      message(FATAL_ERROR "scipy_openblas32 provider: no Python interpreter found to locate the wheel")
    endif()
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -c
              "import scipy_openblas32 as s; print(s.get_lib_dir()); print(s.get_library()); print(s.__version__)"
      OUTPUT_VARIABLE _rh_scipy_openblas RESULT_VARIABLE _rh_result OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _rh_result EQUAL 0)
      message(FATAL_ERROR "scipy_openblas32 provider: `import scipy_openblas32` failed with ${Python_EXECUTABLE}; "
                          "install it with `python -m pip install scipy-openblas32`")
    endif()
    string(REPLACE "\n" ";" _rh_scipy_openblas "${_rh_scipy_openblas}")
    list(GET _rh_scipy_openblas 0 RH_SCIPY_OPENBLAS_LIBDIR)
    list(GET _rh_scipy_openblas 1 _rh_library_name)
    list(GET _rh_scipy_openblas 2 RH_SCIPY_OPENBLAS_VERSION)
  else()
    set(_rh_library_name scipy_openblas)
    set(RH_SCIPY_OPENBLAS_VERSION unknown)
  endif()
  set(RH_BLAS_LIBRARY "${RH_SCIPY_OPENBLAS_LIBDIR}/lib${_rh_library_name}.so")
  if(NOT EXISTS "${RH_BLAS_LIBRARY}")
    message(FATAL_ERROR "scipy_openblas32 provider: ${RH_BLAS_LIBRARY} does not exist")
  endif()
  add_library(rh::blas SHARED IMPORTED GLOBAL)
  set_target_properties(rh::blas PROPERTIES IMPORTED_LOCATION "${RH_BLAS_LIBRARY}"
                                            IMPORTED_SONAME "lib${_rh_library_name}.so")
  set(RH_BLAS_DEFINITIONS RH_BLAS_PREFIX=scipy_ RH_BLAS_HAS_OPENBLAS_API=1
      "RH_BLAS_PROVIDER_NAME=\"scipy-openblas32 ${RH_SCIPY_OPENBLAS_VERSION}\"")
  set(RH_BLAS_LINK_LIBRARIES "${RH_BLAS_LIBRARY}")
  message(STATUS "BLAS provider: scipy-openblas32 ${RH_SCIPY_OPENBLAS_VERSION} (${RH_BLAS_LIBRARY})")
elseif(RH_BLAS_PROVIDER STREQUAL "system_openblas")
  find_library(RH_BLAS_LIBRARY NAMES openblas PATH_SUFFIXES openblas-pthread REQUIRED)
  add_library(rh::blas UNKNOWN IMPORTED GLOBAL)
  set_target_properties(rh::blas PROPERTIES IMPORTED_LOCATION "${RH_BLAS_LIBRARY}")
  set(RH_BLAS_DEFINITIONS RH_BLAS_PREFIX= RH_BLAS_HAS_OPENBLAS_API=1 "RH_BLAS_PROVIDER_NAME=\"system-openblas\"")
  set(RH_BLAS_LINK_LIBRARIES "${RH_BLAS_LIBRARY}")
  message(STATUS "BLAS provider: system OpenBLAS (${RH_BLAS_LIBRARY})")
elseif(RH_BLAS_PROVIDER STREQUAL "reference")
  find_package(BLAS REQUIRED)
  find_package(LAPACK REQUIRED)
  add_library(rh::blas INTERFACE IMPORTED GLOBAL)
  target_link_libraries(rh::blas INTERFACE ${LAPACK_LIBRARIES} ${BLAS_LIBRARIES})
  set(RH_BLAS_DEFINITIONS RH_BLAS_PREFIX= RH_BLAS_HAS_OPENBLAS_API=0 "RH_BLAS_PROVIDER_NAME=\"reference-blas\"")
  set(RH_BLAS_LINK_LIBRARIES ${LAPACK_LIBRARIES} ${BLAS_LIBRARIES})
  message(STATUS "BLAS provider: reference BLAS/LAPACK")
else()
  message(FATAL_ERROR "unknown RH_BLAS_PROVIDER '${RH_BLAS_PROVIDER}'")
endif()

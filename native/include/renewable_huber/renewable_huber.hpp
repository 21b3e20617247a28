// renewable-huber's C++ API: streaming (renewable) Huber regression with a
// bounded memory (docs/cpp.md).
//
//   #include <renewable_huber/renewable_huber.hpp>
//   renewable_huber::Regressor<double> model;                 // Parameters{} as in Python
//   model.partial_fit(renewable_huber::matrix(X, rows, cols), renewable_huber::vector(y));
//   model.coef(); model.intercept(); model.diagnostics(); model.save("model.npz");
#pragma once

#include "renewable_huber/arrays.hpp"
#include "renewable_huber/errors.hpp"
#include "renewable_huber/inference.hpp"
#include "renewable_huber/parameters.hpp"
#include "renewable_huber/regressor.hpp"
#include "renewable_huber/state.hpp"
#include "renewable_huber/version.hpp"

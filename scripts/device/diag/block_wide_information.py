"""Diagnosis (device only): the wide block kernel's information at d = 33
against the pipeline's and NumPy's, for the case whose test failed."""
import os, sys, warnings
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "backends"))
from test_native_cuda_block_solver import contaminated, fit_stream  # noqa: E402
from renewable_huber import RenewableHuberRegressor  # noqa: E402

for features, weighted in ((32, True), (32, False), (63, True)):
    X, y, w = contaminated(6000, features, "float64", seed=8, weighted=weighted)
    out = {}
    for solver in ("block", "pipeline"):
        os.environ["RH_CUDA_SOLVER"] = solver
        model, paths = fit_stream(X, y, w, 2000, dtype="float64", penalty="none")
        out[solver] = (model.state_, paths, model.n_iter_)
    os.environ.pop("RH_CUDA_SOLVER")
    ref = RenewableHuberRegressor(backend="numpy", dtype="float64", penalty="none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in range(0, 6000, 2000):
            ref.partial_fit(X[s:s + 2000], y[s:s + 2000], None if w is None else w[s:s + 2000])
    R = ref.state_
    scale = np.abs(R.information).max()
    for name, (st, paths, iters) in out.items():
        print(f"p={features} weighted={weighted} {name:8s} paths={paths} iters={iters} "
              f"coef-vs-numpy={np.abs(st.coefficients - R.coefficients).max():.3e} "
              f"J-vs-numpy/scale={np.abs(st.information - R.information).max() / scale:.3e}")
    b, p = out["block"][0], out["pipeline"][0]
    print(f"p={features} weighted={weighted} block-vs-pipeline coef={np.abs(b.coefficients - p.coefficients).max():.3e} "
          f"J/scale={np.abs(b.information - p.information).max() / scale:.3e}")

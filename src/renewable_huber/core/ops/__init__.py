"""``ArrayOps`` over the array frameworks (CuPy, PyTorch, TensorFlow).

Each module here imports its framework at import time; this package itself
imports none of them, so ``renewable_huber`` works without any installed.
Every framework's ops add the same few methods to the ``ArrayOps`` protocol,
for the backend that runs the reference update over them
(``backends/framework_backend.py``):

    is_native(value)     an array of this framework
    asarray(value, name) the model-dtype array on the ops' device: a native
                         array on that device is used in place, a host one
                         (NumPy, a list, a CPU array of a GPU framework) is
                         converted once; a device array elsewhere is refused
    copy(value)          an independent array on the ops' device
    to_numpy(x)          an independent host NumPy copy
    published(x)         what callers receive (the framework's own array type)
    context()            the scope every computation of the backend runs in

and, for validating the framework's own arrays on their device
(backends/framework_inputs.py): kind (NumPy's dtype kind), flatten,
any_negative, sum_float64.
"""

// tf_ignite_data_layout.h -- the compiled layout decoder of the op library
// (tf_ignite_data_layout.cc), a method of the _tf_ignite_data module.
#ifndef TF_IGNITE_DATA_LAYOUT_H_
#define TF_IGNITE_DATA_LAYOUT_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace tfi {

// decode_layout(page, n, row_len, fixed_idx, fixed_ref, leaves) -> bool (see the .cc).
PyObject* PyDecodeLayout(PyObject* self, PyObject* args);

}  // namespace tfi

#endif  // TF_IGNITE_DATA_LAYOUT_H_

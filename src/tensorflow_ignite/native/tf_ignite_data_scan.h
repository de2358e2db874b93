// tf_ignite_data_scan.h -- the compiled scan pump of the op library
// (tf_ignite_data_scan.cc), a type of the _tf_ignite_data module.
#ifndef TF_IGNITE_DATA_SCAN_H_
#define TF_IGNITE_DATA_SCAN_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace tfi {

// Adds the ScanPump type to the module; -1 with a Python error when it cannot.
int AddScanPump(PyObject* module);

}  // namespace tfi

#endif  // TF_IGNITE_DATA_SCAN_H_

// tf_ignite_data_rows.h -- a scan page's row identities (tf_ignite_data_rows.cc),
// computed by the scan pump's thread and by the module function scan_row_ids.
#ifndef TF_IGNITE_DATA_ROWS_H_
#define TF_IGNITE_DATA_ROWS_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <vector>

namespace tfi {

// Every row's key (LONG or INT keys) as int64 into ids[n] and its Java hashCode() into
// hashes[n], walking the n (key, value) rows of `rows` (size bytes); false when the page is
// not one it takes (no GIL needed: only the pointers given are touched).
bool ScanRowIds(const unsigned char* rows, int64_t size, int64_t n, int64_t* ids, uint32_t* hashes);

// (ids, hashes) as two bytes objects (GIL held); nullptr with a Python error.
PyObject* RowIdsTuple(const std::vector<int64_t>& ids, const std::vector<uint32_t>& hashes);

// scan_row_ids(rows, n) -> (ids: bytes, hashes: bytes) | None.
PyObject* PyScanRowIds(PyObject* self, PyObject* args);

}  // namespace tfi

#endif  // TF_IGNITE_DATA_ROWS_H_

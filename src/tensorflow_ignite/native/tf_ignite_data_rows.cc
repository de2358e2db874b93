// tf_ignite_data_rows.cc -- a scan page's row identities, computed without
// the GIL: the scan pump's thread computes them for every page it receives
// (tf_ignite_data_scan.cc), so the reader does not (data/reader.py _row_ids).
//
// A scan page holds row_count (key, value) pairs back to back.  For pages
// whose keys are all LONG or INT (the keys a cache read as a dataset has),
// ScanRowIds walks the rows -- each value skipped by its type code and length
// fields, bounds-checked, as protocol/columns/rows.py's skip_value does -- and
// writes every row's identity (the key, as int64) and its Java hashCode()
// (Long: (int) (v ^ v >>> 32); Integer: the value), from which Python takes
// the affinity partition.  Any page it does not take (another key type, a
// value type it does not know how to skip, bytes that do not fill the page
// exactly) gets no ids: Python computes them, and raises what it raises for
// such a page, as before.
//
// scan_row_ids(rows, n) -> (ids: bytes, hashes: bytes) | None, a function of
// the module: the same computation, for tests that compare it with Python's.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tf_ignite_data_rows.h"

namespace tfi {
namespace {

// Type codes (protocol/codes.py TypeCode) and their sizes on the wire.
constexpr int kInt = 3;
constexpr int kLong = 4;
constexpr int kString = 9;
constexpr int kWrapped = 27;  // BINARY_OBJ: int length, bytes, int offset
constexpr int kObj = 103;
constexpr int kOptimized = 254;  // OPTIMIZED (-2) as a byte

// 1 + the value's size for fixed-size codes (layout.py VALUE_SIZE), else 0.
int FixedSize(int code) {
  switch (code) {
    case 1:    // BYTE
    case 8:    // BOOL
      return 2;
    case 2:    // SHORT
    case 7:    // CHAR
      return 3;
    case 3:    // INT
    case 5:    // FLOAT
      return 5;
    case 4:    // LONG
    case 6:    // DOUBLE
    case 11:   // DATE
    case 36:   // TIME
      return 9;
    case 10:   // UUID
      return 17;
    case 33:   // TIMESTAMP
      return 13;
    case 101:  // NULL
      return 1;
    default:
      return 0;
  }
}

// Item size of primitive arrays (types.py ARRAY_DTYPES), else 0.
int ArrayItem(int code) {
  switch (code) {
    case 12:  // BYTE_ARR
    case 19:  // BOOL_ARR
      return 1;
    case 13:  // SHORT_ARR
    case 18:  // CHAR_ARR
      return 2;
    case 14:  // INT_ARR
    case 16:  // FLOAT_ARR
      return 4;
    case 15:  // LONG_ARR
    case 17:  // DOUBLE_ARR
      return 8;
    default:
      return 0;
  }
}

int32_t LoadI32(const unsigned char* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, 4);  // little-endian hosts only (x86-64, aarch64), as the rest of the library
  return static_cast<int32_t>(v);
}

// Offset just past the value at `pos` (of `size` bytes), or -1 if it cannot be skipped here.
int64_t SkipValue(const unsigned char* buf, int64_t pos, int64_t size) {
  if (pos >= size) return -1;
  const int code = buf[pos];
  int64_t end = -1;
  const int fixed = FixedSize(code);
  if (fixed > 0) {
    end = pos + fixed;
  } else if (code == kObj) {
    if (pos + 24 > size) return -1;
    const int32_t length = LoadI32(buf + pos + 12);
    if (length < 24) return -1;
    end = pos + length;
  } else {
    const int item = ArrayItem(code);
    if (item == 0 && code != kString && code != kWrapped && code != kOptimized) return -1;
    if (pos + 5 > size) return -1;
    const int32_t length = LoadI32(buf + pos + 1);
    if (length < 0) return -1;
    end = pos + 5 + static_cast<int64_t>(length) * (item > 0 ? item : 1) + (code == kWrapped ? 4 : 0);
  }
  return end <= size ? end : -1;
}

}  // namespace

bool ScanRowIds(const unsigned char* rows, int64_t size, int64_t n, int64_t* ids, uint32_t* hashes) {
  if (n < 0 || size < 0 || n * 2 > size) return false;
  int64_t pos = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (pos >= size) return false;
    const int code = rows[pos];
    if (code == kLong) {
      if (pos + 9 > size) return false;
      int64_t v = 0;
      std::memcpy(&v, rows + pos + 1, 8);
      const uint64_t u = static_cast<uint64_t>(v);
      ids[r] = v;
      hashes[r] = static_cast<uint32_t>(u ^ (u >> 32));
      pos += 9;
    } else if (code == kInt) {
      if (pos + 5 > size) return false;
      const int32_t v = LoadI32(rows + pos + 1);
      ids[r] = v;
      hashes[r] = static_cast<uint32_t>(v);
      pos += 5;
    } else {
      return false;
    }
    pos = SkipValue(rows, pos, size);
    if (pos < 0) return false;
  }
  return pos == size;
}

PyObject* PyScanRowIds(PyObject*, PyObject* args) {
  Py_buffer rows;
  long long n = 0;
  if (!PyArg_ParseTuple(args, "y*L:scan_row_ids", &rows, &n)) return nullptr;
  if (n < 0) {
    PyBuffer_Release(&rows);
    PyErr_SetString(PyExc_ValueError, "scan_row_ids: n must be >= 0");
    return nullptr;
  }
  if (n > rows.len / 2) {  // fewer than 2 bytes a row: not a page ScanRowIds takes
    PyBuffer_Release(&rows);
    Py_RETURN_NONE;
  }
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::vector<uint32_t> hashes(static_cast<size_t>(n));
  bool ok = false;
  Py_BEGIN_ALLOW_THREADS
  ok = ScanRowIds(static_cast<const unsigned char*>(rows.buf), rows.len, n, ids.data(), hashes.data());
  Py_END_ALLOW_THREADS
  PyBuffer_Release(&rows);
  if (!ok) Py_RETURN_NONE;
  return RowIdsTuple(ids, hashes);
}

PyObject* RowIdsTuple(const std::vector<int64_t>& ids, const std::vector<uint32_t>& hashes) {
  // Not Py_BuildValue("y#"): an empty vector's data() may be null, which "y#" makes None.
  PyObject* a = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(ids.data()),
                                          static_cast<Py_ssize_t>(ids.size() * sizeof(int64_t)));
  PyObject* b = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(hashes.data()),
                                          static_cast<Py_ssize_t>(hashes.size() * sizeof(uint32_t)));
  PyObject* out = a != nullptr && b != nullptr ? PyTuple_Pack(2, a, b) : nullptr;
  Py_XDECREF(a);
  Py_XDECREF(b);
  return out;
}

}  // namespace tfi

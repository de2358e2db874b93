// tf_ignite_data_layout.cc -- the compiled layout decoder of the op library
// (_tf_ignite_data): decode_layout(), built into the same extension module as
// tf_ignite_data.cc, which lists it among the module's methods.
//
// The compiled layout decoder (protocol/columns/layout.py, Layout): a page
// whose rows all repeat one layout is checked and gathered into its columns in
// one pass over the rows, with the GIL released.
//
// decode_layout(page, n, row_len, fixed_idx, fixed_ref, leaves) -> bool
//   page: the rows (n * row_len bytes, read-only buffer);
//   fixed_idx: int64 offsets within a row that every row must repeat;
//   fixed_ref: uint8, row 0's bytes at those offsets;
//   leaves: sequence of (offset, width, kind, out): `width` bytes at `offset`
//   of every row go to out[row * width ...]; kind 0 copies them, kind 1 writes
//   1 for a non-zero byte and 0 for a zero one (booleans).  `out` is a
//   writable C-contiguous buffer of exactly n * width bytes.
// Returns False, leaving the outputs partly written, when a row does not
// repeat the layout; raises ValueError for arguments that do not fit.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tf_ignite_data_layout.h"

namespace tfi {
namespace {

struct LayoutLeaf {
  int64_t offset;
  int64_t width;
  int kind;
  unsigned char* out;
};

// GIL released: only the pointers handed in are touched.
bool GatherLayout(const unsigned char* page, int64_t n, int64_t row_len, const int64_t* fixed_idx,
                  const unsigned char* fixed_ref, int64_t fixed_count,
                  const std::vector<LayoutLeaf>& leaves) {
  for (int64_t r = 0; r < n; ++r) {
    const unsigned char* row = page + r * row_len;
    for (int64_t j = 0; j < fixed_count; ++j) {
      if (row[fixed_idx[j]] != fixed_ref[j]) return false;
    }
    for (const LayoutLeaf& leaf : leaves) {
      const unsigned char* src = row + leaf.offset;
      unsigned char* dst = leaf.out + r * leaf.width;
      if (leaf.kind == 0) {
        std::memcpy(dst, src, static_cast<size_t>(leaf.width));
      } else {
        for (int64_t b = 0; b < leaf.width; ++b) dst[b] = src[b] != 0 ? 1 : 0;
      }
    }
  }
  return true;
}

}  // namespace

PyObject* PyDecodeLayout(PyObject*, PyObject* args) {
  PyObject *page_obj = nullptr, *idx_obj = nullptr, *ref_obj = nullptr, *leaves_obj = nullptr;
  long long n = 0, row_len = 0;
  if (!PyArg_ParseTuple(args, "OLLOOO:decode_layout", &page_obj, &n, &row_len, &idx_obj, &ref_obj,
                        &leaves_obj)) {
    return nullptr;
  }
  if (n < 0 || row_len <= 0) {
    PyErr_SetString(PyExc_ValueError, "decode_layout: n must be >= 0 and row_len > 0");
    return nullptr;
  }
  std::vector<Py_buffer> held;
  auto release = [&held]() {
    for (Py_buffer& b : held) PyBuffer_Release(&b);
  };
  auto fail = [&release](const std::string& message) -> PyObject* {
    release();
    PyErr_SetString(PyExc_ValueError, message.c_str());
    return nullptr;
  };
  PyObject* seq = PySequence_Fast(leaves_obj, "decode_layout: leaves must be a sequence");
  if (seq == nullptr) return nullptr;
  const Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
  held.reserve(static_cast<size_t>(count) + 3);
  Py_buffer b;
  if (PyObject_GetBuffer(page_obj, &b, PyBUF_SIMPLE) < 0) {
    Py_DECREF(seq);
    return nullptr;
  }
  held.push_back(b);
  const Py_ssize_t page_len = b.len;
  if (n > 0 && (row_len > page_len || n > page_len / row_len)) {
    Py_DECREF(seq);
    return fail("decode_layout: the page holds " + std::to_string(page_len) + " bytes, not " +
                std::to_string(n) + " rows of " + std::to_string(row_len));
  }
  if (PyObject_GetBuffer(idx_obj, &b, PyBUF_SIMPLE) < 0) {
    Py_DECREF(seq);
    release();
    return nullptr;
  }
  held.push_back(b);
  if (PyObject_GetBuffer(ref_obj, &b, PyBUF_SIMPLE) < 0) {
    Py_DECREF(seq);
    release();
    return nullptr;
  }
  held.push_back(b);
  const Py_buffer idx = held[1];
  const Py_buffer ref = held[2];
  if (idx.len % 8 != 0 || ref.len != idx.len / 8) {
    Py_DECREF(seq);
    return fail("decode_layout: fixed_idx (int64) and fixed_ref (uint8) must have one item per offset");
  }
  const int64_t fixed_count = static_cast<int64_t>(ref.len);
  std::vector<int64_t> offsets(static_cast<size_t>(fixed_count));
  if (fixed_count > 0) std::memcpy(offsets.data(), idx.buf, static_cast<size_t>(idx.len));
  for (int64_t o : offsets) {
    if (o < 0 || o >= row_len) {
      Py_DECREF(seq);
      return fail("decode_layout: a fixed offset lies outside the row");
    }
  }
  std::vector<LayoutLeaf> leaves;
  leaves.reserve(static_cast<size_t>(count));
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* out_obj = nullptr;
    long long offset = 0, width = 0;
    int kind = 0;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "LLiO:decode_layout leaf", &offset, &width,
                          &kind, &out_obj)) {
      Py_DECREF(seq);
      release();
      return nullptr;
    }
    if (offset < 0 || width <= 0 || offset > row_len || width > row_len - offset || (kind != 0 && kind != 1)) {
      Py_DECREF(seq);
      return fail("decode_layout: leaf " + std::to_string(i) + " (offset " + std::to_string(offset) +
                  ", width " + std::to_string(width) + ", kind " + std::to_string(kind) +
                  ") does not fit a row of " + std::to_string(row_len) + " bytes");
    }
    if (PyObject_GetBuffer(out_obj, &b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
      Py_DECREF(seq);
      release();
      return nullptr;
    }
    held.push_back(b);
    if (b.len != n * width) {
      Py_DECREF(seq);
      return fail("decode_layout: leaf " + std::to_string(i) + "'s output holds " + std::to_string(b.len) +
                  " bytes, expected " + std::to_string(n * width));
    }
    leaves.push_back(LayoutLeaf{offset, width, kind, static_cast<unsigned char*>(b.buf)});
  }
  Py_DECREF(seq);
  const unsigned char* page = static_cast<const unsigned char*>(held[0].buf);
  const unsigned char* fixed_ref = static_cast<const unsigned char*>(ref.buf);
  bool ok = false;
  Py_BEGIN_ALLOW_THREADS
  ok = GatherLayout(page, n, row_len, offsets.data(), fixed_ref, fixed_count, leaves);
  Py_END_ALLOW_THREADS
  release();
  return PyBool_FromLong(ok ? 1 : 0);
}

}  // namespace tfi

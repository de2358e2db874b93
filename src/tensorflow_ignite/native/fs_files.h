// fs_files.h -- the plugin's file objects: random-access reads into TensorFlow's
// buffer, buffered writes, read-only memory regions.
//
// Part of tf_ignite_fs.cc's one translation unit (included once, by it).

#ifndef TF_IGNITE_FS_FILES_H_
#define TF_IGNITE_FS_FILES_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include "tensorflow/c/experimental/filesystem/filesystem_interface.h"
#include "tensorflow/c/tf_file_statistics.h"
#include "tensorflow/c/tf_status.h"

namespace {

#include "fs_bridge.h"

// ----------------------------------------------------------------------------
// Reading: handle.read_into(offset, memoryview) over TensorFlow's buffer.

// Calls memoryview.release() so that a backend cannot keep using TF's buffer
// (TensorFlow reuses or frees it as soon as the operation returns).  Keeps an
// exception the backend call left pending.  Returns false if the backend still
// holds the view, a slice of it, or a buffer export (numpy, ctypes...) --
// all of them would point into memory TensorFlow is about to reuse.
bool ReleaseView(PyObject* view) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  const bool view_kept = Py_REFCNT(view) > 1;  // the caller holds one reference
  PyObject* r = PyObject_CallMethod(view, "release", nullptr);
  const bool released = r != nullptr;
  Py_XDECREF(r);
  PyErr_Clear();
  const _PyManagedBufferObject* mbuf = reinterpret_cast<PyMemoryViewObject*>(view)->mbuf;
  const bool slices_kept = mbuf != nullptr && mbuf->exports > 0;
  PyErr_Restore(type, value, traceback);
  return released && !view_kept && !slices_kept;
}

// Fills buffer[0, n) from `handle` starting at `offset`; stops at EOF.  GIL
// held.  Returns bytes read, or -1 with `status` set.
int64_t ReadFully(PyObject* handle, const std::string& path, uint64_t offset, char* buffer,
                  size_t n, TF_Status* status) {
  size_t got = 0;
  while (got < n) {
    const size_t want = n - got;
    Ref view(PyMemoryView_FromMemory(buffer + got, static_cast<Py_ssize_t>(want),
                                     PyBUF_WRITE));
    if (!view) {
      SetStatusFromPython(status, "read_into", nullptr);
      return -1;
    }
    Ref result(PyObject_CallMethod(handle, "read_into", "KO",
                                   static_cast<unsigned long long>(offset + got),
                                   view.get()));
    const bool released = ReleaseView(view.get());
    if (!result) {
      Ref py_path(PyPath(path.c_str()));
      if (!py_path) PyErr_Clear();
      SetStatusFromPython(status, "read_into", py_path.get());
      return -1;
    }
    if (!released) {
      SetInternal(status, "read_into(" + path +
                              ") kept a reference to TensorFlow's read buffer (the "
                              "memoryview, a slice or an export of it); copy the data instead");
      return -1;
    }
    const long long k = PyLong_AsLongLong(result.get());
    if (k == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      SetInternal(status, "read_into(" + path + ") must return an int");
      return -1;
    }
    if (k < 0 || static_cast<unsigned long long>(k) > want) {
      SetInternal(status, "read_into(" + path + ") returned " + std::to_string(k) +
                              " for a buffer of " + std::to_string(want) + " bytes");
      return -1;
    }
    if (k == 0) break;  // end of file
    got += static_cast<size_t>(k);
  }
  return static_cast<int64_t>(got);
}

// Calls handle.close(), reporting (not raising) errors.  GIL held.
void CloseQuietly(PyObject* handle) {
  Ref r(PyObject_CallMethod(handle, "close", nullptr));
  if (!r) PyErr_WriteUnraisable(handle);
}

struct ReadFile {
  PyObject* handle;  // strong reference
  std::string path;
};

void RafCleanup(TF_RandomAccessFile* file) {
  auto* f = static_cast<ReadFile*>(file->plugin_file);
  if (f == nullptr) return;
  {
    PythonCall py(nullptr);
    if (py.ok()) {
      CloseQuietly(f->handle);
      Py_DECREF(f->handle);
    }  // else: the interpreter is gone; leak the handle rather than crash
  }
  delete f;
  file->plugin_file = nullptr;
}

int64_t RafRead(const TF_RandomAccessFile* file, uint64_t offset, size_t n, char* buffer,
                TF_Status* status) {
  auto* f = static_cast<ReadFile*>(file->plugin_file);
  if (n == 0) {
    SetOk(status);
    return 0;
  }
  PythonCall py(status);
  if (!py.ok()) return -1;
  const int64_t got = ReadFully(f->handle, f->path, offset, buffer, n, status);
  if (got < 0) return -1;
  if (static_cast<size_t>(got) < n) {
    TF_SetStatus(status, TF_OUT_OF_RANGE, "Read less bytes than requested");
  } else {
    SetOk(status);
  }
  return got;
}

// ----------------------------------------------------------------------------
// Writing: small appends are coalesced in C (no GIL) and handed to
// handle.write(memoryview) in chunks of up to kWriteBufferSize.

struct WriteFile {
  PyObject* handle;  // strong reference
  std::string path;
  std::string pending;  // appended, not yet passed to handle.write()
  bool closed = false;
};

// handle.write(data[0, n)).  GIL held.
bool WriteToHandle(WriteFile* f, const char* data, size_t n, TF_Status* status) {
  if (n == 0) return true;
  Ref view(PyMemoryView_FromMemory(const_cast<char*>(data), static_cast<Py_ssize_t>(n),
                                   PyBUF_READ));
  if (!view) {
    SetStatusFromPython(status, "write", nullptr);
    return false;
  }
  Ref result(PyObject_CallMethod(f->handle, "write", "O", view.get()));
  const bool released = ReleaseView(view.get());
  if (!result) {
    Ref py_path(PyPath(f->path.c_str()));
    if (!py_path) PyErr_Clear();
    SetStatusFromPython(status, "write", py_path.get());
    return false;
  }
  if (!released) {
    SetInternal(status, "write(" + f->path +
                            ") kept a reference to TensorFlow's data buffer (the "
                            "memoryview, a slice or an export of it); copy the data instead");
    return false;
  }
  return true;
}

// Passes the pending bytes to handle.write().  GIL held.
bool Drain(WriteFile* f, TF_Status* status) {
  if (f->pending.empty()) return true;
  const bool ok = WriteToHandle(f, f->pending.data(), f->pending.size(), status);
  f->pending.clear();  // on error the bytes are lost either way; do not resend
  return ok;
}

// handle.<method>() after draining.  Whole call: takes the GIL.
void DrainAndCall(WriteFile* f, const char* method, TF_Status* status) {
  PythonCall py(status);
  if (!py.ok()) return;
  if (!Drain(f, status)) return;
  Ref result(PyObject_CallMethod(f->handle, method, nullptr));
  if (!result) {
    Ref py_path(PyPath(f->path.c_str()));
    if (!py_path) PyErr_Clear();
    SetStatusFromPython(status, method, py_path.get());
    return;
  }
  SetOk(status);
}

void WfCleanup(TF_WritableFile* file) {
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (f == nullptr) return;
  {
    PythonCall py(nullptr);
    if (py.ok()) {
      if (!f->closed) {
        // Dropped without Close(): behave like a local file (fclose in the
        // destructor) and publish what was written.
        TF_Status* status = TF_NewStatus();
        if (Drain(f, status)) {
          CloseQuietly(f->handle);
        } else {
          PySys_WriteStderr("tensorflow-ignite: %.400s was dropped unclosed and could not be "
                            "written: %.600s\n",
                            f->path.c_str(), TF_Message(status));
        }
        TF_DeleteStatus(status);
      }
      Py_DECREF(f->handle);
    }  // else: the interpreter is gone; leak the handle rather than crash
  }
  delete f;
  file->plugin_file = nullptr;
}

void WfAppend(const TF_WritableFile* file, const char* buffer, size_t n, TF_Status* status) {
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (f->closed) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION, "ignite filesystem: append to a closed file");
    return;
  }
  if (f->pending.size() + n <= kWriteBufferSize) {  // common case: no GIL at all
    f->pending.append(buffer, n);
    SetOk(status);
    return;
  }
  PythonCall py(status);
  if (!py.ok()) return;
  if (!Drain(f, status)) return;
  if (n >= kWriteBufferSize) {
    if (!WriteToHandle(f, buffer, n, status)) return;
  } else {
    f->pending.append(buffer, n);
  }
  SetOk(status);
}

int64_t WfTell(const TF_WritableFile* file, TF_Status* status) {
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  PythonCall py(status);
  if (!py.ok()) return -1;
  Ref result(PyObject_CallMethod(f->handle, "tell", nullptr));
  if (!result) {
    Ref py_path(PyPath(f->path.c_str()));
    if (!py_path) PyErr_Clear();
    SetStatusFromPython(status, "tell", py_path.get());
    return -1;
  }
  const long long pos = PyLong_AsLongLong(result.get());
  if (pos < 0 || PyErr_Occurred()) {
    PyErr_Clear();
    SetInternal(status, "tell(" + f->path + ") must return a non-negative int");
    return -1;
  }
  SetOk(status);
  return pos + static_cast<int64_t>(f->pending.size());
}

void WfFlush(const TF_WritableFile* file, TF_Status* status) {
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (f->closed) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION, "ignite filesystem: flush of a closed file");
    return;
  }
  DrainAndCall(f, "flush", status);
}

void WfClose(const TF_WritableFile* file, TF_Status* status) {
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (f->closed) {
    SetOk(status);
    return;
  }
  f->closed = true;  // TensorFlow never retries Close(); neither does cleanup
  DrainAndCall(f, "close", status);
  std::string().swap(f->pending);
}

// ----------------------------------------------------------------------------
// Read-only memory regions: the whole file read into malloc'ed memory.

struct Region {
  char* data;
  uint64_t length;
};

void RegionCleanup(TF_ReadOnlyMemoryRegion* region) {
  auto* r = static_cast<Region*>(region->plugin_memory_region);
  if (r == nullptr) return;
  std::free(r->data);
  delete r;
  region->plugin_memory_region = nullptr;
}

const void* RegionData(const TF_ReadOnlyMemoryRegion* region) {
  return static_cast<Region*>(region->plugin_memory_region)->data;
}

uint64_t RegionLength(const TF_ReadOnlyMemoryRegion* region) {
  return static_cast<Region*>(region->plugin_memory_region)->length;
}

}  // namespace

#endif  // TF_IGNITE_FS_FILES_H_

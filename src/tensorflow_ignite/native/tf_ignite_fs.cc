// tf_ignite_fs.cc -- TensorFlow filesystem plugin for ignite:// and igfs://
// that forwards every operation to a Python "backend" object.
//
// One shared object, two entry points (the only exported symbols):
//   * TF_InitPlugin          -- TensorFlow's modular filesystem entry point,
//                               called by tf.experimental.register_filesystem_plugin.
//   * PyInit__tf_ignite_fs   -- makes the same file importable as the Python
//                               extension module `_tf_ignite_fs`, through which
//                               Python installs the backend (set_backend), the
//                               exception -> TF_Code mapper (set_error_mapper)
//                               and the shutdown hook (shutdown).
// Python's import and TensorFlow's loader both dlopen() the same path, so they
// share one copy of the globals below.  See loader.py for the sequence.
//
// Every operation: (1) counts itself in flight and refuses to run if the
// interpreter is finalizing or the shutdown hook has run -- a thread that
// takes the GIL during finalization is killed by CPython, which would crash a
// TensorFlow thread; (2) takes the GIL with PyGILState_Ensure; (3) calls one
// backend method (backend.py documents them); (4) turns an exception into a
// TF_Status via the mapper (status.py); (5) releases the GIL.
//
// From TensorFlow's C API only tf_status.h is used (TF_SetStatus, TF_GetCode, TF_Message,
// TF_NewStatus, TF_DeleteStatus; all in libtensorflow_framework.so.2), so the
// plugin keeps working across TF 2.x releases with the same plugin ABI.
//
// Calls in flight when the interpreter exits: loader.py's atexit hook calls
// shutdown(), which refuses new calls and waits (GIL released) for the ones
// in flight.  If a thread still gets caught by finalization, CPython unwinds
// it with pthread_exit(); the destructors below then leave Python alone.

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

// ----------------------------------------------------------------------------
// Global state.

constexpr size_t kWriteBufferSize = 256 * 1024;  // coalesce small appends
constexpr size_t kRegionAlignment = 64;           // EIGEN_MAX_ALIGN_BYTES
constexpr const char* kShutdownMessage =
    "ignite filesystem: the Python interpreter is shutting down; ignite:// is "
    "no longer available in this process";

std::atomic<bool> g_closed{false};       // set by shutdown(): refuse new calls
std::atomic<long> g_in_flight{0};        // operations inside the shim
std::atomic<bool> g_registered{false};   // registered with TensorFlow

// Never destroyed: TensorFlow threads may still leave the shim while static
// destructors run at process exit.
struct DrainState {
  std::mutex mu;
  std::condition_variable cv;
};
DrainState* const g_drain = new DrainState;

// Guarded by the GIL.
PyObject* g_backend = nullptr;       // strong reference or nullptr
PyObject* g_error_mapper = nullptr;  // strong reference or nullptr

bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// RAII guard: in-flight accounting plus the GIL.  ok() is false (and `status`
// set) when Python must not be entered.
class PythonCall {
 public:
  explicit PythonCall(TF_Status* status) {
    // Increment before checking g_closed (both seq_cst): either shutdown()
    // sees this call in flight and waits for it, or this call sees g_closed.
    g_in_flight.fetch_add(1);
    if (g_closed.load() || !Py_IsInitialized() || InterpreterFinalizing()) {
      if (status != nullptr) TF_SetStatus(status, TF_CANCELLED, kShutdownMessage);
      return;
    }
    gil_ = PyGILState_Ensure();
    entered_ = true;
  }
  ~PythonCall() {
    // During finalization a thread that entered earlier never holds the GIL
    // here: CPython refuses it the GIL and unwinds it with pthread_exit(),
    // running this destructor.  Releasing would abort; leak the thread state.
    if (entered_ && !InterpreterFinalizing()) PyGILState_Release(gil_);
    if (g_in_flight.fetch_sub(1) == 1 && g_closed.load()) {
      std::lock_guard<std::mutex> lock(g_drain->mu);
      g_drain->cv.notify_all();
    }
  }
  PythonCall(const PythonCall&) = delete;
  PythonCall& operator=(const PythonCall&) = delete;
  bool ok() const { return entered_; }

 private:
  PyGILState_STATE gil_{};
  bool entered_ = false;
};

// Owned reference holder (GIL must be held when it goes out of scope).
class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObject* o) : o_(o) {}
  ~Ref() {
    if (o_ != nullptr && !InterpreterFinalizing()) Py_DECREF(o_);  // see ~PythonCall
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  PyObject* get() const { return o_; }
  explicit operator bool() const { return o_ != nullptr; }

 private:
  PyObject* o_ = nullptr;
};

void SetOk(TF_Status* status) { TF_SetStatus(status, TF_OK, ""); }

// ----------------------------------------------------------------------------
// Paths.

void* PluginAlloc(size_t size) { return std::malloc(size == 0 ? 1 : size); }
void PluginFree(void* ptr) { std::free(ptr); }

char* PluginStrdup(const std::string& s) {
  char* out = static_cast<char*>(PluginAlloc(s.size() + 1));
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  return out;
}

// Same algorithm as uri.canonical_uri(): scheme://host + clean absolute path.
std::string CanonicalUri(const char* uri) {
  const std::string s(uri);
  const size_t sep = s.find("://");
  if (sep == std::string::npos) return s;  // TensorFlow never routes these here
  const size_t host_begin = sep + 3;
  size_t slash = s.find('/', host_begin);
  if (slash == std::string::npos) slash = s.size();
  std::string out = s.substr(0, slash);

  std::string parts;  // "/a/b" built segment by segment
  size_t pos = slash;
  while (pos < s.size()) {
    size_t next = s.find('/', pos + 1);
    if (next == std::string::npos) next = s.size();
    const size_t begin = pos + 1;
    const std::string segment = begin <= next ? s.substr(begin, next - begin) : "";
    if (segment.empty() || segment == ".") {
      // skip
    } else if (segment == "..") {
      const size_t cut = parts.rfind('/');
      if (cut != std::string::npos) parts.erase(cut);
    } else {
      parts += '/';
      parts += segment;
    }
    pos = next;
  }
  out += parts.empty() ? "/" : parts;
  return out;
}

bool IsRootUri(const char* canonical) {
  const char* sep = std::strstr(canonical, "://");
  if (sep == nullptr) return false;
  const char* slash = std::strchr(sep + 3, '/');
  return slash != nullptr && std::strcmp(slash, "/") == 0;
}

PyObject* PyPath(const char* path) {
  return PyUnicode_DecodeUTF8(path, static_cast<Py_ssize_t>(std::strlen(path)),
                              "surrogateescape");
}

// ----------------------------------------------------------------------------
// Errors.

// Converts the pending Python exception into `status`.  GIL held.
void SetStatusFromPython(TF_Status* status, const char* op, PyObject* what) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (value != nullptr && traceback != nullptr) PyException_SetTraceback(value, traceback);

  int code = TF_INTERNAL;
  std::string message;
  bool mapped = false;
  if (g_error_mapper != nullptr && value != nullptr) {
    Py_INCREF(g_error_mapper);
    Ref mapper(g_error_mapper);
    Ref result(PyObject_CallFunction(mapper.get(), "OsO", value, op,
                                     what != nullptr ? what : Py_None));
    if (result && PyTuple_Check(result.get()) && PyTuple_GET_SIZE(result.get()) == 2) {
      const long c = PyLong_AsLong(PyTuple_GET_ITEM(result.get(), 0));
      Py_ssize_t len = 0;
      const char* text = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(result.get(), 1), &len);
      if (!PyErr_Occurred() && text != nullptr) {
        code = static_cast<int>(c);
        message.assign(text, static_cast<size_t>(len));
        mapped = true;
      }
    }
    PyErr_Clear();
  }
  if (!mapped) {
    message = std::string("ignite filesystem: ") + op + " failed";
    if (value != nullptr) {
      Ref repr(PyObject_Repr(value));
      const char* text = repr ? PyUnicode_AsUTF8(repr.get()) : nullptr;
      if (text != nullptr) message += std::string(": ") + text;
      PyErr_Clear();
    }
  }
  if (code <= TF_OK || code > TF_UNAUTHENTICATED) code = TF_INTERNAL;
  TF_SetStatus(status, static_cast<TF_Code>(code), message.c_str());
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
}

void SetInternal(TF_Status* status, const std::string& message) {
  TF_SetStatus(status, TF_INTERNAL, ("ignite filesystem: " + message).c_str());
}

// New reference to the backend, or nullptr with `status` set.  GIL held.
PyObject* Backend(TF_Status* status) {
  if (g_backend == nullptr) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION,
                 "ignite filesystem: no backend is installed in this process; call "
                 "tensorflow_ignite.native.register_filesystems(...) first");
    return nullptr;
  }
  Py_INCREF(g_backend);
  return g_backend;
}

// What to answer when the backend says FileNotFoundError for a host's root,
// which always exists.
enum class RootFallback { kNone, kDirectoryStat, kEmptyListing };

PyObject* RootDefault(RootFallback fallback) {
  if (fallback == RootFallback::kDirectoryStat) return Py_BuildValue("(LLO)", 0LL, 0LL, Py_True);
  return PyList_New(0);
}

// backend.<method>(path): the common one-path call.  Returns a new reference,
// or nullptr with `status` set.
PyObject* CallPathMethod(TF_Status* status, const char* method, const char* path,
                         RootFallback fallback = RootFallback::kNone) {
  Ref backend(Backend(status));
  if (!backend) return nullptr;
  Ref py_path(PyPath(path));
  if (!py_path) {
    SetStatusFromPython(status, method, nullptr);
    return nullptr;
  }
  PyObject* result = PyObject_CallMethod(backend.get(), method, "O", py_path.get());
  if (result == nullptr) {
    if (fallback != RootFallback::kNone && IsRootUri(path) &&
        PyErr_ExceptionMatches(PyExc_FileNotFoundError)) {
      PyErr_Clear();
      PyObject* root_default = RootDefault(fallback);
      if (root_default != nullptr) {
        SetOk(status);
        return root_default;
      }
    }
    SetStatusFromPython(status, method, py_path.get());
    return nullptr;
  }
  SetOk(status);
  return result;
}

// backend.<method>(src, dst).
void CallTwoPathMethod(TF_Status* status, const char* method, const char* src,
                       const char* dst) {
  PythonCall py(status);
  if (!py.ok()) return;
  Ref backend(Backend(status));
  if (!backend) return;
  Ref py_src(PyPath(src));
  Ref py_dst(PyPath(dst));
  if (!py_src || !py_dst) {
    SetStatusFromPython(status, method, nullptr);
    return;
  }
  Ref result(PyObject_CallMethod(backend.get(), method, "OO", py_src.get(), py_dst.get()));
  if (!result) {
    Ref what(PyUnicode_FromFormat("%U -> %U", py_src.get(), py_dst.get()));
    if (!what) PyErr_Clear();
    SetStatusFromPython(status, method, what.get());
    return;
  }
  SetOk(status);
}

void CallVoidPathMethod(TF_Status* status, const char* method, const char* path) {
  PythonCall py(status);
  if (!py.ok()) return;
  Ref result(CallPathMethod(status, method, path));
}

// ----------------------------------------------------------------------------
// stat: (size, mtime_ns, is_dir)

struct Stat {
  int64_t size = 0;
  int64_t mtime_ns = 0;
  bool is_dir = false;
};

// GIL held.  False with `status` set on error.
bool ParseStat(PyObject* result, Stat* out, TF_Status* status, const char* path) {
  Ref seq(PySequence_Fast(result, "stat() must return a (size, mtime_ns, is_dir) tuple"));
  if (!seq || PySequence_Fast_GET_SIZE(seq.get()) != 3) {
    if (!seq) PyErr_Clear();
    SetInternal(status, std::string("backend stat(") + path +
                            ") must return a (size, mtime_ns, is_dir) tuple");
    return false;
  }
  PyObject** items = PySequence_Fast_ITEMS(seq.get());
  const long long size = PyLong_AsLongLong(items[0]);
  const long long mtime = items[1] == Py_None ? 0 : PyLong_AsLongLong(items[1]);
  const int is_dir = PyObject_IsTrue(items[2]);
  if (PyErr_Occurred() || is_dir < 0 || size < 0) {
    PyErr_Clear();
    SetInternal(status, std::string("backend stat(") + path +
                            ") returned a malformed (size, mtime_ns, is_dir) tuple");
    return false;
  }
  out->size = size;
  out->mtime_ns = mtime;
  out->is_dir = is_dir != 0;
  return true;
}

// Whole call: takes the GIL.  False with `status` set on error.
bool StatPath(const char* path, Stat* out, TF_Status* status) {
  PythonCall py(status);
  if (!py.ok()) return false;
  Ref result(CallPathMethod(status, "stat", path, RootFallback::kDirectoryStat));
  if (!result) return false;
  return ParseStat(result.get(), out, status, path);
}

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

// ----------------------------------------------------------------------------
// Filesystem operations.

void FsInit(TF_Filesystem* filesystem, TF_Status* status) {
  filesystem->plugin_filesystem = nullptr;  // all state is global (one backend)
  SetOk(status);
}

void FsCleanup(TF_Filesystem* filesystem) { filesystem->plugin_filesystem = nullptr; }

char* FsTranslateName(const TF_Filesystem*, const char* uri) {
  return PluginStrdup(CanonicalUri(uri));
}

void FsNewRandomAccessFile(const TF_Filesystem*, const char* path, TF_RandomAccessFile* file,
                           TF_Status* status) {
  PythonCall py(status);
  if (!py.ok()) return;
  PyObject* handle = CallPathMethod(status, "open_read", path);
  if (handle == nullptr) return;
  file->plugin_file = new ReadFile{handle, path};
}

void NewWriteFile(const char* path, TF_WritableFile* file, bool append, TF_Status* status) {
  PythonCall py(status);
  if (!py.ok()) return;
  Ref backend(Backend(status));
  if (!backend) return;
  Ref py_path(PyPath(path));
  if (!py_path) {
    SetStatusFromPython(status, "open_write", nullptr);
    return;
  }
  PyObject* handle = PyObject_CallMethod(backend.get(), "open_write", "OO", py_path.get(),
                                         append ? Py_True : Py_False);
  if (handle == nullptr) {
    SetStatusFromPython(status, "open_write", py_path.get());
    return;
  }
  auto* f = new WriteFile{handle, path, std::string(), false};
  f->pending.reserve(kWriteBufferSize);
  file->plugin_file = f;
  SetOk(status);
}

void FsNewWritableFile(const TF_Filesystem*, const char* path, TF_WritableFile* file,
                       TF_Status* status) {
  NewWriteFile(path, file, /*append=*/false, status);
}

void FsNewAppendableFile(const TF_Filesystem*, const char* path, TF_WritableFile* file,
                         TF_Status* status) {
  NewWriteFile(path, file, /*append=*/true, status);
}

void FsNewReadOnlyMemoryRegion(const TF_Filesystem*, const char* path,
                               TF_ReadOnlyMemoryRegion* region, TF_Status* status) {
  PythonCall py(status);
  if (!py.ok()) return;
  Stat st;
  {
    Ref result(CallPathMethod(status, "stat", path));
    if (!result || !ParseStat(result.get(), &st, status, path)) return;
  }
  if (st.is_dir) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION,
                 (std::string("ignite filesystem: ") + path + " is a directory").c_str());
    return;
  }
  if (st.size == 0) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT,
                 (std::string("ignite filesystem: ") + path + " is empty").c_str());
    return;
  }
  Ref handle(CallPathMethod(status, "open_read", path));
  if (!handle) return;
  // Aligned like TensorFlow's own allocations: ImmutableConst maps tensors
  // straight onto this memory.
  void* aligned = nullptr;
  if (posix_memalign(&aligned, kRegionAlignment, static_cast<size_t>(st.size)) != 0) {
    aligned = nullptr;
  }
  char* data = static_cast<char*>(aligned);
  if (data == nullptr) {
    CloseQuietly(handle.get());
    TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "ignite filesystem: out of memory");
    return;
  }
  const int64_t got = ReadFully(handle.get(), path, 0, data, static_cast<size_t>(st.size), status);
  CloseQuietly(handle.get());
  if (got < 0) {
    std::free(data);
    return;
  }
  region->plugin_memory_region = new Region{data, static_cast<uint64_t>(got)};
  SetOk(status);
}

void FsCreateDir(const TF_Filesystem*, const char* path, TF_Status* status) {
  CallVoidPathMethod(status, "mkdir", path);
}

void FsRecursivelyCreateDir(const TF_Filesystem*, const char* path, TF_Status* status) {
  if (IsRootUri(path)) {  // the root always exists
    SetOk(status);
    return;
  }
  CallVoidPathMethod(status, "makedirs", path);
}

void FsDeleteFile(const TF_Filesystem*, const char* path, TF_Status* status) {
  CallVoidPathMethod(status, "remove", path);
}

void FsDeleteDir(const TF_Filesystem*, const char* path, TF_Status* status) {
  CallVoidPathMethod(status, "rmdir", path);
}

void FsDeleteRecursively(const TF_Filesystem*, const char* path, uint64_t* undeleted_files,
                         uint64_t* undeleted_dirs, TF_Status* status) {
  CallVoidPathMethod(status, "rmtree", path);
  const bool ok = TF_GetCode(status) == TF_OK;
  *undeleted_files = 0;
  *undeleted_dirs = ok ? 0 : 1;
}

void FsRenameFile(const TF_Filesystem*, const char* src, const char* dst, TF_Status* status) {
  CallTwoPathMethod(status, "rename", src, dst);
}

void FsCopyFile(const TF_Filesystem*, const char* src, const char* dst, TF_Status* status) {
  CallTwoPathMethod(status, "copy", src, dst);
}

void FsPathExists(const TF_Filesystem*, const char* path, TF_Status* status) {
  Stat st;
  StatPath(path, &st, status);
}

void FsStat(const TF_Filesystem*, const char* path, TF_FileStatistics* stats,
            TF_Status* status) {
  Stat st;
  if (!StatPath(path, &st, status)) return;
  stats->length = st.size;
  stats->mtime_nsec = st.mtime_ns;
  stats->is_directory = st.is_dir;
}

// TensorFlow ignores the returned bool and reads the status: a file must be
// reported as FAILED_PRECONDITION ("exists, not a directory").
bool FsIsDirectory(const TF_Filesystem*, const char* path, TF_Status* status) {
  Stat st;
  if (!StatPath(path, &st, status)) return false;
  if (!st.is_dir) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION,
                 (std::string("ignite filesystem: ") + path + " is not a directory").c_str());
    return false;
  }
  return true;
}

int64_t FsGetFileSize(const TF_Filesystem*, const char* path, TF_Status* status) {
  Stat st;
  if (!StatPath(path, &st, status)) return -1;
  if (st.is_dir) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION,
                 (std::string("ignite filesystem: ") + path + " is a directory").c_str());
    return -1;
  }
  return st.size;
}

int FsGetChildren(const TF_Filesystem*, const char* path, char*** entries, TF_Status* status) {
  *entries = nullptr;
  PythonCall py(status);
  if (!py.ok()) return -1;
  Ref result(CallPathMethod(status, "listdir", path, RootFallback::kEmptyListing));
  if (!result) return -1;
  Ref seq(PySequence_Fast(result.get(), "listdir() must return a sequence of str"));
  if (!seq) {
    PyErr_Clear();
    SetInternal(status, std::string("backend listdir(") + path +
                            ") must return a sequence of str");
    return -1;
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.get());
  char** out = static_cast<char**>(PluginAlloc(sizeof(char*) * static_cast<size_t>(n)));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq.get(), i);
    Ref encoded(PyUnicode_Check(item)
                    ? PyUnicode_AsEncodedString(item, "utf-8", "surrogateescape")
                    : nullptr);
    if (!encoded) {
      PyErr_Clear();
      for (Py_ssize_t j = 0; j < i; ++j) PluginFree(out[j]);
      PluginFree(out);
      SetInternal(status, std::string("backend listdir(") + path +
                              ") must return a sequence of str");
      return -1;
    }
    out[i] = PluginStrdup(std::string(PyBytes_AS_STRING(encoded.get()),
                                      static_cast<size_t>(PyBytes_GET_SIZE(encoded.get()))));
  }
  *entries = out;
  SetOk(status);
  return static_cast<int>(n);
}

// ----------------------------------------------------------------------------
// Registration.

template <typename T>
T* AllocZeroed() {
  T* p = static_cast<T*>(PluginAlloc(sizeof(T)));
  std::memset(p, 0, sizeof(T));
  return p;
}

// TensorFlow frees every table per scheme, so each scheme gets its own copies.
void ProvideFilesystemSupportFor(TF_FilesystemPluginOps* ops, const char* scheme) {
  TF_SetFilesystemVersionMetadata(ops);
  ops->scheme = PluginStrdup(scheme);

  ops->random_access_file_ops = AllocZeroed<TF_RandomAccessFileOps>();
  ops->random_access_file_ops->cleanup = RafCleanup;
  ops->random_access_file_ops->read = RafRead;

  ops->writable_file_ops = AllocZeroed<TF_WritableFileOps>();
  ops->writable_file_ops->cleanup = WfCleanup;
  ops->writable_file_ops->append = WfAppend;
  ops->writable_file_ops->tell = WfTell;
  ops->writable_file_ops->flush = WfFlush;
  ops->writable_file_ops->sync = WfFlush;
  ops->writable_file_ops->close = WfClose;

  ops->read_only_memory_region_ops = AllocZeroed<TF_ReadOnlyMemoryRegionOps>();
  ops->read_only_memory_region_ops->cleanup = RegionCleanup;
  ops->read_only_memory_region_ops->data = RegionData;
  ops->read_only_memory_region_ops->length = RegionLength;

  TF_FilesystemOps* fs = AllocZeroed<TF_FilesystemOps>();
  fs->init = FsInit;
  fs->cleanup = FsCleanup;
  fs->new_random_access_file = FsNewRandomAccessFile;
  fs->new_writable_file = FsNewWritableFile;
  fs->new_appendable_file = FsNewAppendableFile;
  fs->new_read_only_memory_region_from_file = FsNewReadOnlyMemoryRegion;
  fs->create_dir = FsCreateDir;
  fs->recursively_create_dir = FsRecursivelyCreateDir;
  fs->delete_file = FsDeleteFile;
  fs->delete_dir = FsDeleteDir;
  fs->delete_recursively = FsDeleteRecursively;
  fs->rename_file = FsRenameFile;
  fs->copy_file = FsCopyFile;
  fs->path_exists = FsPathExists;
  fs->stat = FsStat;
  fs->is_directory = FsIsDirectory;
  fs->get_file_size = FsGetFileSize;
  fs->translate_name = FsTranslateName;
  fs->get_children = FsGetChildren;
  // get_matching_paths stays nullptr on purpose: TensorFlow's own globbing
  // (GetChildren + IsDirectory, in parallel) gives exactly TF's pattern
  // semantics, including its fast path for patterns without wildcards.
  ops->filesystem_ops = fs;
}

constexpr const char* kSchemes[] = {"ignite", "igfs"};
constexpr const char* kBackendMethods[] = {"stat",   "listdir", "mkdir", "makedirs",
                                           "remove", "rmdir",   "rmtree", "rename",
                                           "copy",   "open_read", "open_write"};
constexpr const char* kReadHandleMethods[] = {"read_into", "close"};
constexpr const char* kWriteHandleMethods[] = {"write", "tell", "flush", "close"};

// ----------------------------------------------------------------------------
// Python module `_tf_ignite_fs`.

PyObject* PySetBackend(PyObject*, PyObject* backend) {
  PyObject* previous = g_backend;
  if (backend == Py_None) {
    g_backend = nullptr;
  } else {
    Py_INCREF(backend);
    g_backend = backend;
  }
  if (previous == nullptr) Py_RETURN_NONE;
  return previous;  // reference handed to the caller
}

PyObject* PyGetBackend(PyObject*, PyObject*) {
  if (g_backend == nullptr) Py_RETURN_NONE;
  Py_INCREF(g_backend);
  return g_backend;
}

PyObject* PySetErrorMapper(PyObject*, PyObject* mapper) {
  if (mapper != Py_None && !PyCallable_Check(mapper)) {
    PyErr_SetString(PyExc_TypeError, "error mapper must be callable or None");
    return nullptr;
  }
  PyObject* previous = g_error_mapper;
  if (mapper == Py_None) {
    g_error_mapper = nullptr;
  } else {
    Py_INCREF(mapper);
    g_error_mapper = mapper;
  }
  Py_XDECREF(previous);
  Py_RETURN_NONE;
}

// Closes the shim and waits, GIL released, until no call is in flight.
// Calls in flight must finish before the interpreter finalizes: a thread that
// needs the GIL afterwards is killed by CPython, and TensorFlow objects
// destroyed during finalization (a tf.data iterator) wait for such threads
// forever.  timeout=None waits as long as it takes, reporting on stderr every
// `progress_interval` seconds.
PyObject* PyShutdown(PyObject*, PyObject* args) {
  PyObject* timeout_obj = Py_None;
  double progress_interval = 10.0;
  if (!PyArg_ParseTuple(args, "|Od:shutdown", &timeout_obj, &progress_interval)) return nullptr;
  double timeout = -1;  // forever
  if (timeout_obj != Py_None) {
    timeout = PyFloat_AsDouble(timeout_obj);
    if (timeout == -1 && PyErr_Occurred()) return nullptr;
    if (timeout < 0) timeout = 0;
  }
  if (progress_interval <= 0) progress_interval = 10.0;
  g_closed.store(true);
  bool drained = false;
  Py_BEGIN_ALLOW_THREADS;  // in-flight calls may be waiting for the GIL
  {
    using Seconds = std::chrono::duration<double>;
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(g_drain->mu);
    for (;;) {
      double wait = progress_interval;
      if (timeout >= 0) {
        const double left = timeout - Seconds(std::chrono::steady_clock::now() - start).count();
        if (left <= 0) break;
        if (left < wait) wait = left;
      }
      if (g_drain->cv.wait_for(lock, Seconds(wait), [] { return g_in_flight.load() == 0; })) {
        drained = true;
        break;
      }
      if (timeout < 0 || Seconds(std::chrono::steady_clock::now() - start).count() < timeout) {
        std::fprintf(stderr,
                     "tensorflow-ignite: waiting for %ld ignite:// operation(s) to finish "
                     "before the interpreter exits\n",
                     g_in_flight.load());
      }
    }
  }
  Py_END_ALLOW_THREADS;
  return PyBool_FromLong(drained ? 1 : 0);
}

PyObject* PyIsClosed(PyObject*, PyObject*) { return PyBool_FromLong(g_closed.load()); }

PyObject* PyInFlight(PyObject*, PyObject*) { return PyLong_FromLong(g_in_flight.load()); }

PyObject* PyMarkRegistered(PyObject*, PyObject*) {
  g_registered.store(true);
  Py_RETURN_NONE;
}

PyObject* PyIsRegistered(PyObject*, PyObject*) { return PyBool_FromLong(g_registered.load()); }

PyObject* PyAfterForkInChild(PyObject*, PyObject*) {
  // Threads of the parent do not exist in the child: nothing is in flight.
  g_in_flight.store(0);
  Py_RETURN_NONE;
}

PyObject* PyTranslateName(PyObject*, PyObject* arg) {
  const char* uri = PyUnicode_AsUTF8(arg);
  if (uri == nullptr) return nullptr;
  const std::string out = CanonicalUri(uri);
  return PyUnicode_FromStringAndSize(out.data(), static_cast<Py_ssize_t>(out.size()));
}

template <size_t N>
PyObject* StringTuple(const char* const (&items)[N]) {
  PyObject* t = PyTuple_New(N);
  if (t == nullptr) return nullptr;
  for (size_t i = 0; i < N; ++i) {
    PyObject* s = PyUnicode_FromString(items[i]);
    if (s == nullptr) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, static_cast<Py_ssize_t>(i), s);
  }
  return t;
}

PyMethodDef kModuleMethods[] = {
    {"set_backend", PySetBackend, METH_O,
     "set_backend(backend_or_None) -> previous backend or None"},
    {"get_backend", PyGetBackend, METH_NOARGS, "get_backend() -> backend or None"},
    {"set_error_mapper", PySetErrorMapper, METH_O,
     "set_error_mapper(fn(exc, op, path) -> (tf_code, message) or None)"},
    {"shutdown", PyShutdown, METH_VARARGS,
     "shutdown(timeout=None, progress_interval=10.0) -> bool: refuse new calls, "
     "wait (GIL released) for calls in flight; True if none is left"},
    {"is_closed", PyIsClosed, METH_NOARGS, "is_closed() -> bool"},
    {"in_flight", PyInFlight, METH_NOARGS, "in_flight() -> int"},
    {"mark_registered", PyMarkRegistered, METH_NOARGS,
     "Record that TensorFlow accepted the plugin (process-wide)."},
    {"is_registered", PyIsRegistered, METH_NOARGS, "is_registered() -> bool"},
    {"after_fork_in_child", PyAfterForkInChild, METH_NOARGS,
     "Reset in-flight accounting in a forked child."},
    {"translate_name", PyTranslateName, METH_O,
     "translate_name(uri) -> canonical URI, as TensorFlow sees it"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModuleDef = {
    PyModuleDef_HEAD_INIT,
    "_tf_ignite_fs",
    "TensorFlow filesystem plugin for ignite:// and igfs:// (see loader.py).",
    -1,
    kModuleMethods,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

extern "C" {

void TF_InitPlugin(TF_FilesystemPluginInfo* info) {
  constexpr size_t kNumSchemes = sizeof(kSchemes) / sizeof(kSchemes[0]);
  info->plugin_memory_allocate = PluginAlloc;
  info->plugin_memory_free = PluginFree;
  info->num_schemes = kNumSchemes;
  info->ops = static_cast<TF_FilesystemPluginOps*>(
      PluginAlloc(kNumSchemes * sizeof(TF_FilesystemPluginOps)));
  std::memset(info->ops, 0, kNumSchemes * sizeof(TF_FilesystemPluginOps));
  for (size_t i = 0; i < kNumSchemes; ++i) ProvideFilesystemSupportFor(&info->ops[i], kSchemes[i]);
}

PyMODINIT_FUNC PyInit__tf_ignite_fs(void) {
  PyObject* m = PyModule_Create(&kModuleDef);
  if (m == nullptr) return nullptr;
  if (PyModule_AddObject(m, "SCHEMES", StringTuple(kSchemes)) < 0 ||
      PyModule_AddObject(m, "BACKEND_METHODS", StringTuple(kBackendMethods)) < 0 ||
      PyModule_AddObject(m, "READ_HANDLE_METHODS", StringTuple(kReadHandleMethods)) < 0 ||
      PyModule_AddObject(m, "WRITE_HANDLE_METHODS", StringTuple(kWriteHandleMethods)) < 0 ||
      PyModule_AddIntConstant(m, "WRITE_BUFFER_SIZE", static_cast<long>(kWriteBufferSize)) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}

}  // extern "C"

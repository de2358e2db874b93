// fs_bridge.h -- the plugin's bridge to Python: global state, GIL-holding calls,
// Python exceptions -> TF_Status, the backend object, stat results.
//
// Part of tf_ignite_fs.cc's one translation unit (included once, by it).

#ifndef TF_IGNITE_FS_BRIDGE_H_
#define TF_IGNITE_FS_BRIDGE_H_

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
#include <optional>
#include <string>

#include "python_guard.h"
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

using tf_ignite_python::InterpreterFinalizing;

// RAII guard: in-flight accounting plus the GIL (python_guard.h: entered only
// while the interpreter is usable, the pending exception set aside).  ok() is
// false (and `status` set) when Python must not be entered.
class PythonCall {
 public:
  explicit PythonCall(TF_Status* status) {
    // Increment before checking g_closed (both seq_cst): either shutdown()
    // sees this call in flight and waits for it, or this call sees g_closed.
    g_in_flight.fetch_add(1);
    gil_.emplace(!g_closed.load(), /*pause_gc=*/true);  // see python_guard.h
    if (!gil_->ok() && status != nullptr) TF_SetStatus(status, TF_CANCELLED, kShutdownMessage);
  }
  ~PythonCall() {
    gil_.reset();  // the GIL goes before the call stops counting as in flight
    if (g_in_flight.fetch_sub(1) == 1 && g_closed.load()) {
      std::lock_guard<std::mutex> lock(g_drain->mu);
      g_drain->cv.notify_all();
    }
  }
  PythonCall(const PythonCall&) = delete;
  PythonCall& operator=(const PythonCall&) = delete;
  bool ok() const { return gil_->ok(); }

 private:
  std::optional<tf_ignite_python::GilScope> gil_;
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

}  // namespace

#endif  // TF_IGNITE_FS_BRIDGE_H_

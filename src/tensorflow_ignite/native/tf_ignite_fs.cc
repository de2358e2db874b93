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
// share one copy of the globals (fs_bridge.h).  See loader.py for the sequence.
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

#include "fs_bridge.h"  // global state, calls into Python, status mapping
#include "fs_files.h"   // read, write and memory-region objects

namespace {

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

// python_guard.h -- entering Python from TensorFlow's threads; shared by both
// native libraries (tf_ignite_fs.cc and tf_ignite_data.cc include it).
//
// Two rules every call into Python from native code follows:
// * Not during interpreter finalization: CPython then refuses the GIL to other
//   threads and unwinds them with pthread_exit(), running destructors; taking
//   or releasing the GIL there aborts, so such a thread leaks its thread state.
// * The calling thread's pending Python exception is set aside while the GIL
//   is held and restored afterwards.  An iterator or file can be destroyed on a
//   thread whose Python code is unwinding an exception (a loop left by
//   `raise`): calling Python with it pending let the callee clear it, and
//   CPython then crashed re-raising a NULL exception.  Whatever the guarded
//   code leaves pending is dropped when the set-aside exception is restored.
//
// And one the filesystem's calls follow (`pause_gc`): Python's cyclic garbage
// collector does not run while TensorFlow waits on them.  TensorFlow calls the
// filesystem from inside ops that hold its own mutexes (creating a summary
// writer writes its events file under the resource manager's lock); a
// collection triggered by the callee's allocations could free an unreachable
// EagerTensor holding a resource handle, whose destructor takes that same
// mutex: the thread deadlocked on itself (seen once in CI, Keras's TensorBoard
// callback logging to ignite://).  A count of the scopes that paused it (the
// GIL guards it; scopes nest across threads while callees release the GIL)
// turns collection back on when the last one ends, if it was on.

#ifndef TF_IGNITE_PYTHON_GUARD_H_
#define TF_IGNITE_PYTHON_GUARD_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace tf_ignite_python {

inline bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// The GIL and the set-aside exception, held for the guard's lifetime.  Enters
// only when `allowed` (the library's own shutdown checks passed) and the
// interpreter is usable; ok() says whether it did.
class GilScope {
 public:
  explicit GilScope(bool allowed, bool pause_gc = false) {
    if (!allowed || !Py_IsInitialized() || InterpreterFinalizing()) return;
    state_ = PyGILState_Ensure();
    entered_ = true;
    PyErr_Fetch(&type_, &value_, &traceback_);
    if (pause_gc) {
      paused_ = true;
      if (GcPauses()++ == 0) GcWasEnabled() = PyGC_Disable() != 0;
    }
  }
  ~GilScope() {
    if (!entered_ || InterpreterFinalizing()) return;  // see the file comment
    if (paused_ && --GcPauses() == 0 && GcWasEnabled()) PyGC_Enable();
    PyErr_Restore(type_, value_, traceback_);
    PyGILState_Release(state_);
  }
  GilScope(const GilScope&) = delete;
  GilScope& operator=(const GilScope&) = delete;
  bool ok() const { return entered_; }

 private:
  // Scopes of this library pausing the collector now, and whether it was on before the first.
  static int& GcPauses() {
    static int pauses = 0;
    return pauses;
  }
  static bool& GcWasEnabled() {
    static bool enabled = false;
    return enabled;
  }

  PyGILState_STATE state_{};
  bool entered_ = false;
  bool paused_ = false;
  PyObject* type_ = nullptr;
  PyObject* value_ = nullptr;
  PyObject* traceback_ = nullptr;
};

}  // namespace tf_ignite_python

#endif  // TF_IGNITE_PYTHON_GUARD_H_

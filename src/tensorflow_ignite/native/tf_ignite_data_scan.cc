// tf_ignite_data_scan.cc -- the compiled scan pump of the op library
// (_tf_ignite_data.ScanPump): a scan cursor's pages fetched by a native thread
// on the socket of a connection Python dialled, handshook and leased to it.
//
// ScanPump(fd, send_next, file_frame, limit, timeout, max_frame, peer,
//          request=None, send_lock=None, take_ids=None)
//   fd: the connection's socket (Python keeps it open, and keeps every other
//     reader off it, for the pump's lifetime: client/pump.py leases it);
//   send_next() -> int: sends the cursor's next page request on the
//     connection (Python's Connection.send, under its send lock, so requests
//     of other threads never interleave with it) and returns its request id;
//     not called when the pump sends the requests itself (below);
//   request, send_lock, take_ids: the pump sends the page requests itself,
//     without the GIL: `request` is the request's frame (length prefix, op,
//     an 8-byte request id at offset 6, body), sent with the id replaced,
//     under `send_lock` (a ScanPump.SendLock that Python installed as the
//     connection's send lock for the lease, so that no other thread's request
//     interleaves with it); take_ids(n) -> int reserves n request ids of the
//     connection's sequence and returns the first (called with the GIL once
//     per block of ids).  Without the GIL, a request waited for it up to the
//     interpreter's switch interval while Python decoded -- the node idle;
//   file_frame(bytes): files a frame that answers another request (or is a
//     notification) for whoever waits for it (Connection.file_frame);
//   limit: bytes of received frames the pump holds before it waits for the
//     reader; timeout: seconds one page may take; max_frame: the largest frame
//     accepted; peer: the node's address, for messages.
//   row_ids: a scan cursor's pages: the thread also computes each page's row
//     identities and key hash codes (tf_ignite_data_rows.cc), ScanFrame.row_ids().
// The thread asks for one page at a time (a node serves one page of a cursor
// at a time) and receives frames with the GIL released, taking the GIL only to
// send a request and to file another request's answer.  Frames are received
// exactly (length prefix, then the frame): nothing past the last frame is
// consumed, so the connection goes back to Python at a frame boundary.
//
//   next() -> ScanFrame | None: the next answer frame of the cursor (without
//     its length prefix; a read-only buffer owning the received bytes, not a
//     copy; Python reads its header and page), None after the last
//     page; raises the error that ended the fetch after the frames before it
//     (ConnectionError: the socket failed or stayed silent; ValueError: a frame
//     that cannot be an answer; or what send_next/file_frame raised).
//   stop() -> (cursor_open, position_known): stops fetching (the request in
//     flight is answered first), drops held frames and waits for the thread.
//     cursor_open: the server still holds the cursor (Python closes it);
//     position_known: False when the stream broke off mid-frame (Python closes
//     the connection).
//   sent() -> int: the requests the pump sent itself (Python counts them).
//
// ScanPump.SendLock(): a lock Python code and the pump's thread share: like
// threading.Lock (acquire(blocking=True, timeout=-1) -> bool, release(),
// locked(), a context manager), but the pump takes it without the GIL.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "python_guard.h"
#include "tf_ignite_data_rows.h"
#include "tf_ignite_data_scan.h"

namespace tfi {
namespace {

// Response flags of protocol 1.4+ (ClientFlag).
constexpr int kFlagError = 1;
constexpr int kFlagTopology = 2;
constexpr int kFlagNotification = 4;

enum class Failure { kNone, kIo, kProtocol, kPython };

struct LockState;

struct Frame {
  std::unique_ptr<char[]> data;
  size_t size = 0;
  // The page's row identities and key hash codes (tf_ignite_data_rows.cc), when computed.
  std::unique_ptr<std::vector<int64_t>> ids;
  std::unique_ptr<std::vector<uint32_t>> hashes;
};

struct PumpState {
  int fd = -1;
  PyObject* send_next = nullptr;   // strong references, released with the GIL
  PyObject* file_frame = nullptr;
  int64_t limit = 0;
  int timeout_ms = 0;
  int64_t max_frame = 0;
  std::string peer;
  // Native requests (empty `request`: send_next sends them).
  std::string request;
  PyObject* send_lock_obj = nullptr;  // strong reference to the SendLock
  LockState* send_lock = nullptr;  // send_lock_obj's state
  PyObject* take_ids = nullptr;  // strong reference
  int64_t next_id = 0;
  int64_t ids_left = 0;
  int64_t sent = 0;  // requests sent natively (the pump's thread only, read after join)
  bool row_ids = false;  // compute each scan page's row identities (ScanFrame.row_ids)

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Frame> frames;
  int64_t queued = 0;
  bool stopping = false;
  bool done = false;
  bool cursor_open = true;
  bool position_known = true;
  Failure failure = Failure::kNone;
  std::string message;
  PyObject* error = nullptr;  // the Python exception send_next/file_frame raised (strong)
  std::thread thread;
};

struct PyScanPump {
  PyObject_HEAD
  PumpState* state;
};

using Clock = std::chrono::steady_clock;

// Receives exactly n bytes before `deadline` (GIL released).  Returns "" or why not.
std::string ReadExact(int fd, char* dst, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    const ssize_t got = ::recv(fd, dst, n, MSG_DONTWAIT);
    if (got > 0) {
      dst += got;
      n -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return "the node closed the connection";
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return std::string("receive failed: ") + std::strerror(errno);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return "no answer within the timeout";
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) return std::string("poll failed: ") + std::strerror(errno);
  }
  return "";
}

int64_t LoadLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  if (bytes < 8 && (v >> (bytes * 8 - 1)) != 0) v |= ~uint64_t{0} << (bytes * 8);  // sign
  return static_cast<int64_t>(v);
}

void Fail(PumpState* s, Failure kind, std::string message, bool position_lost) {
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->failure == Failure::kNone) {
    s->failure = kind;
    s->message = std::move(message);
  }
  if (position_lost) s->position_known = false;
  s->cursor_open = false;
}

// With the GIL: keep the pending Python exception for next() (or note why none could be kept).
void KeepPythonError(PumpState* s, const char* what) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value != nullptr && tb != nullptr) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->failure == Failure::kNone) {
    s->failure = Failure::kPython;
    s->message = what;
    s->error = value;  // owned
  } else {
    Py_XDECREF(value);
  }
  s->cursor_open = false;
}


// The state of a SendLock: a lock any thread may take, the GIL released while it waits.
struct LockState {
  std::mutex mu;
  std::condition_variable cv;
  bool held = false;

  // Returns whether the lock was taken (timeout_ms < 0: wait as long as it takes).
  bool Acquire(int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mu);
    if (timeout_ms < 0) {
      cv.wait(lock, [this] { return !held; });
    } else if (!cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return !held; })) {
      return false;
    }
    held = true;
    return true;
  }
  bool Release() {
    std::lock_guard<std::mutex> lock(mu);
    if (!held) return false;
    held = false;
    cv.notify_one();
    return true;
  }
};

struct PySendLock {
  PyObject_HEAD
  LockState* state;
};

PyObject* LockNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  if (!PyArg_ParseTuple(args, ":SendLock") || (kwargs != nullptr && PyDict_Size(kwargs) > 0)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "SendLock() takes no arguments");
    return nullptr;
  }
  auto* self = reinterpret_cast<PySendLock*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->state = new LockState;
  return reinterpret_cast<PyObject*>(self);
}

void LockDealloc(PyObject* obj) {
  auto* self = reinterpret_cast<PySendLock*>(obj);
  delete self->state;
  self->state = nullptr;
  PyTypeObject* type = Py_TYPE(obj);
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* LockAcquire(PyObject* obj, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"blocking", "timeout", nullptr};
  int blocking = 1;
  double timeout = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pd:acquire", const_cast<char**>(kwlist), &blocking, &timeout)) {
    return nullptr;
  }
  LockState* l = reinterpret_cast<PySendLock*>(obj)->state;
  const int64_t ms = !blocking ? 0 : timeout < 0 ? -1 : static_cast<int64_t>(std::min(timeout * 1000.0, 9.0e15));
  bool ok = false;
  Py_BEGIN_ALLOW_THREADS
  ok = l->Acquire(ms);
  Py_END_ALLOW_THREADS
  return PyBool_FromLong(ok ? 1 : 0);
}

PyObject* LockRelease(PyObject* obj, PyObject*) {
  if (!reinterpret_cast<PySendLock*>(obj)->state->Release()) {
    PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* LockEnter(PyObject* obj, PyObject*) {
  LockState* l = reinterpret_cast<PySendLock*>(obj)->state;
  Py_BEGIN_ALLOW_THREADS
  l->Acquire(-1);
  Py_END_ALLOW_THREADS
  Py_RETURN_TRUE;
}

PyObject* LockExit(PyObject* obj, PyObject*) { return LockRelease(obj, nullptr); }

PyObject* LockLocked(PyObject* obj, PyObject*) {
  LockState* l = reinterpret_cast<PySendLock*>(obj)->state;
  std::lock_guard<std::mutex> lock(l->mu);
  return PyBool_FromLong(l->held ? 1 : 0);
}

PyMethodDef kLockMethods[] = {
    {"acquire", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(LockAcquire)),
     METH_VARARGS | METH_KEYWORDS, "acquire(blocking=True, timeout=-1) -> bool"},
    {"release", LockRelease, METH_NOARGS, "release()"},
    {"locked", LockLocked, METH_NOARGS, "locked() -> bool"},
    {"__enter__", LockEnter, METH_NOARGS, nullptr},
    {"__exit__", LockExit, METH_VARARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kLockSlots[] = {
    {Py_tp_doc, const_cast<char*>("A send lock Python threads and a ScanPump's thread share (see client/pump.py).")},
    {Py_tp_new, reinterpret_cast<void*>(LockNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(LockDealloc)},
    {Py_tp_methods, kLockMethods},
    {0, nullptr},
};

PyType_Spec kLockSpec = {
    "_tf_ignite_data.SendLock", sizeof(PySendLock), 0, Py_TPFLAGS_DEFAULT, kLockSlots,
};

// Sends all of `data` before `deadline` (GIL released).  Returns "" or why not.
std::string WriteAll(int fd, const char* data, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    const ssize_t put = ::send(fd, data, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (put > 0) {
      data += put;
      n -= static_cast<size_t>(put);
      continue;
    }
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return std::string("send failed: ") + std::strerror(errno);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return "sending made no progress within the timeout";
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) return std::string("poll failed: ") + std::strerror(errno);
  }
  return "";
}

// Reserves a block of request ids through Python (with the GIL); false when it failed (kept).
bool TakeIds(PumpState* s) {
  constexpr long long kBlock = 256;
  tf_ignite_python::GilScope gil(true);
  if (!gil.ok()) {
    Fail(s, Failure::kIo, "the Python interpreter is shutting down", false);
    return false;
  }
  PyObject* r = PyObject_CallFunction(s->take_ids, "L", kBlock);
  const long long first = r != nullptr ? PyLong_AsLongLong(r) : -1;
  Py_XDECREF(r);
  if (PyErr_Occurred()) {
    KeepPythonError(s, "reserving request ids");
    return false;
  }
  s->next_id = first;
  s->ids_left = kBlock;
  return true;
}

// Sends the next page request itself, under the connection's SendLock; -1 when it failed (recorded).
int64_t SendNative(PumpState* s) {
  if (s->ids_left == 0 && !TakeIds(s)) return -1;
  const int64_t rid = s->next_id++;
  --s->ids_left;
  std::string& frame = s->request;
  for (int i = 0; i < 8; ++i) frame[6 + i] = static_cast<char>((static_cast<uint64_t>(rid) >> (8 * i)) & 0xFF);
  const auto deadline = Clock::now() + std::chrono::milliseconds(s->timeout_ms);
  s->send_lock->Acquire(-1);
  const std::string why = WriteAll(s->fd, frame.data(), frame.size(), deadline);
  s->send_lock->Release();
  if (!why.empty()) {
    // A request cut short leaves the stream unusable: Python closes the connection.
    Fail(s, Failure::kIo, why, true);
    return -1;
  }
  ++s->sent;
  return rid;
}

// Sends the next page request through Python; -1 when it failed (the error is kept).
int64_t SendNext(PumpState* s) {
  if (!s->request.empty()) return SendNative(s);
  tf_ignite_python::GilScope gil(true);
  if (!gil.ok()) {
    Fail(s, Failure::kIo, "the Python interpreter is shutting down", false);
    return -1;
  }
  PyObject* r = PyObject_CallNoArgs(s->send_next);
  const long long rid = r != nullptr ? PyLong_AsLongLong(r) : -1;
  Py_XDECREF(r);
  if (PyErr_Occurred()) {
    KeepPythonError(s, "sending a page request");
    return -1;
  }
  return rid;
}

bool FileFrame(PumpState* s, Frame& frame) {
  tf_ignite_python::GilScope gil(true);
  if (!gil.ok()) {
    Fail(s, Failure::kIo, "the Python interpreter is shutting down", false);
    return false;
  }
  PyObject* bytes = PyBytes_FromStringAndSize(frame.data.get(), static_cast<Py_ssize_t>(frame.size));
  PyObject* r = bytes != nullptr ? PyObject_CallOneArg(s->file_frame, bytes) : nullptr;
  Py_XDECREF(bytes);
  Py_XDECREF(r);
  if (PyErr_Occurred()) {
    KeepPythonError(s, "filing another request's answer");
    return false;
  }
  return true;
}

// One answer frame of request `rid` (other requests' frames filed on the way).
// Returns false when the fetch must end (the failure is recorded).
bool ReceiveAnswer(PumpState* s, int64_t rid, Frame* out) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(s->timeout_ms);
  while (true) {
    char prefix[4];
    std::string why = ReadExact(s->fd, prefix, 4, deadline);
    if (!why.empty()) {
      Fail(s, Failure::kIo, why, true);
      return false;
    }
    const int64_t length = LoadLE(prefix, 4);
    if (length < 10 || length > s->max_frame) {
      Fail(s, Failure::kProtocol,
           "a frame header claiming " + std::to_string(length) + " bytes (limit " + std::to_string(s->max_frame) +
               "): not an answer of the thin-client protocol 1.4+",
           true);
      return false;
    }
    Frame frame;
    frame.data.reset(new char[static_cast<size_t>(length)]);
    frame.size = static_cast<size_t>(length);
    why = ReadExact(s->fd, frame.data.get(), frame.size, deadline);
    if (!why.empty()) {
      Fail(s, Failure::kIo, why, true);
      return false;
    }
    const int64_t id = LoadLE(frame.data.get(), 8);
    const int flags = static_cast<int>(LoadLE(frame.data.get() + 8, 2)) & 0xFFFF;
    if (id != rid || (flags & kFlagNotification) != 0) {
      if (!FileFrame(s, frame)) return false;
      continue;
    }
    *out = std::move(frame);
    return true;
  }
}

// Whether the answer says more pages follow; false for an error answer (Python raises it).
bool HasMore(const Frame& frame) {
  const int flags = static_cast<int>(LoadLE(frame.data.get() + 8, 2)) & 0xFFFF;
  if ((flags & kFlagError) != 0) return false;
  const size_t body = 10 + ((flags & kFlagTopology) != 0 ? 12 : 0);
  // The page: int row count, rows, bool has-more (Python checks the rest).
  if (frame.size < body + 5) return false;
  return frame.data[frame.size - 1] == 1;
}

// The scan page's row identities, computed on the pump's thread (no GIL); none for an error
// answer or a page ScanRowIds does not take (Python computes them then).
void ComputeRowIds(Frame* frame) {
  const int flags = static_cast<int>(LoadLE(frame->data.get() + 8, 2)) & 0xFFFF;
  if ((flags & kFlagError) != 0) return;
  const size_t body = 10 + ((flags & kFlagTopology) != 0 ? 12 : 0);
  if (frame->size < body + 5) return;
  const int64_t n = LoadLE(frame->data.get() + body, 4);
  const auto* rows = reinterpret_cast<const unsigned char*>(frame->data.get() + body + 4);
  const int64_t size = static_cast<int64_t>(frame->size - body - 5);
  if (n <= 0 || n * 2 > size) return;
  auto ids = std::make_unique<std::vector<int64_t>>(static_cast<size_t>(n));
  auto hashes = std::make_unique<std::vector<uint32_t>>(static_cast<size_t>(n));
  if (!ScanRowIds(rows, size, n, ids->data(), hashes->data())) return;
  frame->ids = std::move(ids);
  frame->hashes = std::move(hashes);
}

void Run(PumpState* s) {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(s->mu);
      s->cv.wait(lock, [s] { return s->stopping || s->queued < s->limit; });
      if (s->stopping) break;
    }
    const int64_t rid = SendNext(s);
    if (rid < 0) break;
    Frame frame;
    if (!ReceiveAnswer(s, rid, &frame)) break;
    const bool more = HasMore(frame);
    if (s->row_ids) ComputeRowIds(&frame);
    std::lock_guard<std::mutex> lock(s->mu);
    s->cursor_open = more;
    if (!s->stopping) {
      s->queued += static_cast<int64_t>(frame.size);
      s->frames.push_back(std::move(frame));
    }
    s->cv.notify_all();
    if (!more) break;
  }
  std::lock_guard<std::mutex> lock(s->mu);
  s->done = true;
  s->cv.notify_all();
}

// Stops the thread and waits for it (GIL held on entry; released while waiting).
void StopAndJoin(PumpState* s) {
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stopping = true;
    s->frames.clear();
    s->queued = 0;
    s->cv.notify_all();
  }
  if (s->thread.joinable()) {
    Py_BEGIN_ALLOW_THREADS
    s->thread.join();
    Py_END_ALLOW_THREADS
  }
}

PyObject* PumpNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"fd",      "send_next", "file_frame", "limit",    "timeout", "max_frame",
                                 "peer",    "request",   "send_lock",  "take_ids", "row_ids", nullptr};
  int fd = -1;
  PyObject *send_next = nullptr, *file_frame = nullptr;
  long long limit = 0, max_frame = 0;
  double timeout = 0;
  const char* peer = "";
  PyObject *request = Py_None, *send_lock = Py_None, *take_ids = Py_None;
  int row_ids = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iOOLdLs|OOOp:ScanPump", const_cast<char**>(kwlist), &fd,
                                   &send_next, &file_frame, &limit, &timeout, &max_frame, &peer, &request,
                                   &send_lock, &take_ids, &row_ids)) {
    return nullptr;
  }
  const bool native = request != Py_None;
  if (fd < 0 || (!native && !PyCallable_Check(send_next)) || !PyCallable_Check(file_frame) || limit <= 0 ||
      timeout <= 0 || max_frame < 16) {
    PyErr_SetString(PyExc_ValueError,
                    "ScanPump: needs an open fd, send_next (unless request is given) and file_frame callables, "
                    "limit > 0, timeout > 0 and max_frame >= 16");
    return nullptr;
  }
  PyObject* lock_type = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "SendLock");
  if (lock_type == nullptr) return nullptr;
  const int is_lock = native ? PyObject_IsInstance(send_lock, lock_type) : 1;
  Py_DECREF(lock_type);
  if (is_lock < 0) return nullptr;
  if (native && (!PyBytes_Check(request) || PyBytes_GET_SIZE(request) < 14 || is_lock == 0 ||
                 !PyCallable_Check(take_ids))) {
    PyErr_SetString(PyExc_ValueError,
                    "ScanPump: request must be a request frame (bytes, request id at offset 6), send_lock a "
                    "ScanPump.SendLock and take_ids a callable");
    return nullptr;
  }
  auto* self = reinterpret_cast<PyScanPump*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  auto* s = new PumpState;
  s->fd = fd;
  Py_INCREF(send_next);
  Py_INCREF(file_frame);
  s->send_next = send_next;
  s->file_frame = file_frame;
  s->limit = limit;
  s->timeout_ms = static_cast<int>(std::min(timeout * 1000.0, 2.0e9));
  s->max_frame = max_frame;
  s->peer = peer;
  s->row_ids = row_ids != 0;
  if (native) {
    s->request.assign(PyBytes_AS_STRING(request), static_cast<size_t>(PyBytes_GET_SIZE(request)));
    Py_INCREF(send_lock);
    Py_INCREF(take_ids);
    s->send_lock_obj = send_lock;
    s->send_lock = reinterpret_cast<PySendLock*>(send_lock)->state;
    s->take_ids = take_ids;
  }
  self->state = s;
  try {
    s->thread = std::thread(Run, s);
  } catch (const std::exception& e) {
    Py_DECREF(self);
    PyErr_Format(PyExc_RuntimeError, "ScanPump: cannot start its thread: %s", e.what());
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(self);
}

void PumpDealloc(PyObject* obj) {
  auto* self = reinterpret_cast<PyScanPump*>(obj);
  PumpState* s = self->state;
  if (s != nullptr) {
    StopAndJoin(s);
    Py_XDECREF(s->send_next);
    Py_XDECREF(s->file_frame);
    Py_XDECREF(s->send_lock_obj);
    Py_XDECREF(s->take_ids);
    Py_XDECREF(s->error);
    delete s;
    self->state = nullptr;
  }
  PyTypeObject* type = Py_TYPE(obj);
  type->tp_free(obj);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

// A received frame handed to Python without a copy: a read-only buffer owning the frame's memory
// (memoryviews of it keep it alive).  Copying each page into a bytes object took the GIL for a
// page-sized copy and page faults.
struct PyFrameBuffer {
  PyObject_HEAD
  char* data;
  Py_ssize_t size;
  std::vector<int64_t>* ids;  // owned; nullptr when not computed
  std::vector<uint32_t>* hashes;
};

int FrameGetBuffer(PyObject* obj, Py_buffer* view, int flags) {
  auto* self = reinterpret_cast<PyFrameBuffer*>(obj);
  return PyBuffer_FillInfo(view, obj, self->data, self->size, 1, flags);
}

Py_ssize_t FrameLength(PyObject* obj) { return reinterpret_cast<PyFrameBuffer*>(obj)->size; }

void FrameDealloc(PyObject* obj) {
  auto* self = reinterpret_cast<PyFrameBuffer*>(obj);
  delete[] self->data;
  self->data = nullptr;
  delete self->ids;
  delete self->hashes;
  self->ids = nullptr;
  self->hashes = nullptr;
  PyTypeObject* type = Py_TYPE(obj);
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* FrameRowIds(PyObject* obj, PyObject*) {
  auto* self = reinterpret_cast<PyFrameBuffer*>(obj);
  if (self->ids == nullptr) Py_RETURN_NONE;
  return RowIdsTuple(*self->ids, *self->hashes);
}

PyMethodDef kFrameMethods[] = {
    {"row_ids", FrameRowIds, METH_NOARGS,
     "row_ids() -> (ids: bytes, hashes: bytes) | None: the scan page's keys (int64) and their hash codes "
     "(uint32), computed by the pump (None: not computed)"},
    {nullptr, nullptr, 0, nullptr},
};

PyMethodDef kRowMethods[] = {
    {"scan_row_ids", PyScanRowIds, METH_VARARGS,
     "scan_row_ids(rows, n) -> (ids: bytes, hashes: bytes) | None: a scan page's LONG/INT keys and hash codes"},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kFrameSlots[] = {
    {Py_tp_methods, kFrameMethods},
    {Py_tp_doc, const_cast<char*>("One answer frame a ScanPump received (a read-only buffer; len() is its size).")},
    {Py_tp_dealloc, reinterpret_cast<void*>(FrameDealloc)},
    {Py_bf_getbuffer, reinterpret_cast<void*>(FrameGetBuffer)},
    {Py_mp_length, reinterpret_cast<void*>(FrameLength)},
    {0, nullptr},
};

PyType_Spec kFrameSpec = {
    "_tf_ignite_data.ScanFrame", sizeof(PyFrameBuffer), 0, Py_TPFLAGS_DEFAULT, kFrameSlots,
};

PyTypeObject* g_frame_type = nullptr;  // set once by AddScanPump (a strong reference, never released)

// The frame as a ScanFrame owning its memory (GIL held); nullptr with a Python error.
PyObject* FrameObject(Frame& frame) {
  auto* self = reinterpret_cast<PyFrameBuffer*>(g_frame_type->tp_alloc(g_frame_type, 0));
  if (self == nullptr) return nullptr;
  self->size = static_cast<Py_ssize_t>(frame.size);
  self->data = frame.data.release();
  self->ids = frame.ids.release();
  self->hashes = frame.hashes.release();
  return reinterpret_cast<PyObject*>(self);
}

PyObject* PumpNext(PyObject* obj, PyObject*) {
  PumpState* s = reinterpret_cast<PyScanPump*>(obj)->state;
  Frame frame;
  bool got = false;
  Py_BEGIN_ALLOW_THREADS
  std::unique_lock<std::mutex> lock(s->mu);
  s->cv.wait(lock, [s] { return !s->frames.empty() || s->done || s->stopping; });
  if (!s->frames.empty()) {
    frame = std::move(s->frames.front());
    s->frames.pop_front();
    s->queued -= static_cast<int64_t>(frame.size);
    got = true;
    s->cv.notify_all();
  }
  lock.unlock();
  Py_END_ALLOW_THREADS
  if (got) return FrameObject(frame);
  std::lock_guard<std::mutex> lock(s->mu);
  switch (s->failure) {
    case Failure::kNone:
      Py_RETURN_NONE;
    case Failure::kPython:
      if (s->error != nullptr) {
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(s->error)), s->error);
      } else {
        PyErr_Format(PyExc_RuntimeError, "%s failed", s->message.c_str());
      }
      return nullptr;
    case Failure::kIo:
      PyErr_Format(PyExc_ConnectionError, "%s: %s", s->peer.c_str(), s->message.c_str());
      return nullptr;
    case Failure::kProtocol:
      PyErr_Format(PyExc_ValueError, "%s sent %s", s->peer.c_str(), s->message.c_str());
      return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* PumpStop(PyObject* obj, PyObject*) {
  PumpState* s = reinterpret_cast<PyScanPump*>(obj)->state;
  StopAndJoin(s);
  std::lock_guard<std::mutex> lock(s->mu);
  return Py_BuildValue("(OO)", s->cursor_open ? Py_True : Py_False, s->position_known ? Py_True : Py_False);
}

PyObject* PumpHeld(PyObject* obj, PyObject*) {
  PumpState* s = reinterpret_cast<PyScanPump*>(obj)->state;
  std::lock_guard<std::mutex> lock(s->mu);
  return PyLong_FromLongLong(s->queued);
}

PyObject* PumpSent(PyObject* obj, PyObject*) {
  PumpState* s = reinterpret_cast<PyScanPump*>(obj)->state;
  if (s->thread.joinable()) {
    PyErr_SetString(PyExc_RuntimeError, "ScanPump.sent(): call stop() first");
    return nullptr;
  }
  return PyLong_FromLongLong(s->sent);
}

PyMethodDef kPumpMethods[] = {
    {"next", PumpNext, METH_NOARGS,
     "next() -> ScanFrame | None: the cursor's next answer frame, a read-only buffer (None after the last "
     "page); raises what ended the fetch"},
    {"stop", PumpStop, METH_NOARGS,
     "stop() -> (cursor_open, position_known): stop fetching, drop held frames, wait for the thread"},
    {"held", PumpHeld, METH_NOARGS, "held() -> int: bytes of received frames not yet taken"},
    {"sent", PumpSent, METH_NOARGS, "sent() -> int: the requests the pump sent itself (after stop())"},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kPumpSlots[] = {
    {Py_tp_doc, const_cast<char*>(
                    "A scan cursor's pages fetched by a native thread on a leased connection (see client/pump.py).")},
    {Py_tp_new, reinterpret_cast<void*>(PumpNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(PumpDealloc)},
    {Py_tp_methods, kPumpMethods},
    {0, nullptr},
};

PyType_Spec kPumpSpec = {
    "_tf_ignite_data.ScanPump", sizeof(PyScanPump), 0, Py_TPFLAGS_DEFAULT, kPumpSlots,
};

}  // namespace

int AddScanPump(PyObject* module) {
  if (g_frame_type == nullptr) {
    g_frame_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&kFrameSpec));
    if (g_frame_type == nullptr) return -1;
  }
  if (PyModule_AddFunctions(module, kRowMethods) < 0) return -1;
  PyObject* lock_type = PyType_FromSpec(&kLockSpec);
  if (lock_type == nullptr) return -1;
  PyObject* type = PyType_FromSpec(&kPumpSpec);
  if (type == nullptr || PyObject_SetAttrString(type, "SendLock", lock_type) < 0 ||
      PyModule_AddObject(module, "ScanPump", type) < 0) {
    Py_XDECREF(type);
    Py_DECREF(lock_type);
    return -1;
  }
  Py_DECREF(lock_type);  // ScanPump.SendLock holds it
  return 0;
}

}  // namespace tfi

// tf_ignite_data.cc -- a tf.data source op that pulls elements from a Python
// iterator: what tf.data.Dataset.from_generator does, without its per-epoch and
// per-element machinery.
//
// Why: from_generator builds every iterator out of three py_func functions
// (init / next / finalize) inside a flat_map; TensorFlow instantiates and
// optimizes those functions again for every epoch (15-75 ms here), and each
// element travels through EagerPyFunc (numpy -> EagerTensor -> Tensor).  This
// op's iterator calls the Python iterator directly with the GIL and wraps the
// NumPy arrays it returns as tensors without copying them.
//
// One shared object, two roles (like tf_ignite_fs.cc):
//   * TensorFlow's op library: tf.load_op_library() registers the op
//     IgnitePyDataset and its CPU kernel (static registrars run at dlopen);
//   * the Python extension module _tf_ignite_data, through which Python
//     installs the dispatcher (set_dispatcher) and the shutdown hook, and
//     which carries the compiled page decoder (decode_layout, in
//     tf_ignite_data_layout.cc) and scan pump (ScanPump, in
//     tf_ignite_data_scan.cc): the library is built from all three sources.
//
// Contract with Python (native/data_source.py):
//   dispatcher(source, description, state, next_split, arguments) -> iterator.
//   `source` and `description` are the op's attributes; `arguments` is a tuple
//   of the values of the op's scalar inputs (bytes, int or bool: the dataset's
//   arguments given as tensors, see data/arguments.py); `state` is None or the bytes a
//   saved iterator's save() returned; `next_split` is None or a callable
//   returning the next partition index handed out by a split provider (the
//   tf.data service under DYNAMIC sharding), None when there are no more.
//   Each next() returns a tuple with one item per output: a C-contiguous NumPy
//   array of the output's dtype, or, for tf.string outputs, a pair (shape
//   tuple, sequence of bytes) or a span column (shape tuple, sequence of
//   buffers, then owner, starts, ends: int64 arrays; element i is
//   buffers[owner[i]][starts[i]:ends[i]]).
//   save() -> bytes: the state of what the iterator has returned so far
//   (SaveInternal); close() ends the read.
//
// Memory: an array whose data is 64-byte aligned (EIGEN_MAX_ALIGN_BYTES) is
// adopted: the tensor points into it and holds a reference to the array.  The
// reference is dropped later by a thread that holds the GIL anyway (the next
// GetNext, or Python calling release_pending()), never by taking the GIL in a
// tensor's destructor: TensorFlow frees tensors on its own threads, and
// waiting there for the GIL stalls the pipeline.  Other arrays are copied.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/dataset.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/partial_tensor_shape.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"

#include "python_guard.h"
#include "tf_ignite_data_layout.h"
#include "tf_ignite_data_scan.h"

namespace tfi {
namespace {

namespace tf = ::tensorflow;
using tf::data::DatasetBase;
using tf::data::DatasetIterator;
using tf::data::IteratorBase;
using tf::data::IteratorContext;
using tf::data::SerializationContext;

constexpr const char* kOpName = "IgnitePyDataset";
constexpr size_t kAlignment = 64;

// ----------------------------------------------------------------------------
// Python state and GIL handling (see tf_ignite_fs.cc for the reasoning).

std::atomic<bool> g_closed{false};
PyObject* g_dispatcher = nullptr;  // strong reference, guarded by the GIL
PyObject* g_error_code = nullptr;  // fn(exception) -> TF_Code int; strong reference, GIL

using tf_ignite_python::InterpreterFinalizing;

// The GIL, unless this library was shut down (python_guard.h: the pending
// exception is set aside meanwhile).
class Gil : public tf_ignite_python::GilScope {
 public:
  Gil() : GilScope(!g_closed.load()) {}
};

// References to drop once some thread holds the GIL.  Never destroyed.
struct PendingReleases {
  std::mutex mu;
  std::vector<PyObject*> objects;
};
PendingReleases* const g_pending = new PendingReleases;

void DeferDecref(PyObject* o) {
  std::lock_guard<std::mutex> lock(g_pending->mu);
  g_pending->objects.push_back(o);
}

// GIL held.
size_t ReleasePending() {
  std::vector<PyObject*> batch;
  {
    std::lock_guard<std::mutex> lock(g_pending->mu);
    batch.swap(g_pending->objects);
  }
  for (PyObject* o : batch) Py_DECREF(o);
  return batch.size();
}

// Pending Python exception -> Status (GIL held).  The code comes from the
// installed error_code function (IgniteConnectionError -> UNAVAILABLE, ...;
// UNKNOWN without one); the message names the exception's type and text, then
// carries the Python traceback.
tf::Status StatusFromPython(const char* what) {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string message = std::string("IgniteDataset: ") + what + " failed";
  long code = static_cast<long>(absl::StatusCode::kUnknown);
  if (value != nullptr && g_error_code != nullptr) {
    PyObject* result = PyObject_CallFunctionObjArgs(g_error_code, value, nullptr);
    const long c = result != nullptr ? PyLong_AsLong(result) : -1;
    if (!PyErr_Occurred() && c > 0 && c <= static_cast<long>(absl::StatusCode::kUnauthenticated)) code = c;
    Py_XDECREF(result);
    PyErr_Clear();
  }
  if (value != nullptr) {
    PyObject* name = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(value)), "__name__");
    PyObject* text = PyObject_Str(value);
    const char* n = name != nullptr ? PyUnicode_AsUTF8(name) : nullptr;
    const char* t = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
    if (n != nullptr) message += std::string(": ") + n;
    if (t != nullptr && *t != '\0') message += std::string(": ") + t;
    Py_XDECREF(name);
    Py_XDECREF(text);
    PyErr_Clear();
    PyObject* module = PyImport_ImportModule("traceback");
    PyObject* lines = module == nullptr ? nullptr
        : PyObject_CallMethod(module, "format_exception", "OOO", type, value,
                              traceback != nullptr ? traceback : Py_None);
    PyObject* empty = PyUnicode_FromString("");
    PyObject* joined = lines != nullptr && empty != nullptr ? PyUnicode_Join(empty, lines) : nullptr;
    const char* tb = joined != nullptr ? PyUnicode_AsUTF8(joined) : nullptr;
    if (tb != nullptr) message += std::string("\n\n") + tb;
    Py_XDECREF(joined);
    Py_XDECREF(empty);
    Py_XDECREF(lines);
    Py_XDECREF(module);
    PyErr_Clear();
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return tf::Status(static_cast<absl::StatusCode>(code), message);
}

tf::Status Shutdown() {
  return tf::errors::Cancelled(
      "IgniteDataset: the Python interpreter is shutting down; no more elements");
}

// A tensor's memory inside a NumPy array (or any buffer exporter).
class PyBufferAdopter : public tf::TensorBuffer {
 public:
  PyBufferAdopter(void* data, size_t size, PyObject* owner)
      : tf::TensorBuffer(data), size_(size), owner_(owner) {}  // owner: new reference
  ~PyBufferAdopter() override { DeferDecref(owner_); }
  size_t size() const override { return size_; }
  tf::TensorBuffer* root_buffer() override { return this; }
  void FillAllocationDescription(tf::AllocationDescription* proto) const override {
    proto->set_requested_bytes(static_cast<int64_t>(size_));
    proto->set_allocator_name("ignite_python");
  }
  bool OwnsMemory() const override { return false; }

 private:
  size_t size_;
  PyObject* owner_;
};

// ----------------------------------------------------------------------------
// Python items -> tensors (GIL held).

tf::Status ShapeMatches(const tf::TensorShape& shape, const tf::PartialTensorShape& expected,
                        size_t index) {
  if (!expected.IsCompatibleWith(shape)) {
    return tf::errors::InvalidArgument("IgniteDataset: output ", index, " has shape ",
                                       shape.DebugString(), ", expected ",
                                       expected.DebugString());
  }
  return tf::OkStatus();
}

// The values of a span column: element i is buffers[owner[i]][starts[i]:ends[i]]
// (every span bounds-checked), copied into the tensor's strings without the GIL.
tf::Status SpanStrings(PyObject* buffers, PyObject* owner, PyObject* starts, PyObject* ends,
                       size_t index, tf::Tensor* out) {
  const int64_t n = out->NumElements();
  PyObject* seq = PySequence_Fast(buffers, "a span column's buffers must be a sequence");
  if (seq == nullptr) return StatusFromPython("reading a string output's buffers");
  std::vector<Py_buffer> held;
  auto release = [&held, seq]() {
    for (Py_buffer& b : held) PyBuffer_Release(&b);
    Py_DECREF(seq);
  };
  const Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
  held.reserve(static_cast<size_t>(count) + 3);
  for (Py_ssize_t i = 0; i < count; ++i) {
    Py_buffer b;
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &b, PyBUF_SIMPLE) < 0) {
      release();
      return StatusFromPython("reading a string output's buffer");
    }
    held.push_back(b);
  }
  const char* names[3] = {"owner", "starts", "ends"};
  PyObject* arrays[3] = {owner, starts, ends};
  const int64_t* items[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < 3; ++k) {
    Py_buffer b;
    if (PyObject_GetBuffer(arrays[k], &b, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
      release();
      return StatusFromPython((std::string("reading a string output's ") + names[k]).c_str());
    }
    held.push_back(b);
    const char* f = b.format != nullptr ? b.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') ++f;
    if (b.itemsize != 8 || (std::strcmp(f, "q") != 0 && std::strcmp(f, "l") != 0) || b.len != n * 8) {
      release();
      return tf::errors::InvalidArgument("IgniteDataset: output ", index, ": the ", names[k], " of ", n,
                                         " strings must be an int64 array of ", n, " items");
    }
    items[k] = static_cast<const int64_t*>(b.buf);
  }
  auto flat = out->flat<tf::tstring>();
  int64_t bad = -1;
  Py_BEGIN_ALLOW_THREADS
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = items[0][i], s = items[1][i], e = items[2][i];
    if (o < 0 || o >= count || s < 0 || e < s || e > static_cast<int64_t>(held[o].len)) {
      bad = i;
      break;
    }
    flat(i).assign(static_cast<const char*>(held[o].buf) + s, static_cast<size_t>(e - s));
  }
  Py_END_ALLOW_THREADS
  release();
  if (bad >= 0) {
    return tf::errors::InvalidArgument("IgniteDataset: output ", index, ": string ", bad,
                                       "'s span reaches outside its buffer");
  }
  return tf::OkStatus();
}

tf::Status StringTensor(PyObject* item, const tf::PartialTensorShape& expected, size_t index,
                        tf::Tensor* out) {
  PyObject* dims = nullptr;
  PyObject* values = nullptr;
  PyObject* owner = nullptr;
  PyObject* starts = nullptr;
  PyObject* ends = nullptr;
  if (!PyArg_ParseTuple(item, "OO|OOO", &dims, &values, &owner, &starts, &ends) ||
      (owner != nullptr && ends == nullptr)) {
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_TypeError, "expected (shape, values) or (shape, buffers, owner, starts, ends)");
    }
    return StatusFromPython(
        "reading a string output (expected (shape, values) or (shape, buffers, owner, starts, ends))");
  }
  tf::TensorShape shape;
  PyObject* seq_dims = PySequence_Fast(dims, "shape must be a sequence");
  if (seq_dims == nullptr) return StatusFromPython("reading a string output's shape");
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq_dims); ++i) {
    const long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq_dims, i));
    if (d < 0 || PyErr_Occurred()) {
      Py_DECREF(seq_dims);
      return PyErr_Occurred() ? StatusFromPython("reading a string output's shape")
                              : tf::errors::InvalidArgument("IgniteDataset: negative dimension");
    }
    shape.AddDim(d);
  }
  Py_DECREF(seq_dims);
  TF_RETURN_IF_ERROR(ShapeMatches(shape, expected, index));
  if (owner != nullptr) {
    *out = tf::Tensor(tf::DT_STRING, shape);
    return SpanStrings(values, owner, starts, ends, index, out);
  }
  PyObject* seq = PySequence_Fast(values, "string values must be a sequence");
  if (seq == nullptr) return StatusFromPython("reading a string output's values");
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n != shape.num_elements()) {
    Py_DECREF(seq);
    return tf::errors::InvalidArgument("IgniteDataset: output ", index, " has ", n,
                                       " strings for shape ", shape.DebugString());
  }
  *out = tf::Tensor(tf::DT_STRING, shape);
  auto flat = out->flat<tf::tstring>();
  for (Py_ssize_t i = 0; i < n; ++i) {
    char* data = nullptr;
    Py_ssize_t len = 0;
    if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(seq, i), &data, &len) < 0) {
      Py_DECREF(seq);
      return StatusFromPython("reading a string value (expected bytes)");
    }
    flat(i).assign(data, static_cast<size_t>(len));
  }
  Py_DECREF(seq);
  return tf::OkStatus();
}

tf::Status ArrayTensor(PyObject* item, tf::DataType dtype, const tf::PartialTensorShape& expected,
                       size_t index, tf::Tensor* out) {
  Py_buffer view;
  if (PyObject_GetBuffer(item, &view, PyBUF_ND) < 0) {
    return StatusFromPython("reading an output (expected a C-contiguous array)");
  }
  tf::TensorShape shape;
  for (int i = 0; i < view.ndim; ++i) shape.AddDim(view.shape[i]);
  tf::Status status = ShapeMatches(shape, expected, index);
  const size_t bytes = static_cast<size_t>(view.len);
  if (status.ok() && view.itemsize != static_cast<Py_ssize_t>(tf::DataTypeSize(dtype))) {
    status = tf::errors::InvalidArgument("IgniteDataset: output ", index, " has items of ",
                                         view.itemsize, " bytes, expected ",
                                         tf::DataTypeString(dtype));
  }
  if (status.ok()) {
    if (bytes > 0 && reinterpret_cast<uintptr_t>(view.buf) % kAlignment == 0 &&
        view.obj != nullptr) {
      Py_INCREF(view.obj);
      auto* buffer = new PyBufferAdopter(view.buf, bytes, view.obj);
      *out = tf::Tensor(dtype, shape, buffer);
      buffer->Unref();  // the tensor holds its own reference
    } else {
      *out = tf::Tensor(dtype, shape);
      if (bytes > 0) std::memcpy(out->data(), view.buf, bytes);
    }
  }
  PyBuffer_Release(&view);
  return status;
}

// ----------------------------------------------------------------------------
// Splits: what the tf.data service hands out under DYNAMIC sharding.
//
// The dataset's splits are the indices 0..num_splits-1 of its partition plan;
// an iterator given a split provider (a tf.data service worker in a
// "distributed_epoch" job) reads only the partitions whose index it is handed.

class IndexSplitProvider : public tf::data::SplitProvider {
 public:
  explicit IndexSplitProvider(int64_t n) : n_(n) {}
  tf::Status GetNext(tf::Tensor* split, bool* end_of_splits) override {
    tf::mutex_lock l(mu_);
    if (next_ >= n_) {
      *end_of_splits = true;
      return tf::OkStatus();
    }
    *split = tf::Tensor(tf::DT_INT64, tf::TensorShape({}));
    split->scalar<int64_t>()() = next_++;
    *end_of_splits = false;
    return tf::OkStatus();
  }
  tf::Status Reset() override {
    tf::mutex_lock l(mu_);
    next_ = 0;
    return tf::OkStatus();
  }
  tf::Status Save(std::function<std::string(std::string)> full_name,
                  tf::data::IteratorStateWriter* writer) override {
    tf::mutex_lock l(mu_);
    return writer->WriteScalar(full_name("next"), next_);
  }
  tf::Status Restore(std::function<std::string(std::string)> full_name,
                     tf::data::IteratorStateReader* reader) override {
    tf::mutex_lock l(mu_);
    return reader->ReadScalar(full_name("next"), &next_);
  }
  int64_t Cardinality() const override { return n_; }

 private:
  const int64_t n_;
  tf::mutex mu_;
  int64_t next_ = 0;
};

// A Python callable next_split() -> int | None over a split provider: the
// capsule owns a shared_ptr to it; the GIL is released while the provider
// answers (a tf.data service worker asks the dispatcher over RPC).
constexpr const char* kSplitCapsule = "tensorflow_ignite.split_provider";
using SplitProviderPtr = std::shared_ptr<tf::data::SplitProvider>;

void FreeSplitCapsule(PyObject* capsule) {
  delete static_cast<SplitProviderPtr*>(PyCapsule_GetPointer(capsule, kSplitCapsule));
}

PyObject* PyNextSplit(PyObject* capsule, PyObject*) {
  auto* provider = static_cast<SplitProviderPtr*>(PyCapsule_GetPointer(capsule, kSplitCapsule));
  if (provider == nullptr) return nullptr;
  tf::Tensor split;
  bool end = false;
  tf::Status status;
  Py_BEGIN_ALLOW_THREADS
  status = (*provider)->GetNext(&split, &end);
  Py_END_ALLOW_THREADS
  if (!status.ok()) {
    PyErr_Format(PyExc_RuntimeError, "IgniteDataset: asking for the next partition failed: %s",
                 status.ToString().c_str());
    return nullptr;
  }
  if (end) Py_RETURN_NONE;
  if (split.dtype() != tf::DT_INT64 || split.NumElements() != 1) {
    PyErr_SetString(PyExc_RuntimeError, "IgniteDataset: a split is not an int64 scalar");
    return nullptr;
  }
  return PyLong_FromLongLong(static_cast<long long>(split.flat<int64_t>()(0)));
}

PyMethodDef kNextSplitDef = {"next_split", PyNextSplit, METH_NOARGS,
                             "The next partition index to read, or None when there are no more."};

// GIL held.  A new reference, or nullptr with a Python error set.
PyObject* NextSplitCallable(const SplitProviderPtr& provider) {
  PyObject* capsule = PyCapsule_New(new SplitProviderPtr(provider), kSplitCapsule, FreeSplitCapsule);
  if (capsule == nullptr) return nullptr;
  PyObject* fn = PyCFunction_New(&kNextSplitDef, capsule);
  Py_DECREF(capsule);
  return fn;
}

// ----------------------------------------------------------------------------
// The dataset.
//
// Attributes: `source`, the key of a reader registered in the process that
// built the graph (the fast path); `description`, JSON from which any process
// that has imported tensorflow_ignite rebuilds the reader (no secrets: those
// come from the rebuilding process's environment); `num_splits`, the number of
// partitions in the plan (0: the dataset cannot be split).
// Inputs: `arguments`, scalar tensors (string, int64 or bool) whose values the
// dispatcher receives with the description: arguments of the dataset known
// only when the graph runs (a partition number inside Dataset.interleave).

struct SourceAttrs {
  std::string source;
  std::string description;
  int64_t num_splits = 0;
};

// A scalar input as a new Python object (GIL held): bytes, int or bool.
PyObject* ArgumentObject(const tf::Tensor& t) {
  switch (t.dtype()) {
    case tf::DT_STRING: {
      const tf::tstring& v = t.scalar<tf::tstring>()();
      return PyBytes_FromStringAndSize(v.data(), static_cast<Py_ssize_t>(v.size()));
    }
    case tf::DT_INT64:
      return PyLong_FromLongLong(static_cast<long long>(t.scalar<int64_t>()()));
    case tf::DT_BOOL:
      return PyBool_FromLong(t.scalar<bool>()() ? 1 : 0);
    default:
      PyErr_SetString(PyExc_TypeError, "IgniteDataset: an argument tensor is not string, int64 or bool");
      return nullptr;
  }
}

class Dataset : public DatasetBase {
 public:
  Dataset(tf::OpKernelContext* ctx, SourceAttrs attrs, tf::DataTypeVector types,
          std::vector<tf::PartialTensorShape> shapes, std::vector<tf::Tensor> arguments)
      : DatasetBase(tf::data::DatasetContext(ctx)),
        attrs_(std::move(attrs)),
        types_(std::move(types)),
        shapes_(std::move(shapes)),
        arguments_(std::move(arguments)) {}

  std::unique_ptr<IteratorBase> MakeIteratorInternal(const std::string& prefix) const override {
    return std::make_unique<Iterator>(
        Iterator::Params{this, tf::strings::StrCat(prefix, "::IgnitePy")});
  }
  const tf::DataTypeVector& output_dtypes() const override { return types_; }
  const std::vector<tf::PartialTensorShape>& output_shapes() const override { return shapes_; }
  std::string DebugString() const override { return "IgnitePyDatasetOp::Dataset"; }
  int64_t CardinalityInternal(tf::data::CardinalityOptions) const override {
    return tf::data::kUnknownCardinality;
  }
  tf::Status InputDatasets(std::vector<const DatasetBase*>*) const override {
    return tf::OkStatus();
  }
  // The graph describes the source completely (its data lives in Ignite, as a
  // file reader's lives in files), so it may be serialized and checkpointed.
  tf::Status CheckExternalState() const override { return tf::OkStatus(); }

  tf::Status MakeSplitProviders(
      std::vector<std::unique_ptr<tf::data::SplitProvider>>* split_providers) const override {
    if (attrs_.description.empty()) {
      return tf::errors::Unimplemented(
          "IgniteDataset: this dataset reads a Python-only source (a generator of this process), "
          "which cannot be split across tf.data service workers; build it from an Ignite cache "
          "(IgniteDataset(cache_name, ...)) or use processing_mode='parallel_epochs'");
    }
    if (attrs_.num_splits <= 0) {
      return tf::errors::Unimplemented(
          "IgniteDataset: this dataset has no partitions to hand out (an SQL query, a replicated "
          "cache or a local=True scan); tf.data service workers can only read it whole: use "
          "processing_mode='parallel_epochs', or read a partitioned cache for 'distributed_epoch'");
    }
    split_providers->push_back(std::make_unique<IndexSplitProvider>(attrs_.num_splits));
    return tf::OkStatus();
  }

 protected:
  tf::Status AsGraphDefInternal(SerializationContext* ctx, DatasetGraphDefBuilder* b,
                                tf::Node** output) const override {
    tf::AttrValue source, description, splits, types, shapes, argument_types;
    std::vector<tf::Node*> arguments;
    tf::DataTypeVector argument_dtypes;
    for (const tf::Tensor& t : arguments_) {
      tf::Node* node = nullptr;
      TF_RETURN_IF_ERROR(b->AddTensor(t, &node));
      arguments.push_back(node);
      argument_dtypes.push_back(t.dtype());
    }
    b->BuildAttrValue(argument_dtypes, &argument_types);
    b->BuildAttrValue(attrs_.source, &source);
    b->BuildAttrValue(attrs_.description, &description);
    b->BuildAttrValue(attrs_.num_splits, &splits);
    b->BuildAttrValue(types_, &types);
    b->BuildAttrValue(shapes_, &shapes);
    return b->AddDataset(this, {}, {{0, arguments}},
                         {{"source", source},
                          {"Targuments", argument_types},
                          {"description", description},
                          {"num_splits", splits},
                          {"output_types", types},
                          {"output_shapes", shapes}},
                         output);
  }

 private:
  class Iterator : public DatasetIterator<Dataset> {
   public:
    explicit Iterator(const Params& params) : DatasetIterator<Dataset>(params) {}

    ~Iterator() override {
      if (source_ == nullptr) return;
      Gil gil;
      if (!gil.ok()) return;  // interpreter gone: leak rather than crash
      CloseSource();
    }

    tf::Status Initialize(IteratorContext* ctx) override {
      tf::mutex_lock l(mu_);
      const auto providers = ctx->split_providers();
      if (providers.size() > 1) {
        return tf::errors::InvalidArgument("IgniteDataset: expected one split provider, got ",
                                           providers.size());
      }
      if (!providers.empty()) split_provider_ = providers[0];
      if (ctx->is_restoring()) return tf::OkStatus();  // RestoreInternal starts the read
      return Start(nullptr);
    }

    tf::Status GetNextInternal(IteratorContext*, std::vector<tf::Tensor>* out_tensors,
                               bool* end_of_sequence) override {
      tf::mutex_lock l(mu_);
      if (source_ == nullptr) {
        *end_of_sequence = true;
        return tf::OkStatus();
      }
      Gil gil;
      if (!gil.ok()) return Shutdown();
      ReleasePending();
      PyObject* item = PyIter_Next(source_);
      if (item == nullptr) {
        if (PyErr_Occurred()) {
          tf::Status status = StatusFromPython("reading");
          CloseSource();
          return status;
        }
        CloseSource();
        *end_of_sequence = true;
        return tf::OkStatus();
      }
      tf::Status status = Convert(item, out_tensors);
      Py_DECREF(item);
      if (!status.ok()) {
        out_tensors->clear();
        CloseSource();
        return status;
      }
      *end_of_sequence = false;
      return tf::OkStatus();
    }

   protected:
    std::shared_ptr<tf::data::model::Node> CreateNode(
        IteratorContext* ctx, tf::data::model::Node::Args args) const override {
      return tf::data::model::MakeSourceNode(std::move(args));
    }

    // The state is what the Python reader says it is (small: per-partition
    // progress), or "exhausted" once the read has ended.
    tf::Status SaveInternal(SerializationContext*, tf::data::IteratorStateWriter* writer) override {
      tf::mutex_lock l(mu_);
      if (source_ == nullptr) return writer->WriteScalar(prefix(), "exhausted", 1);
      Gil gil;
      if (!gil.ok()) return Shutdown();
      PyObject* state = PyObject_CallMethod(source_, "save", nullptr);
      if (state == nullptr) return StatusFromPython("saving the iterator");
      char* data = nullptr;
      Py_ssize_t len = 0;
      if (PyBytes_AsStringAndSize(state, &data, &len) < 0) {
        Py_DECREF(state);
        return StatusFromPython("saving the iterator (save() must return bytes)");
      }
      tf::tstring value(data, static_cast<size_t>(len));
      Py_DECREF(state);
      return writer->WriteScalar(prefix(), "state", value);
    }

    tf::Status RestoreInternal(IteratorContext*, tf::data::IteratorStateReader* reader) override {
      tf::mutex_lock l(mu_);
      {
        Gil gil;
        if (!gil.ok()) return Shutdown();
        CloseSource();
      }
      if (reader->Contains(prefix(), "exhausted")) return tf::OkStatus();
      tf::tstring state;
      TF_RETURN_IF_ERROR(reader->ReadScalar(prefix(), "state", &state));
      const std::string copy(state.data(), state.size());
      return Start(&copy);
    }

   private:
    // Asks the Python dispatcher for the read (mu_ held): from the beginning,
    // or from `state` (a saved iterator's).
    tf::Status Start(const std::string* state) TF_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      Gil gil;
      if (!gil.ok()) return Shutdown();
      if (g_dispatcher == nullptr) {
        return tf::errors::FailedPrecondition(
            "IgniteDataset: the op's Python side is not installed in this process: import "
            "tensorflow_ignite before TensorFlow runs the dataset (tf.data service workers and "
            "dispatchers, ParameterServer workers and processes restoring a checkpoint too)");
      }
      const Dataset* d = dataset();
      PyObject* py_state = state == nullptr
          ? (Py_INCREF(Py_None), Py_None)
          : PyBytes_FromStringAndSize(state->data(), static_cast<Py_ssize_t>(state->size()));
      PyObject* splits = split_provider_ == nullptr ? (Py_INCREF(Py_None), Py_None)
                                                    : NextSplitCallable(split_provider_);
      PyObject* arguments = PyTuple_New(static_cast<Py_ssize_t>(d->arguments_.size()));
      for (size_t i = 0; arguments != nullptr && i < d->arguments_.size(); ++i) {
        PyObject* value = ArgumentObject(d->arguments_[i]);
        if (value == nullptr) {
          Py_CLEAR(arguments);
          break;
        }
        PyTuple_SET_ITEM(arguments, static_cast<Py_ssize_t>(i), value);  // steals
      }
      PyObject* source = nullptr;
      if (py_state != nullptr && splits != nullptr && arguments != nullptr) {
        source = PyObject_CallFunction(
            g_dispatcher, "s#s#OOO", d->attrs_.source.data(),
            static_cast<Py_ssize_t>(d->attrs_.source.size()), d->attrs_.description.data(),
            static_cast<Py_ssize_t>(d->attrs_.description.size()), py_state, splits, arguments);
      }
      Py_XDECREF(py_state);
      Py_XDECREF(splits);
      Py_XDECREF(arguments);
      if (source == nullptr) return StatusFromPython("starting a read");
      source_ = PyObject_GetIter(source);
      Py_DECREF(source);
      if (source_ == nullptr) return StatusFromPython("starting a read");
      return tf::OkStatus();
    }

    // GIL held.
    void CloseSource() {
      PyObject* source = source_;
      source_ = nullptr;
      if (source == nullptr) return;
      if (PyObject_HasAttrString(source, "close")) {
        PyObject* r = PyObject_CallMethod(source, "close", nullptr);
        if (r == nullptr) PyErr_Clear();
        Py_XDECREF(r);
      }
      Py_DECREF(source);
    }

    // GIL held.
    tf::Status Convert(PyObject* item, std::vector<tf::Tensor>* out) {
      const auto& types = dataset()->types_;
      const auto& shapes = dataset()->shapes_;
      if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != static_cast<Py_ssize_t>(types.size())) {
        return tf::errors::InvalidArgument("IgniteDataset: the reader yielded an element that is "
                                           "not a tuple of ", types.size(), " outputs");
      }
      out->clear();
      out->reserve(types.size());
      for (size_t i = 0; i < types.size(); ++i) {
        PyObject* component = PyTuple_GET_ITEM(item, static_cast<Py_ssize_t>(i));
        tf::Tensor t;
        TF_RETURN_IF_ERROR(types[i] == tf::DT_STRING
                               ? StringTensor(component, shapes[i], i, &t)
                               : ArrayTensor(component, types[i], shapes[i], i, &t));
        out->push_back(std::move(t));
      }
      return tf::OkStatus();
    }

    tf::mutex mu_;
    PyObject* source_ TF_GUARDED_BY(mu_) = nullptr;  // the Python iterator (strong reference)
    SplitProviderPtr split_provider_;
  };

  const SourceAttrs attrs_;
  const tf::DataTypeVector types_;
  const std::vector<tf::PartialTensorShape> shapes_;
  const std::vector<tf::Tensor> arguments_;
};

class IgnitePyDatasetOp : public tf::data::DatasetOpKernel {
 public:
  explicit IgnitePyDatasetOp(tf::OpKernelConstruction* ctx) : DatasetOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("source", &attrs_.source));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("description", &attrs_.description));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_splits", &attrs_.num_splits));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("output_types", &types_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("output_shapes", &shapes_));
  }

  void MakeDataset(tf::OpKernelContext* ctx, DatasetBase** output) override {
    tf::OpInputList inputs;
    OP_REQUIRES_OK(ctx, ctx->input_list("arguments", &inputs));
    std::vector<tf::Tensor> arguments;
    for (int i = 0; i < inputs.size(); ++i) {
      OP_REQUIRES(ctx, tf::TensorShapeUtils::IsScalar(inputs[i].shape()),
                  tf::errors::InvalidArgument("IgniteDataset: argument tensor ", i,
                                              " must be a scalar, got shape ",
                                              inputs[i].shape().DebugString()));
      arguments.push_back(inputs[i]);
    }
    *output = new Dataset(ctx, attrs_, types_, shapes_, std::move(arguments));
  }

 private:
  SourceAttrs attrs_;
  tf::DataTypeVector types_;
  std::vector<tf::PartialTensorShape> shapes_;
};

REGISTER_OP("IgnitePyDataset")
    .Input("arguments: Targuments")
    .Output("handle: variant")
    .Attr("Targuments: list({string, int64, bool}) >= 0 = []")
    .Attr("source: string = ''")
    .Attr("description: string = ''")
    .Attr("num_splits: int = 0")
    .Attr("output_types: list(type) >= 1")
    .Attr("output_shapes: list(shape) >= 1")
    .SetIsStateful()
    .SetShapeFn(tf::shape_inference::ScalarShape);

REGISTER_KERNEL_BUILDER(Name("IgnitePyDataset").Device(tf::DEVICE_CPU), IgnitePyDatasetOp);

// ----------------------------------------------------------------------------
// The Python extension module.

PyObject* PySetDispatcher(PyObject*, PyObject* fn) {
  PyObject* previous = g_dispatcher;
  if (fn == Py_None) {
    g_dispatcher = nullptr;
  } else {
    if (!PyCallable_Check(fn)) {
      PyErr_SetString(PyExc_TypeError, "set_dispatcher() needs a callable or None");
      return nullptr;
    }
    Py_INCREF(fn);
    g_dispatcher = fn;
  }
  if (previous == nullptr) Py_RETURN_NONE;
  return previous;  // the reference the module held
}

PyObject* PySetErrorCode(PyObject*, PyObject* fn) {
  if (fn != Py_None && !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "set_error_code() needs a callable or None");
    return nullptr;
  }
  PyObject* previous = g_error_code;
  Py_XINCREF(fn == Py_None ? nullptr : fn);
  g_error_code = fn == Py_None ? nullptr : fn;
  Py_XDECREF(previous);
  Py_RETURN_NONE;
}

PyObject* PyReleasePending(PyObject*, PyObject*) {
  return PyLong_FromSize_t(ReleasePending());
}

PyObject* PyPendingCount(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(g_pending->mu);
  return PyLong_FromSize_t(g_pending->objects.size());
}

PyObject* PyShutdown(PyObject*, PyObject*) {
  g_closed.store(true);
  ReleasePending();
  Py_RETURN_NONE;
}

PyMethodDef kModuleMethods[] = {
    {"set_dispatcher", PySetDispatcher, METH_O,
     "set_dispatcher(fn(source, description, state, next_split, arguments) -> iterator, or None) -> "
     "the previous one or None"},
    {"set_error_code", PySetErrorCode, METH_O,
     "set_error_code(fn(exception) -> TF_Code int, or None): the status code of reader errors"},
    {"release_pending", PyReleasePending, METH_NOARGS,
     "Drop the references of tensors TensorFlow has freed; returns how many."},
    {"pending_count", PyPendingCount, METH_NOARGS,
     "How many freed tensors' references wait for release_pending()."},
    {"decode_layout", PyDecodeLayout, METH_VARARGS,
     "decode_layout(page, n, row_len, fixed_idx, fixed_ref, leaves) -> bool: check that every row repeats "
     "a layout and gather its leaves (offset, width, kind, out) into the outputs, without the GIL"},
    {"shutdown", PyShutdown, METH_NOARGS,
     "Refuse to enter Python from TensorFlow threads from now on (interpreter exit)."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModuleDef = {
    PyModuleDef_HEAD_INIT, "_tf_ignite_data",
    "tf.data source op IgnitePyDataset (see tensorflow_ignite/native/data_source.py).",
    -1, kModuleMethods, nullptr, nullptr, nullptr, nullptr,
};

}  // namespace
}  // namespace tfi

extern "C" PyMODINIT_FUNC PyInit__tf_ignite_data(void) {
  PyObject* m = PyModule_Create(&tfi::kModuleDef);
  if (m == nullptr) return nullptr;
  if (PyModule_AddStringConstant(m, "OP_NAME", tfi::kOpName) < 0 || tfi::AddScanPump(m) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}

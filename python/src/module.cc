#include "module.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <filesystem>
#include <memory>

#include "kiln/support/error.h"

namespace kiln::python {
namespace {

// NumPy's name of a kiln element type (bool is {kDLUInt, 1}: one byte per element).
std::string dtype_name(DLDataType t) {
  if (t.code == kDLUInt && t.bits == 1) return "bool";
  const char* kind = t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint" : t.code == kDLFloat ? "float"
                     : t.code == kDLBfloat ? "bfloat" : nullptr;
  KILN_CHECK(kind != nullptr && t.lanes == 1) << "unexpected tensor element type code " << int(t.code);
  return kind + std::to_string(t.bits);
}

nb::tuple info_tuple(const kiln_tensor_info& info) {
  nb::list shape;
  for (int32_t d = 0; d < info.ndim; ++d) shape.append(info.shape[d]);
  return nb::make_tuple(info.name, nb::tuple(shape), dtype_name(info.dtype));
}

// A DLTensor view of `value` (no copy: nanobind takes it through __dlpack__ or the buffer
// protocol); `keep` holds what it points into.
DLTensor dl_view(const std::string& name, const nb::object& value, nb::ndarray<nb::ro>* keep) {
  if (!nb::try_cast(value, *keep, /*convert=*/false))
    KILN_THROW() << "input '" << name << "': expected a NumPy array or an object with __dlpack__ (a PyTorch tensor), got "
                 << nb::inst_name(value).c_str();
  const nb::ndarray<nb::ro>& a = *keep;
  DLTensor t{};
  t.data = a.data_handle();
  t.byte_offset = a.byte_offset();
  t.device = {static_cast<DLDeviceType>(a.device_type()), a.device_id()};
  t.ndim = static_cast<int32_t>(a.ndim());
  t.dtype = {a.dtype().code, a.dtype().bits, a.dtype().lanes};
  if (a.dtype().code == static_cast<uint8_t>(nb::dlpack::dtype_code::Bool)) t.dtype = {kDLUInt, 1, 1};  // kiln's bool
  t.shape = const_cast<int64_t*>(a.shape_ptr());
  t.strides = const_cast<int64_t*>(a.stride_ptr());
  return t;
}

// A new NumPy array holding output `index`.
nb::object output_array(const kiln_module* mod, int32_t index) {
  kiln_tensor_info info{};
  check(kiln_module_output_info(mod, index, &info));
  size_t count = 1;
  for (int32_t d = 0; d < info.ndim; ++d) count *= static_cast<size_t>(info.shape[d]);
  const size_t bytes = count * ((info.dtype.bits + 7) / 8);
  std::unique_ptr<uint8_t[]> data(new uint8_t[bytes > 0 ? bytes : 1]);
  DLTensor out{};
  out.data = data.get();
  out.device = {kDLCPU, 0};
  out.ndim = info.ndim;
  out.dtype = info.dtype;
  out.shape = const_cast<int64_t*>(info.shape);
  check(kiln_module_get_output(mod, index, &out));
  nb::dlpack::dtype dtype{info.dtype.code, info.dtype.bits, info.dtype.lanes};
  if (info.dtype.code == kDLUInt && info.dtype.bits == 1) dtype = nb::dtype<bool>();
  std::vector<size_t> shape(info.shape, info.shape + info.ndim);
  nb::capsule owner(data.get(), [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  data.release();
  return nb::ndarray<nb::numpy>(out.data, shape.size(), shape.data(), owner, nullptr, dtype, nb::device::cpu::value).cast();
}

}  // namespace

void check(kiln_status status) {
  if (status != KILN_OK) throw Error(kiln_last_error());
}

Module::Module(std::string path, bool temporary, std::vector<std::string> notes)
    : path_(std::move(path)), temporary_(temporary), notes_(std::move(notes)) {
  kiln_status s = kiln_module_load(path_.c_str(), &mod_);
  if (s != KILN_OK) {
    std::string message = kiln_last_error();
    if (temporary_) std::filesystem::remove_all(std::filesystem::path(path_).parent_path());
    throw Error(message);
  }
}

Module::~Module() {
  kiln_module_free(mod_);
  std::error_code ignored;  // a destructor has nobody to tell
  if (temporary_) std::filesystem::remove_all(std::filesystem::path(path_).parent_path(), ignored);
}

namespace {

// The (name, shape, dtype) of each of a module's inputs or outputs, by the C API's count and
// info functions for one side.
nb::list tensor_infos(const kiln_module* mod, kiln_status (*count)(const kiln_module*, int32_t*),
                      kiln_status (*info_of)(const kiln_module*, int32_t, kiln_tensor_info*)) {
  int32_t n = 0;
  check(count(mod, &n));
  nb::list infos;
  for (int32_t i = 0; i < n; ++i) {
    kiln_tensor_info info{};
    check(info_of(mod, i, &info));
    infos.append(info_tuple(info));
  }
  return infos;
}

}  // namespace

nb::list Module::input_info() const { return tensor_infos(mod_, kiln_module_num_inputs, kiln_module_input_info); }

nb::list Module::output_info() const { return tensor_infos(mod_, kiln_module_num_outputs, kiln_module_output_info); }

nb::list Module::run(const std::vector<std::pair<std::string, nb::object>>& inputs) {
  // The lock is taken without the GIL: a thread holding it takes the GIL back after its run.
  std::unique_lock<std::mutex> lock(run_mutex_, std::defer_lock);
  {
    nb::gil_scoped_release released;
    lock.lock();
  }
  int32_t n = 0;
  check(kiln_module_num_inputs(mod_, &n));
  std::vector<bool> given(static_cast<size_t>(n), false);
  for (const auto& [name, value] : inputs) {
    nb::ndarray<nb::ro> keep;
    DLTensor t = dl_view(name, value, &keep);
    check(kiln_module_set_input(mod_, name.c_str(), &t));
    int32_t index = 0;
    check(kiln_module_input_index(mod_, name.c_str(), &index));
    given[static_cast<size_t>(index)] = true;
  }
  std::string missing;
  for (int32_t i = 0; i < n; ++i) {
    if (given[static_cast<size_t>(i)]) continue;
    const char* name = nullptr;
    check(kiln_module_input_name(mod_, i, &name));
    missing += std::string(missing.empty() ? "" : ", ") + "'" + name + "'";
  }
  KILN_USER_CHECK(missing.empty()) << "missing input" << (missing.find(',') != std::string::npos ? "s " : " ")
                                   << missing << ": every run takes every input";
  {
    nb::gil_scoped_release released;
    check(kiln_module_run(mod_));
  }
  int32_t outputs = 0;
  check(kiln_module_num_outputs(mod_, &outputs));
  nb::list result;
  for (int32_t i = 0; i < outputs; ++i) result.append(output_array(mod_, i));
  return result;
}

void Module::save(const std::string& path) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path) && fs::equivalent(path_, path, ec)) return;  // already there
  fs::copy_file(path_, path, fs::copy_options::overwrite_existing, ec);
  KILN_USER_CHECK(!ec) << "cannot save the module to '" << path << "': " << ec.message();
}

}  // namespace kiln::python

#include "module_io.h"

#include <random>

#include "kiln/support/error.h"

namespace kiln::cli {
namespace {

void check(kiln_status s, const char* what) {
  if (s != KILN_OK) KILN_THROW() << what << ": " << kiln_last_error();
}

}  // namespace

DLTensor view_of(const relay::HostTensor& t) {
  DLTensor d{};
  d.data = const_cast<uint8_t*>(t.data());
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(t.rank());
  d.dtype = to_dl(t.dtype());
  d.shape = const_cast<int64_t*>(t.shape().data());
  return d;
}

ir::DataType from_dl(DLDataType t) {
  switch (t.code) {
    case kDLInt: return ir::DataType(ir::TypeCode::Int, t.bits, t.lanes);
    case kDLUInt: return t.bits == 1 ? ir::DataType::boolean(t.lanes) : ir::DataType(ir::TypeCode::UInt, t.bits, t.lanes);
    case kDLFloat: return ir::DataType(ir::TypeCode::Float, t.bits, t.lanes);
    case kDLBfloat: return ir::DataType(ir::TypeCode::BFloat, t.bits, t.lanes);
    default: KILN_THROW() << "unsupported DLPack type code " << int(t.code);
  }
  return {};
}

DLDataType to_dl(ir::DataType t) {
  switch (t.code) {
    case ir::TypeCode::Int: return {kDLInt, t.bits, t.lanes};
    case ir::TypeCode::UInt: return {kDLUInt, t.bits, t.lanes};
    case ir::TypeCode::Float: return {kDLFloat, t.bits, t.lanes};
    case ir::TypeCode::BFloat: return {kDLBfloat, t.bits, t.lanes};
    case ir::TypeCode::Bool: return {kDLUInt, 1, t.lanes};
    case ir::TypeCode::Handle: break;
  }
  KILN_THROW() << "a handle is not a tensor element type";
  return {};
}

LoadedModel::LoadedModel(const std::string& path) { check(kiln_module_load(path.c_str(), &mod_), "cannot load model"); }
LoadedModel::~LoadedModel() { kiln_module_free(mod_); }

int LoadedModel::num_inputs() const {
  int32_t n = 0;
  check(kiln_module_num_inputs(mod_, &n), "num_inputs");
  return n;
}
int LoadedModel::num_outputs() const {
  int32_t n = 0;
  check(kiln_module_num_outputs(mod_, &n), "num_outputs");
  return n;
}
kiln_tensor_info LoadedModel::input_info(int i) const {
  kiln_tensor_info info{};
  check(kiln_module_input_info(mod_, i, &info), "input info");
  return info;
}
std::pair<int64_t, int64_t> LoadedModel::batch_range() const {
  int64_t lo = 0, hi = 0;
  check(kiln_module_batch_range(mod_, &lo, &hi), "batch range");
  return {lo, hi};
}

std::vector<relay::HostTensor> LoadedModel::random_inputs(int64_t batch) const {
  auto [lo, hi] = batch_range();
  KILN_USER_CHECK(batch <= 0 || hi > 0) << "--batch " << batch << ": the module has fixed shapes (compile it with "
                                        << "--input-shape NAME=MIN..MAX,... for a dynamic batch)";
  KILN_USER_CHECK(batch <= 0 || (batch >= lo && batch <= hi))
      << "--batch " << batch << " is outside the module's batch range " << lo << ".." << hi;
  std::vector<relay::HostTensor> out;
  for (int i = 0; i < num_inputs(); ++i) {
    kiln_tensor_info info = input_info(i);
    std::vector<int64_t> shape(info.shape, info.shape + info.ndim);
    // Before any input is set, a dynamic module's infos are at its smallest batch.
    if (batch > 0) shape[0] = shape[0] / lo * batch;
    info.shape = shape.data();
    out.push_back(random_tensor(info, 1234 + i));
  }
  return out;
}

kiln_tensor_info LoadedModel::output_info(int i) const {
  kiln_tensor_info info{};
  check(kiln_module_output_info(mod_, i, &info), "output info");
  return info;
}
void LoadedModel::set_input(int i, const relay::HostTensor& value) {
  DLTensor d = view_of(value);
  check(kiln_module_set_input_index(mod_, i, &d), "cannot set input");
}
void LoadedModel::set_input(const std::string& name, const relay::HostTensor& value) {
  DLTensor d = view_of(value);
  check(kiln_module_set_input(mod_, name.c_str(), &d), "cannot set input");
}
void LoadedModel::run() { check(kiln_module_run(mod_), "run failed"); }

relay::HostTensor LoadedModel::output(int i) const {
  DLTensor v{};
  check(kiln_module_get_output_view(mod_, i, &v), "cannot read output");
  relay::Shape shape(v.shape, v.shape + v.ndim);
  return relay::HostTensor(from_dl(v.dtype), shape, v.data);
}

relay::HostTensor random_tensor(const kiln_tensor_info& info, uint32_t seed) {
  relay::Shape shape(info.shape, info.shape + info.ndim);
  ir::DataType t = from_dl(info.dtype);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = t.is_floating() ? u(rng) : double(int(u(rng) * 3));
  return relay::HostTensor::from_doubles(t, shape, v);
}

}  // namespace kiln::cli

// The C API (kiln_runtime.h) over GraphExecutor: every entry point catches everything, records
// the message for kiln_last_error() and returns a status; no exception crosses into C.
#include "kiln/runtime/kiln_runtime.h"

#include <new>
#include <string>
#include <type_traits>

#include "kiln/runtime/graph_executor.h"

// A module is its built-in context: the executor holds the loaded code and weights, which
// further contexts share.
struct kiln_module {
  kiln::runtime::GraphExecutor exec;
};

struct kiln_context {
  kiln::runtime::GraphExecutor exec;
};

namespace {

using kiln::runtime::ErrorKind;
using kiln::runtime::RuntimeError;

thread_local std::string t_last_error;

kiln_status set_error(kiln_status status, const std::string& message) {
  t_last_error = message;
  return status;
}

// Runs body(closure) (which may throw) and turns what it throws into a status and a message
// prefixed by the API function's name. One function, not a template over the callable: its
// catch clauses exist once rather than once per API function (the runtime's size budget).
kiln_status guarded_call(const char* api, void (*body)(void*), void* closure) {
  try {
    body(closure);
    return KILN_OK;
  } catch (const RuntimeError& e) {
    return set_error(static_cast<kiln_status>(e.kind()), std::string(api) + ": " + e.what());
  } catch (const kiln::Error& e) {
    return set_error(KILN_ERROR_INVALID_ARGUMENT, std::string(api) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return set_error(KILN_ERROR_OUT_OF_MEMORY, std::string(api) + ": out of memory");
  } catch (const std::exception& e) {
    return set_error(KILN_ERROR_INTERNAL, std::string(api) + ": internal error: " + e.what());
  } catch (...) {
    return set_error(KILN_ERROR_INTERNAL, std::string(api) + ": internal error (unknown exception)");
  }
}

template <typename F>
kiln_status guarded(const char* api, F&& f) {
  using Body = std::remove_reference_t<F>;
  return guarded_call(api, [](void* c) { (*static_cast<Body*>(c))(); }, &f);
}

void require(const void* p, const char* what) {
  if (p == nullptr) throw RuntimeError(ErrorKind::kInvalidArgument, std::string(what) + " is NULL");
}

void fill_info(const kiln::runtime::TensorInfo& t, kiln_tensor_info* info) {
  info->name = t.name.c_str();
  info->ndim = static_cast<int32_t>(t.shape.size());
  info->shape = t.shape.data();
  info->dtype = t.dtype;
}

// The run path, shared by a module's built-in context and kiln_context: H is either, both
// holding an executor named exec; `what` names it in the NULL message.
template <class H>
kiln_status set_input_by_name(const char* api, H* h, const char* what, const char* name, const DLTensor* value) {
  return guarded(api, [&] {
    require(h, what);
    require(name, "name");
    require(value, "value");
    h->exec.set_input(std::string(name), *value);
  });
}
template <class H>
kiln_status set_input_by_index(const char* api, H* h, const char* what, int32_t index, const DLTensor* value) {
  return guarded(api, [&] {
    require(h, what);
    require(value, "value");
    h->exec.set_input(static_cast<int>(index), *value);
  });
}
template <class H>
kiln_status run(const char* api, H* h, const char* what) {
  return guarded(api, [&] {
    require(h, what);
    h->exec.run();
  });
}
template <class H>
kiln_status get_output(const char* api, const H* h, const char* what, int32_t index, DLTensor* out) {
  return guarded(api, [&] {
    require(h, what);
    require(out, "out");
    h->exec.get_output(index, *out);
  });
}
template <class H>
kiln_status get_output_view(const char* api, const H* h, const char* what, int32_t index, DLTensor* view) {
  return guarded(api, [&] {
    require(h, what);
    require(view, "view");
    *view = h->exec.output_view(index);
  });
}

// The device graph of a device module, for the kiln_module_device_* functions: they forward to
// the device layer (libkiln_device.so), which checks what it is given.
const kiln::runtime::DeviceGraph& device_of(const kiln_module* mod) {
  require(mod, "module");
  const kiln::runtime::DeviceGraph* g = mod->exec.module().device_graph();
  if (g == nullptr) throw RuntimeError(ErrorKind::kInvalidArgument, "the module runs on the CPU: it has no device memory");
  return *g;
}

}  // namespace

extern "C" {

const char* kiln_last_error(void) { return t_last_error.c_str(); }

kiln_status kiln_module_load(const char* path, kiln_module** out) {
  if (out != nullptr) *out = nullptr;
  return guarded("kiln_module_load", [&] {
    require(path, "path");
    require(out, "out");
    *out = new kiln_module{kiln::runtime::GraphExecutor::load(path)};
  });
}

void kiln_module_free(kiln_module* mod) { delete mod; }

kiln_status kiln_module_num_inputs(const kiln_module* mod, int32_t* count) {
  return guarded("kiln_module_num_inputs", [&] {
    require(mod, "module");
    require(count, "count");
    *count = mod->exec.num_inputs();
  });
}

kiln_status kiln_module_num_outputs(const kiln_module* mod, int32_t* count) {
  return guarded("kiln_module_num_outputs", [&] {
    require(mod, "module");
    require(count, "count");
    *count = mod->exec.num_outputs();
  });
}

kiln_status kiln_module_input_name(const kiln_module* mod, int32_t index, const char** name) {
  return guarded("kiln_module_input_name", [&] {
    require(mod, "module");
    require(name, "name");
    *name = mod->exec.input_info(index).name.c_str();
  });
}

kiln_status kiln_module_output_name(const kiln_module* mod, int32_t index, const char** name) {
  return guarded("kiln_module_output_name", [&] {
    require(mod, "module");
    require(name, "name");
    *name = mod->exec.output_info(index).name.c_str();
  });
}

kiln_status kiln_module_input_info(const kiln_module* mod, int32_t index, kiln_tensor_info* info) {
  return guarded("kiln_module_input_info", [&] {
    require(mod, "module");
    require(info, "info");
    fill_info(mod->exec.input_info(index), info);
  });
}

kiln_status kiln_module_batch_range(const kiln_module* mod, int64_t* min, int64_t* max) {
  return guarded("kiln_module_batch_range", [&] {
    require(mod, "module");
    require(min, "min");
    require(max, "max");
    const kiln::runtime::GraphPlan& plan = mod->exec.module().plan();
    *min = plan.batch_min;
    *max = plan.batch_max;
  });
}

kiln_status kiln_module_output_info(const kiln_module* mod, int32_t index, kiln_tensor_info* info) {
  return guarded("kiln_module_output_info", [&] {
    require(mod, "module");
    require(info, "info");
    fill_info(mod->exec.output_info(index), info);
  });
}

kiln_status kiln_module_input_index(const kiln_module* mod, const char* name, int32_t* index) {
  return guarded("kiln_module_input_index", [&] {
    require(mod, "module");
    require(name, "name");
    require(index, "index");
    *index = mod->exec.input_index(name);
  });
}

kiln_status kiln_module_set_input(kiln_module* mod, const char* name, const DLTensor* value) {
  return set_input_by_name("kiln_module_set_input", mod, "module", name, value);
}
kiln_status kiln_module_set_input_index(kiln_module* mod, int32_t index, const DLTensor* value) {
  return set_input_by_index("kiln_module_set_input_index", mod, "module", index, value);
}
kiln_status kiln_module_run(kiln_module* mod) { return run("kiln_module_run", mod, "module"); }
kiln_status kiln_module_get_output(const kiln_module* mod, int32_t index, DLTensor* out) {
  return get_output("kiln_module_get_output", mod, "module", index, out);
}
kiln_status kiln_module_get_output_view(const kiln_module* mod, int32_t index, DLTensor* view) {
  return get_output_view("kiln_module_get_output_view", mod, "module", index, view);
}

kiln_status kiln_module_device_info(const kiln_module* mod, kiln_device_info* info) {
  return guarded("kiln_module_device_info", [&] {
    require(mod, "module");
    require(info, "info");
    *info = kiln_device_info{{kDLCPU, 0}, nullptr, nullptr};
    if (const kiln::runtime::DeviceGraph* g = mod->exec.module().device_graph()) g->device_info(info);
  });
}
kiln_status kiln_module_device_alloc(const kiln_module* mod, uint64_t bytes, void** data) {
  if (data != nullptr) *data = nullptr;
  return guarded("kiln_module_device_alloc", [&] {
    require(data, "data");
    *data = device_of(mod).alloc(bytes);
  });
}
kiln_status kiln_module_device_free(const kiln_module* mod, void* data) {
  return guarded("kiln_module_device_free", [&] { device_of(mod).free(data); });
}
kiln_status kiln_module_device_copy(const kiln_module* mod, const DLTensor* from, DLTensor* to) {
  return guarded("kiln_module_device_copy", [&] {
    require(from, "from");
    require(to, "to");
    device_of(mod).copy(*from, *to);
  });
}

kiln_status kiln_context_create(const kiln_module* mod, kiln_context** out) {
  if (out != nullptr) *out = nullptr;
  return guarded("kiln_context_create", [&] {
    require(mod, "module");
    require(out, "out");
    *out = new kiln_context{kiln::runtime::GraphExecutor(mod->exec.shared_module())};
  });
}

void kiln_context_free(kiln_context* ctx) { delete ctx; }

kiln_status kiln_context_set_input(kiln_context* ctx, const char* name, const DLTensor* value) {
  return set_input_by_name("kiln_context_set_input", ctx, "context", name, value);
}
kiln_status kiln_context_set_input_index(kiln_context* ctx, int32_t index, const DLTensor* value) {
  return set_input_by_index("kiln_context_set_input_index", ctx, "context", index, value);
}
kiln_status kiln_context_run(kiln_context* ctx) { return run("kiln_context_run", ctx, "context"); }
kiln_status kiln_context_get_output(const kiln_context* ctx, int32_t index, DLTensor* out) {
  return get_output("kiln_context_get_output", ctx, "context", index, out);
}
kiln_status kiln_context_get_output_view(const kiln_context* ctx, int32_t index, DLTensor* view) {
  return get_output_view("kiln_context_get_output_view", ctx, "context", index, view);
}

}  // extern "C"

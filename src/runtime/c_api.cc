// The C API (kiln_runtime.h) over GraphExecutor: every entry point catches everything, records
// the message for kiln_last_error() and returns a status; no exception crosses into C.
#include "kiln/runtime/kiln_runtime.h"

#include <new>
#include <string>

#include "kiln/runtime/graph_executor.h"

struct kiln_module {
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

// Runs f (which may throw) and turns what it throws into a status and a message prefixed by
// the API function's name.
template <typename F>
kiln_status guarded(const char* api, F&& f) {
  try {
    f();
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

void require(const void* p, const char* what) {
  if (p == nullptr) throw RuntimeError(ErrorKind::kInvalidArgument, std::string(what) + " is NULL");
}

void fill_info(const kiln::runtime::TensorInfo& t, kiln_tensor_info* info) {
  info->name = t.name.c_str();
  info->ndim = static_cast<int32_t>(t.shape.size());
  info->shape = t.shape.data();
  info->dtype = t.dtype;
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
  return guarded("kiln_module_set_input", [&] {
    require(mod, "module");
    require(name, "name");
    require(value, "value");
    mod->exec.set_input(std::string(name), *value);
  });
}

kiln_status kiln_module_set_input_index(kiln_module* mod, int32_t index, const DLTensor* value) {
  return guarded("kiln_module_set_input_index", [&] {
    require(mod, "module");
    require(value, "value");
    mod->exec.set_input(static_cast<int>(index), *value);
  });
}

kiln_status kiln_module_run(kiln_module* mod) {
  return guarded("kiln_module_run", [&] {
    require(mod, "module");
    mod->exec.run();
  });
}

kiln_status kiln_module_get_output(const kiln_module* mod, int32_t index, DLTensor* out) {
  return guarded("kiln_module_get_output", [&] {
    require(mod, "module");
    require(out, "out");
    mod->exec.get_output(index, *out);
  });
}

kiln_status kiln_module_get_output_view(const kiln_module* mod, int32_t index, DLTensor* view) {
  return guarded("kiln_module_get_output_view", [&] {
    require(mod, "module");
    require(view, "view");
    *view = mod->exec.output_view(index);
  });
}

}  // extern "C"

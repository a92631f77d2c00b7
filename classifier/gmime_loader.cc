// gmime_loader.cc: see gmime_loader.h. Opens GMime with dlopen(3) once per process.
#include "classifier/gmime_loader.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace bounced::dsn {
namespace {

struct Loaded {
  GMimeApi api;
  bool ok = false;
  std::string error;
};

std::once_flag load_once;

// Never destroyed: threads the program does not join (libmilter's) may still parse a message
// while it exits.
Loaded& State() {
  static Loaded* loaded = new Loaded;
  return *loaded;
}

void Load() {
  Loaded& s = State();
  // RTLD_LAZY, as the libraries a program links are bound: RTLD_NOW would resolve every symbol
  // the 15 libraries import (thousands) where a run calls a few hundred. The functions called
  // from here are looked up below, so a library without one fails here, not mid-message. The
  // handle is never closed (GMime keeps global state for the life of the process).
  void* handle = ::dlopen(BOUNCED_GMIME_SONAME, RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    s.error = std::string("cannot load GMime (" BOUNCED_GMIME_SONAME "): ") +
              (why != nullptr ? why : "unknown error");
    return;
  }
  // Each symbol is looked up in GMime and the libraries it depends on (GLib, GObject).
#define BOUNCED_GMIME_RESOLVE(name)                                                      \
  s.api.name = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name));              \
  if (s.api.name == nullptr) {                                                           \
    s.error = "cannot load GMime (" BOUNCED_GMIME_SONAME "): no symbol " #name " in it"; \
    return;                                                                              \
  }
  BOUNCED_GMIME_FUNCTIONS(BOUNCED_GMIME_RESOLVE)
#undef BOUNCED_GMIME_RESOLVE
  s.api.g_mime_init();
  s.ok = true;
}

}  // namespace

const GMimeApi* GMime() {
  std::call_once(load_once, Load);
  return State().ok ? &State().api : nullptr;
}

const char* GMimeLoadError() {
  std::call_once(load_once, Load);
  return State().error.c_str();
}

}  // namespace bounced::dsn

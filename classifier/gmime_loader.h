// gmime_loader.h: GMime 3, loaded when a message is first decoded, not when the program starts.
//
// GMime brings 15 shared libraries with it (GLib, GObject, GIO, GPGME, libidn2, ...), and
// loading them costs ~4 ms of every process start (bench/RESULTS.md): a third of a
// `bouncectl classify` or of a query to the daemon, which never decode MIME. So the classifier
// does not link GMime; ParseBounce opens it with dlopen(3) when it first needs it, once per
// process and thread-safe, and the classifier calls it through the table below. Private to the
// classifier. Debian's libgmime-3.0-0 provides the library (the bounced package depends on it
// by name: dpkg-shlibdeps cannot see a dlopen).
#pragma once

#include <gmime/gmime.h>

#include <stdexcept>

namespace bounced::dsn {

// The GMime, GObject and GLib functions the classifier calls, each under its own name.
#define BOUNCED_GMIME_FUNCTIONS(X)            \
  X(g_mime_init)                              \
  X(g_free)                                   \
  X(g_utf8_make_valid)                        \
  X(g_object_unref)                           \
  X(g_type_check_instance_is_a)               \
  X(g_mime_multipart_get_type)                \
  X(g_mime_message_part_get_type)             \
  X(g_mime_part_get_type)                     \
  X(g_mime_object_get_header_list)            \
  X(g_mime_header_list_get_count)             \
  X(g_mime_header_list_get_header_at)         \
  X(g_mime_header_get_name)                   \
  X(g_mime_header_get_value)                  \
  X(g_mime_object_get_content_type)           \
  X(g_mime_object_get_content_type_parameter) \
  X(g_mime_content_type_get_media_type)       \
  X(g_mime_content_type_get_media_subtype)    \
  X(g_mime_part_get_content)                  \
  X(g_mime_part_get_content_encoding)         \
  X(g_mime_data_wrapper_write_to_stream)      \
  X(g_mime_object_write_to_stream)            \
  X(g_mime_stream_mem_new)                    \
  X(g_mime_stream_mem_new_with_buffer)        \
  X(g_mime_stream_mem_get_byte_array)         \
  X(g_mime_multipart_get_count)               \
  X(g_mime_multipart_get_part)                \
  X(g_mime_multipart_get_epilogue)            \
  X(g_mime_message_part_get_message)          \
  X(g_mime_message_get_mime_part)             \
  X(g_mime_parser_new_with_stream)            \
  X(g_mime_parser_set_format)                 \
  X(g_mime_parser_construct_message)          \
  X(g_mime_charset_iconv_name)                \
  X(g_mime_utils_header_decode_text)          \
  X(g_mime_encoding_init_decode)              \
  X(g_mime_encoding_flush)                    \
  X(g_mime_encoding_quoted_decode_step)

struct GMimeApi {
#define BOUNCED_GMIME_MEMBER(name) decltype(&::name) name = nullptr;
  BOUNCED_GMIME_FUNCTIONS(BOUNCED_GMIME_MEMBER)
#undef BOUNCED_GMIME_MEMBER

  // Whether `obj` is an instance of `type` (GMIME_IS_PART and the like, without their link to
  // GObject's symbols).
  bool IsA(const void* obj, GType type) const {
    return obj != nullptr &&
           g_type_check_instance_is_a(static_cast<GTypeInstance*>(const_cast<void*>(obj)), type);
  }
};

// GMime, loaded and initialised (g_mime_init) on the first call; nullptr when it cannot be
// loaded, and then GMimeLoadError() says why. Thread-safe; later calls cost an atomic load.
const GMimeApi* GMime();
const char* GMimeLoadError();

// Thrown by the decoder when a message needs GMime and it cannot be loaded; ParseBounce turns it
// into the message's error. Never thrown once GMime() has succeeded.
struct GMimeUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace bounced::dsn

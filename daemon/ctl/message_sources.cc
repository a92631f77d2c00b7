// message_sources.cc: see message_sources.h.
#include "daemon/ctl/message_sources.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "classifier/dsn_parser.h"
#include "classifier/mbox.h"
#include "common/read_buffer.h"
#include "daemon/ctl/decompress.h"

namespace bounced::ctl {

std::vector<std::string> FolderFiles(const std::string& dir, std::error_code* ec) {
  namespace fs = std::filesystem;
  auto files_in = [ec](const fs::path& folder, std::vector<std::string>* out) {
    std::vector<std::string> names;
    for (fs::directory_iterator it(folder, *ec), end; !*ec && it != end; it.increment(*ec)) {
      std::string name = it->path().filename().string();
      std::error_code type_ec;
      if (name.empty() || name[0] == '.' || !it->is_regular_file(type_ec)) continue;
      names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) out->push_back((folder / name).string());
  };
  std::vector<std::string> files;
  std::error_code probe;
  const fs::path root(dir);
  const bool cur = fs::is_directory(root / "cur", probe);
  const bool fresh = fs::is_directory(root / "new", probe);
  if (cur || fresh) {
    if (cur) files_in(root / "cur", &files);
    if (fresh && !*ec) files_in(root / "new", &files);
  } else {
    files_in(root, &files);
  }
  return files;
}

bool IsFolder(const std::string& path) {
  std::error_code ec;
  return path != "-" && std::filesystem::is_directory(path, ec);
}

namespace {

void ReadMailbox(const std::string& file, const OnMessage& on_message,
                 const OnInputError& on_error) {
  std::string error;
  DecompressedInput input(file, &error);
  if (!error.empty()) {
    on_error(file, error);
    return;
  }
  MboxSplitter splitter(kMaxMessageBytes + 1);  // the byte after the limit: see message_sources.h
  const MboxSplitter::OnMessage each = [&](std::string_view m, bool) {
    on_message(file, splitter.messages(), m);  // counts this one already
  };
  std::vector<char> block(size_t{1} << 20);
  int saved = 0;
  bool first = true;
  for (;;) {
    const ssize_t n = ::read(input.fd(), block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) saved = errno;
    if (n <= 0) break;
    if (first) {
      first = false;
      if (std::string refused = input.Refused(block.data(), static_cast<size_t>(n));
          !refused.empty()) {
        on_error(file, refused);
        return;
      }
    }
    splitter.Push(std::string_view(block.data(), static_cast<size_t>(n)), each);
  }
  const std::string failure = input.Finish(saved == 0);
  splitter.Finish(each);
  if (saved != 0) on_error(file, "cannot read " + input.name() + ": " + std::strerror(saved));
  if (!failure.empty()) on_error(file, failure);
}

void ReadFile(const std::string& file, PageBuffer* buffer, const OnMessage& on_message,
              const OnInputError& on_error) {
  std::string error;
  DecompressedInput input(file, &error);
  if (!error.empty()) {
    on_error(file, error);
    return;
  }
  size_t size = 0;
  const int saved = ReadToEnd(input.fd(), buffer, kMaxMessageBytes + 1, &size);
  // More than the parser reads: the rest is not read, and the decompressor may die of that.
  const std::string failure = input.Finish(saved == 0 && size <= kMaxMessageBytes);
  if (saved != 0 || !failure.empty()) {
    on_error(file,
             saved != 0 ? "cannot read " + input.name() + ": " + std::strerror(saved) : failure);
    return;
  }
  if (std::string refused = input.Refused(buffer->data(), size); !refused.empty()) {
    on_error(file, refused);
    return;
  }
  on_message(file, 0, std::string_view(buffer->data(), size));
}

}  // namespace

void ForEachMessage(const std::vector<std::string>& inputs, bool mbox, const OnMessage& on_message,
                    const OnInputError& on_error) {
  PageBuffer buffer;
  for (const std::string& input : inputs) {
    if (mbox) {
      ReadMailbox(input, on_message, on_error);
    } else if (IsFolder(input)) {
      std::error_code ec;
      const std::vector<std::string> files = FolderFiles(input, &ec);
      if (ec) {
        on_error(input, "cannot list folder " + input + ": " + ec.message());
        continue;
      }
      for (const std::string& f : files) ReadFile(f, &buffer, on_message, on_error);
    } else {
      ReadFile(input, &buffer, on_message, on_error);
    }
  }
}

}  // namespace bounced::ctl

// message_sources.h: the messages a bouncectl command line names (parse, ingest-dsn): files,
// folders and, with --mbox, Unix mailboxes.
//
// A folder stands for its messages: a Maildir's (a folder with cur/ or new/: the files of cur/,
// then of new/, each in name order, which is delivery order), or else the folder's own files in
// name order. Names starting with '.' are skipped, as Maildir readers skip them, and so are
// sub-folders (and tmp/, where messages are still being written). A mailbox is read in blocks
// and split as it streams (classifier/mbox.h), so it may be of any size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace bounced::ctl {

// The files of a folder, in the order above; *ec set when it cannot be listed.
std::vector<std::string> FolderFiles(const std::string& dir, std::error_code* ec);

// Whether `path` names a folder ("-" never does).
bool IsFolder(const std::string& path);

// One message: the file (or mailbox) it came from, its position in the mailbox (1 for the first;
// 0 for a file), and its bytes (at most kMaxMessageBytes + 1: the parser reads no further, and
// warns that it cut a message that has the byte after).
using OnMessage =
    std::function<void(const std::string& file, uint64_t number, std::string_view bytes)>;
// An input that could not be read (or listed), with a sentence saying why.
using OnInputError = std::function<void(const std::string& file, const std::string& error)>;

// Every message `inputs` name, in order: files ("-": stdin) and folders' files, or, when
// `mbox`, every message of every mailbox ("-": stdin). A mailbox's read error comes after the
// messages read before it.
void ForEachMessage(const std::vector<std::string>& inputs, bool mbox, const OnMessage& on_message,
                    const OnInputError& on_error);

}  // namespace bounced::ctl

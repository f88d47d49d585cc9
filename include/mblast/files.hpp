#pragma once
// Whole files in and out, for every layer: a read that says when the file cannot be opened, and
// writes that never leave a torn file where a reader looks (a sibling unique to the process and
// the call is written, then renamed over the target, so concurrent writers of one path are safe).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace mblast {

// The file's bytes; nullopt when it cannot be opened or read.
std::optional<std::string> read_file(const std::filesystem::path& path);

// The file's bytes; throws input_error naming `what` ("candidate", "problem") when it cannot be
// read: for files the user named.
std::string read_input_file(const std::filesystem::path& path, std::string_view what);

// "<path>.tmp-<pid>-<salt>-<count>": a name beside `path` that no other process or call uses.
std::filesystem::path temporary_sibling(const std::filesystem::path& path);

// `data` written to a temporary sibling of `path`, synced to disk, then renamed over it. On failure
// the sibling is removed, `path` is left as it was, and the error says why.
std::error_code write_file_atomically(const std::filesystem::path& path, std::string_view data);

// The same for a copy of the file `source` (the folders above `target` are created).
std::error_code copy_file_atomically(const std::filesystem::path& source,
                                     const std::filesystem::path& target);

}  // namespace mblast

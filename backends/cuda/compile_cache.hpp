#pragma once
// Inductor's and Triton's caches, shared between the workers of one problem (issue 21, item 4).
//
// Every worker starts in an empty scratch folder, so every torch.compile in a candidate compiled
// from nothing. The driver keeps one folder per problem; before a request it copies that folder
// into the worker's scratch (a private copy: what a candidate writes there reaches no one), and
// after a trusted candidate's request (a built-in of mblast over the problem's own code, never
// code an LLM wrote) it copies what that worker added back. Both caches are keyed by content
// (the graph, the kernel source, the versions), so a hit is the same artifact compiled again.
//
// Their entries hold absolute paths into the cache that made them (Inductor's generated code
// names the files where its kernels' autotuning results go), so a copy only works where every
// worker sees its cache at one path: in the bwrap sandbox, each worker's copy is mounted at
// compile_cache_mount_point. Without bwrap a worker's caches start empty and nothing is shared
// (a kernel would write into a folder of a worker long gone).
#include <cstdint>
#include <filesystem>
#include <string>

namespace mblast {

// The worker's caches, below its scratch folder: TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR.
std::filesystem::path worker_compile_cache(const std::filesystem::path& scratch);
std::filesystem::path inductor_cache_dir(const std::filesystem::path& compile_cache);
std::filesystem::path triton_cache_dir(const std::filesystem::path& compile_cache);

// Where every sandboxed worker sees its own copy of the caches: an empty folder in the system's
// temporary folder, one per user, never written on the host (bwrap mounts each worker's copy over
// it, in the worker's own mount namespace).
std::filesystem::path compile_cache_mount_point();
// Creates the mount point if missing; false (and why, in the log) when it is not a folder of
// ours, so that a link someone else put there is never mounted over.
bool prepare_compile_cache_mount_point(const std::filesystem::path& mount_point);

// A candidate file's text, hashed: the key of the texts whose caches are trusted, and of a
// prebuild's evaluation ahead (primer.hpp). An unreadable file has the empty text's key.
std::string candidate_text_key(const std::filesystem::path& candidate);

// The shared folder of `problem` (a file, or a SOL problem folder) under mblast's cache.
std::filesystem::path problem_compile_cache(const std::filesystem::path& cache_dir,
                                            const std::filesystem::path& problem);

// Copies the regular files of `from` that `to` lacks, each written under a temporary name and
// renamed, so that concurrent readers never see half a file. Links and other special files are
// skipped. Stops adding once `to` would exceed `max_bytes`. Returns the bytes copied; never throws
// (a cache that cannot be filled only costs compile time).
std::uintmax_t copy_missing_files(const std::filesystem::path& from,
                                  const std::filesystem::path& to, std::uintmax_t max_bytes);

// A problem's shared folder grows to this at most (Triton's and Inductor's artifacts of a large
// level-3 model are a few MB).
inline constexpr std::uintmax_t kCompileCacheMaxBytes = 512ull << 20;

}  // namespace mblast

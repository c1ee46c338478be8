// Files that must survive a crash whole or not at all (checkpoints, parameter dumps, timelines):
// written to a temporary file, fsynced, renamed over the final name and the folder fsynced (a
// failed write leaves no file behind); read back whole; CRC32 (zlib).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/status.h"

namespace psrt {

uint32_t crc32_of(std::span<const uint8_t> bytes);
// Errors read "PATH: what: strerror".
Status write_durably(const std::string& path, std::span<const uint8_t> bytes);
// The same for a file made of `parts` one after the other (no copy gathers them first).
Status write_durably(const std::string& path, std::span<const std::span<const uint8_t>> parts);
// `parts` to `path` as a tool's output: a regular file (or none yet) whole or not at all
// (write_durably); a descriptor the path names (/dev/stdout, /dev/stderr, /dev/fd/N,
// /proc/self/fd/N) written in place; a FIFO, a terminal or another device as a stream.
Status write_output(const std::string& path, std::span<const std::span<const uint8_t>> parts);
// Writes all of `parts` to `fd` (a file, a pipe, a device), retrying short writes; an error
// names `path` and the system's reason. No fsync, no rename: write_durably for files.
Status write_fully(int fd, std::span<const std::span<const uint8_t>> parts,
                   const std::string& path);
// Reads up to `size` bytes of `fd` at `dst`, retrying short reads; returns how many (fewer at its
// end), -1 on an error (errno says which).
ssize_t read_fully(int fd, uint8_t* dst, std::size_t size);
// fsyncs the folder that holds `path`: a rename or a new file there is durable once it is.
Status sync_folder_of(const std::string& path);
// The whole regular file; an error for anything else. With `magic`, a file that does not start
// with it is not read further: its first bytes only come back (the caller's own check of the magic
// then refuses it). A 1 GB file named like a checkpoint was read whole, byte by byte, before its
// 8-byte header was looked at: 21 s and 1 GB of memory before the server listened.
Result<std::vector<uint8_t>> read_whole_file(const std::string& path, std::string_view magic = {});

// Where `path` leads through its symbolic links, link by link, to a target that may not exist yet
// (`path` itself when it is no link); an error for a loop or a link that cannot be read.
Result<std::string> follow_links(const std::string& path);
// Makes the folder `dir` and its parents, through a symbolic link to a folder not made yet
// (std::filesystem::create_directories failed there with "File exists"); the error, if any.
std::error_code make_folder(const std::string& dir);

// Checkpoint file names: DIR/JOB-ROLE-RANK-ITERATION.ckpt, JOB being job.id with bytes other than
// letters, digits, '.', '_' and '-' as '_' (and then '~' and the CRC32 of job.id in hex, so that
// ids differing only there get files of their own), the iteration zero-padded so that names sort
// by it. Jobs sharing a folder do not touch each other's files.
// job.id as a part of a file name: the JOB above.
std::string file_safe_id(const std::string& job_id);
std::string checkpoint_file(const std::string& dir, const std::string& job_id,
                            const std::string& role, uint32_t rank, uint64_t iteration);
// That job's ROLE RANK checkpoint files in `dir` by iteration, from their names only.
std::map<uint64_t, std::string> list_checkpoint_files(const std::string& dir,
                                                      const std::string& job_id,
                                                      const std::string& role, uint32_t rank);
// Removes all but the `keep` newest of `files` (a list_checkpoint_files result) and, with
// `every` > 0, the kEveryKept newest whose iterations are multiples of `every` (checkpoint.every:
// the iterations every process writes, where those written on a server's own clock are not).
constexpr std::size_t kEveryKept = 4;
void keep_newest_checkpoints(const std::map<uint64_t, std::string>& files, int keep,
                             uint64_t every = 0);
// Removes that job's ROLE RANK checkpoint writes that never finished (a process killed while
// writing leaves NAME.ckpt.tmp, which no listing, prune or fresh start saw). Call once the
// coordinator has accepted the process: the rank is then its own. Returns how many went.
std::size_t remove_unfinished_checkpoints(const std::string& dir, const std::string& job_id,
                                          const std::string& role, uint32_t rank);
// A fresh start's removal of an earlier run's `files` (`who`: "server 1"); `files` is left empty.
// Returns the line that says so (empty when there were none), for the caller's log.
std::string remove_earlier_run(std::map<uint64_t, std::string>& files, const std::string& who,
                               const std::string& dir);

}  // namespace psrt

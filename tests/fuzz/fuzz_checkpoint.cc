// libFuzzer: a checkpoint file's bytes through decode_checkpoint (server/checkpoint_file.h),
// which a server reads with --resume. It must reject or return a snapshot whose every chunk holds
// what its header says; re-encoding an accepted snapshot gives the same bytes back (a file of
// the earlier format version 1: bytes that read back as the same snapshot).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "server/checkpoint_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  auto s = psrt::decode_checkpoint(bytes, "fuzz.ckpt");
  if (!s) {
    if (s.status().message().empty()) __builtin_trap();  // a rejection must say why
    return 0;
  }
  for (const auto& c : s->chunks) {
    if (c.params.size() != c.length || c.opt.m.size() > c.length || c.opt.v.size() > c.length ||
        c.published.size() > c.length) {
      __builtin_trap();
    }
  }
  uint32_t version = 0;
  std::memcpy(&version, data + 8, 4);  // accepted: the magic and the version are there
  const auto again = psrt::encode_checkpoint(*s);
  if (version == psrt::kCheckpointVersion && again != bytes) __builtin_trap();
  auto back = psrt::decode_checkpoint(again, "again.ckpt");
  if (!back || back->chunks.size() != s->chunks.size() || back->job_id != s->job_id) {
    __builtin_trap();
  }
  return 0;
}

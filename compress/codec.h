// The codec interface: a worker encodes one chunk of a tensor (with that tensor's state) into a
// payload; a server decodes-and-accumulates payloads into a dense float buffer. A payload is a
// single byte buffer, sent as one raw frame, that decodes alone (see wire_format.h). Decoding
// validates everything and returns a Status: a peer can send any bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "compress/moments.h"
#include "core/byte_io.h"
#include "core/status.h"

namespace psrt::compress {

// Codec id carried in the payload header (and in the message header).
enum class CodecId : uint8_t { kNone = 0, kLaco = 1, kSignSgd = 2, kGradDrop = 3, kTopK = 4 };
inline constexpr uint8_t kMaxCodecId = 4;

std::string_view codec_name(CodecId id);  // "none", "laco", "signsgd", "graddrop", "topk"

// What a codec knows about the tensor whose chunks it encodes.
struct TensorInfo {
  int64_t num_elements = 0;  // of the whole tensor
  int layer = 0;             // depth: forward-order index, 0 = input side
  int num_layers = 1;        // of the model
};

// One chunk to encode: a contiguous slice [offset, offset + values.size()) of the tensor.
struct ChunkInput {
  int64_t offset = 0;
  std::span<const float> values;
  int64_t iteration = 0;  // training iteration, from 0; drives calibration and warm-up
  // chunk_moments(values), when the caller computed them on the way (error feedback does, in its
  // pass that adds the residual); codecs that need them then skip a pass. Null: not known.
  const ChunkMoments* moments = nullptr;
  // Optional: what LACO selects by, element for element beside `values` (which it sends); its
  // moments are then `moments`. Empty: `values` themselves.
  std::span<const float> select = {};
};

// Per-tensor state owned by the caller, made by the codec that uses it.
class CodecState {
 public:
  virtual ~CodecState() = default;
};

// Counters a state can report (for tests, logs and benchmarks).
struct EncodeStats {
  int64_t elements = 0;  // input elements encoded so far
  int64_t sent = 0;      // of which were sent (non-zero in the payload)
  int64_t bytes = 0;     // payload bytes produced
};

class Codec {
 public:
  virtual ~Codec() = default;
  virtual CodecId id() const = 0;
  virtual std::string_view name() const = 0;

  virtual std::unique_ptr<CodecState> make_state(const TensorInfo& info) const = 0;

  // Encodes one chunk; `payload` is replaced (its capacity is reused). Errors: a chunk outside
  // the tensor, a state made by another codec, a chunk over 2^32-1 elements.
  virtual Status encode(CodecState& state, const ChunkInput& chunk,
                        std::vector<uint8_t>& payload) const = 0;

  // out[i] += weight * decoded[i] for the chunk the payload holds; out.size() must equal the
  // chunk's length. On an error `out` is left untouched.
  virtual Status decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                                   float weight = 1.0f) const = 0;

  // out[i] += weight * (what the encoder sent): the value the error-feedback residual subtracts.
  // The same as decode_accumulate except where the server aggregates differently (signSGD's
  // majority vote accumulates votes).
  virtual Status accumulate_sent(std::span<const uint8_t> payload, std::span<float> out,
                                 float weight) const {
    return decode_accumulate(payload, out, weight);
  }

  // residual -= what the last encode() with `state` sent, `payload` being that encode's output:
  // what error feedback does after each encode. The same values, bit for bit, as
  // accumulate_sent(payload, residual, -1); a codec may override it with a faster path (LACO
  // reuses the indices and codes it just computed instead of parsing the payload again).
  virtual Status subtract_sent(const CodecState& /*state*/, std::span<const uint8_t> payload,
                               std::span<float> residual) const {
    return accumulate_sent(payload, residual, -1.0f);
  }

  // Called by the server once all payloads for a chunk were accumulated (signSGD's majority vote
  // turns the vote sum into signs here). Default: nothing.
  virtual void finish_aggregate(std::span<float> sum, int num_payloads) const;

  // out = decoded (zero-filled, then accumulated).
  Status decode(std::span<const uint8_t> payload, std::span<float> out) const;

  // Counters of a state made by this codec.
  virtual EncodeStats stats(const CodecState& state) const = 0;

  // Checkpoints: what `state` carries from one encode to the next (residuals, momentum, LACO's
  // calibration), without scratch or counters. load_state() restores it into a state this codec
  // made for the same tensor; an error (and the state unusable) when the bytes do not fit it.
  // Default: nothing to carry.
  virtual void save_state(const CodecState& /*state*/, ByteWriter& /*out*/) const {}
  virtual Status load_state(CodecState& /*state*/, ByteReader& /*in*/) const {
    return Status::ok();
  }
};

}  // namespace psrt::compress
